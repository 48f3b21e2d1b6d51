package analysis_test

import (
	"path/filepath"
	"testing"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/record"
)

// TestCheckFailures: the check column is counted per check, per period,
// through the fast column reader; attempts without a failed check add
// nothing, and records that predate the column have no check_failures.
func TestCheckFailures(t *testing.T) {
	dir := t.TempDir()
	w, err := record.CreateParquet(filepath.Join(dir, record.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		r := record.Request{StartS: float64(i) * 0.01, LatencyS: 0.002, Outcome: record.OK, Node: 1, Status: 200, Target: "/a"}
		switch i % 10 {
		case 3:
			r.Outcome, r.Status, r.Check = record.HTTPError, 503, "create: status"
		case 7:
			r.Outcome, r.Check = record.DataError, "create: json:$.id"
		}
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	sum, err := analysis.Analyze(dir, analysis.Options{Complete: true})
	if err != nil {
		t.Fatal(err)
	}
	got := sum.Overall.CheckFailures
	if got["create: status"] != 300 || got["create: json:$.id"] != 300 || len(got) != 2 {
		t.Fatalf("check_failures %v, want 300 of each", got)
	}
	if sum.Overall.Outcomes["http_error"] != 300 || sum.Overall.Outcomes["data_error"] != 300 {
		t.Fatalf("outcomes %v", sum.Overall.Outcomes)
	}
}
