package analysis_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/kvcheck"
	"github.com/faultbench/faultbench/internal/record"
)

// A results directory with a kv history gets summary.json's kv section:
// the checker's counts in total, per fault span and per window, and a note.
func TestKVSection(t *testing.T) {
	dir := t.TempDir()
	reqs := strings.Join(record.Columns, ",") + "\n0.5,0.01,ok,1,0,10,200,put\n6,0.01,ok,1,0,10,200,get\n7,0.01,data_error,1,0,10,200,get\n8,0.01,data_error,1,0,10,200,get\n"
	events := `{"t_s":5,"kind":"fault.inject","node":1,"fault":"app-crash","id":1}` + "\n" + `{"t_s":9,"kind":"fault.clear","node":1,"fault":"app-crash","id":1}` + "\n"
	hist := kvcheck.HistoryHeader + "\n" +
		"0.5,0.51,0,0,1,put,1,acked\n" +
		"6,6.01,0,0,1,get,1,found\n" +
		"7,7.01,0,0,1,get,0,missing\n" + // stale, then missed again by the next read: lost
		"8,8.01,0,0,1,get,0,missing\n" // stale, with no later read
	for name, body := range map[string]string{record.RequestsCSV: reqs, record.EventsFile: events, kvcheck.HistoryFile: hist} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sum, js := analyzeJSON(t, dir, analysis.Options{Complete: true})
	kv := sum.KV
	if kv == nil {
		t.Fatalf("no kv section:\n%s", js)
	}
	want := kvcheck.Counts{Reads: 3, OK: 1, Stale: 1, Lost: 1, WritesAcked: 1}
	if kv.Total != want {
		t.Errorf("total %+v, want %+v", kv.Total, want)
	}
	if len(kv.Faults) != 1 || kv.Faults[0].Reads != 3 || kv.Faults[0].Lost != 1 {
		t.Errorf("faults %+v, want the three reads in the crash's span", kv.Faults)
	}
	if len(kv.Windows) < 2 || kv.Windows[1].Lost != 1 || kv.Windows[1].Stale != 1 || kv.Windows[0].WritesAcked != 1 {
		t.Errorf("windows %+v", kv.Windows)
	}
	if !strings.Contains(js, `"kv":`) || !strings.Contains(strings.Join(sum.Notes, " "), "1 stale, 1 lost and 0 phantom") {
		t.Errorf("summary lacks the kv key or its note: notes %q", sum.Notes)
	}

	// A malformed history is bad input naming its line.
	os.WriteFile(filepath.Join(dir, kvcheck.HistoryFile), []byte(kvcheck.HistoryHeader+"\n0,1,0,0,1,del,1,acked\n"), 0o644)
	_, err := analysis.Analyze(dir, analysis.Options{Complete: true})
	if !errors.Is(err, analysis.ErrBadInput) || !strings.Contains(err.Error(), "kv-history.csv:2") {
		t.Errorf("malformed history: %v", err)
	}
}
