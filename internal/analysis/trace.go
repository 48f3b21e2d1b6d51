package analysis

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/faultbench/faultbench/internal/record"
)

// TraceInfo is what the run's access-log replay left out: the malformed
// lines of a Common Log Format trace, skipped and counted when the trace
// was read (workload.ReadCLF). The runner records them as one
// workload.clf_skipped event; analysis reads it back from events.jsonl.
type TraceInfo struct {
	// CLFSkippedLines counts the malformed lines skipped.
	CLFSkippedLines int `json:"clf_skipped_lines"`
	// Lines is the number of non-blank lines the trace had; 0 when the
	// event did not say.
	Lines int `json:"lines,omitempty"`
	// FirstLines are the line numbers of the first skipped lines (at most
	// ten, as the event lists them).
	FirstLines []int `json:"first_lines"`
	// Detail is the event's own sentence, with the first line's reason.
	Detail string `json:"detail"`
}

// clfSkipped parses the event detail the runner writes,
// "clf_skipped_lines=N: N of L lines malformed and skipped (line 7, 30, ...; line 7: reason)".
var (
	clfSkippedCount = regexp.MustCompile(`^clf_skipped_lines=(\d+)`)
	clfSkippedLines = regexp.MustCompile(`(\d+) of (\d+) lines malformed and skipped \(line ([0-9, ]+)`)
)

// traceFromEvents is the trace section of summary.json: nil when no
// workload.clf_skipped event was recorded (no trace, or a clean one).
// Several events (one per trace) are added up.
func traceFromEvents(events []record.Event) *TraceInfo {
	var t *TraceInfo
	for _, e := range events {
		if e.Kind != "workload.clf_skipped" {
			continue
		}
		if t == nil {
			t = &TraceInfo{FirstLines: []int{}}
		}
		n := 0
		if m := clfSkippedCount.FindStringSubmatch(e.Detail); m != nil {
			n, _ = strconv.Atoi(m[1])
		}
		if m := clfSkippedLines.FindStringSubmatch(e.Detail); m != nil {
			if n == 0 {
				n, _ = strconv.Atoi(m[1])
			}
			lines, _ := strconv.Atoi(m[2])
			t.Lines += lines
			for _, f := range strings.Split(m[3], ",") {
				if v, err := strconv.Atoi(strings.TrimSpace(f)); err == nil {
					t.FirstLines = append(t.FirstLines, v)
				}
			}
		}
		t.CLFSkippedLines += n
		detail := e.Detail
		if i := strings.Index(detail, ": "); i >= 0 && strings.HasPrefix(detail, "clf_skipped_lines=") {
			detail = detail[i+2:]
		}
		if t.Detail != "" {
			t.Detail += "; "
		}
		t.Detail += detail
	}
	return t
}
