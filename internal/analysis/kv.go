package analysis

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/faultbench/faultbench/internal/kvcheck"
)

// KVSummary is summary.json's "kv" section: the kv driver's reads as the
// read-your-writes checker (kvcheck) classified them, replaying
// kv-history.csv. Absent when the run has no kv history.
type KVSummary struct {
	Checks string         `json:"checks"` // the guarantees checked, in words
	Total  kvcheck.Counts `json:"total"`
	// Faults count the reads that started in each fault's span, from its
	// injection to the next fault's (or the run's end), in the order of
	// summary.json's faults.
	Faults []KVFault `json:"faults"`
	// Windows count the reads of every window, in order from t=0.
	Windows []KVWindow `json:"windows"`
}

// KVFault is one fault's reads.
type KVFault struct {
	Type    string  `json:"type"`
	Node    int     `json:"node"`
	InjectS float64 `json:"inject_s"`
	SpanEnd float64 `json:"span_end_s"`
	kvcheck.Counts
}

// KVWindow is one window's reads.
type KVWindow struct {
	StartS float64 `json:"t_start_s"`
	kvcheck.Counts
}

const kvChecks = "read-your-writes and monotonic reads, per user on the user's own keys; not linearizability (docs/real-services.md)"

// kvFromHistory replays DIR/kv-history.csv; nil, nil when there is none.
func kvFromHistory(dir string, w, runEnd float64, injections []injection) (*KVSummary, error) {
	path := filepath.Join(dir, kvcheck.HistoryFile)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	spans := make([]kvcheck.Span, len(injections))
	for i, in := range injections {
		end := runEnd
		if i+1 < len(injections) {
			end = math.Max(in.inject, injections[i+1].inject)
		}
		spans[i] = kvcheck.Span{StartS: in.inject, EndS: end}
	}
	c, err := kvcheck.New(kvcheck.Config{WindowS: w, Spans: spans})
	if err != nil {
		return nil, err
	}
	if err := kvcheck.ReadHistory(f, path, c.Add); err != nil {
		return nil, badInput(err)
	}
	rep := c.Close()
	s := &KVSummary{Checks: kvChecks, Total: rep.Total, Faults: []KVFault{}, Windows: []KVWindow{}}
	for i, in := range injections {
		s.Faults = append(s.Faults, KVFault{Type: in.kind, Node: in.node, InjectS: in.inject, SpanEnd: spans[i].EndS, Counts: rep.Spans[i]})
	}
	n := max(len(rep.Windows), int(math.Ceil(runEnd/w-1e-9)))
	for i := range n {
		kw := KVWindow{StartS: float64(i) * w}
		if i < len(rep.Windows) {
			kw.Counts = rep.Windows[i]
		}
		s.Windows = append(s.Windows, kw)
	}
	return s, nil
}

// kvNote is the summary's note on a kv run's anomalies; "" when none.
func kvNote(s *KVSummary) string {
	if s == nil || s.Total.Anomalies() == 0 {
		return ""
	}
	return fmt.Sprintf("the read-your-writes checker found %d stale, %d lost and %d phantom read(s) of %d (kv section)",
		s.Total.Stale, s.Total.Lost, s.Total.Phantom, s.Total.Reads)
}
