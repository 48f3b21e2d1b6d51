package report

import (
	"testing"

	"github.com/faultbench/faultbench/internal/analysis"
)

func TestCheckTable(t *testing.T) {
	s := &analysis.Summary{
		Overall: analysis.Metrics{CheckFailures: map[string]int64{"create: status": 5, "read: json:$.v": 2}},
		Phases: map[string]analysis.Metrics{
			"warmup": {},
			"fault":  {CheckFailures: map[string]int64{"create: status": 5, "read: json:$.v": 2}},
		},
	}
	r := &run{Label: "x", Summary: s, Periods: []period{{Name: "warmup"}, {Name: "fault"}, {Name: periodOverall}}}
	tb, ok := checkTable(r)
	if !ok {
		t.Fatal("no table for a run with failed checks")
	}
	want := [][]string{{"create: status", "0", "5", "5"}, {"read: json:$.v", "0", "2", "2"}}
	if len(tb.Rows) != 2 || len(tb.Head) != 4 {
		t.Fatalf("table %+v", tb)
	}
	for i := range want {
		for j := range want[i] {
			if tb.Rows[i][j] != want[i][j] {
				t.Fatalf("row %d: %v, want %v", i, tb.Rows[i], want[i])
			}
		}
	}
	r.Summary = &analysis.Summary{Phases: map[string]analysis.Metrics{"warmup": {}}}
	if _, ok := checkTable(r); ok {
		t.Fatal("a table for a run without failed checks")
	}
}
