package analysis

import (
	"slices"
	"testing"

	"github.com/faultbench/faultbench/internal/record"
)

func TestTraceFromEvents(t *testing.T) {
	if got := traceFromEvents([]record.Event{{Kind: "node.up"}}); got != nil {
		t.Fatalf("no clf_skipped event: got %+v, want nil", got)
	}
	ev := []record.Event{
		{Kind: "node.up"},
		{Kind: "workload.clf_skipped", Detail: "clf_skipped_lines=12: 12 of 60 lines malformed and skipped (line 3, 4, 9, 10, 11, 12, 13, 14, 15, 16, ...; line 3: no quoted request)"},
	}
	got := traceFromEvents(ev)
	if got == nil {
		t.Fatal("clf_skipped event not read")
	}
	if got.CLFSkippedLines != 12 || got.Lines != 60 || !slices.Equal(got.FirstLines, []int{3, 4, 9, 10, 11, 12, 13, 14, 15, 16}) {
		t.Errorf("got %+v", got)
	}
	if got.Detail != "12 of 60 lines malformed and skipped (line 3, 4, 9, 10, 11, 12, 13, 14, 15, 16, ...; line 3: no quoted request)" {
		t.Errorf("detail %q", got.Detail)
	}
}
