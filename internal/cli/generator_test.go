package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/runner"
)

// TestConsoleShowsTheGeneratorApart: the analyze table and the run summary
// print the generator's refusals, cut-short attempts, send lag and invalid
// windows on lines of their own, and warn when windows were invalid; the
// service's attempts are never the arrivals.
func TestConsoleShowsTheGeneratorApart(t *testing.T) {
	m := analysis.Metrics{Attempts: 900, Arrivals: 1000, GenRefused: 70, CutShort: 30,
		GenRefusedBy: map[string]int64{"max_in_flight": 60, "no_conn": 10, "no_user": 0},
		SendLagP99S:  0.25, SendLagMaxS: 1.5, InvalidWindows: 3,
		Goodput: 0.9, LatencyMeanS: 0.01, LatencyP99S: 0.1, Outcomes: map[string]int64{}, PExceed: map[string]analysis.Float{}}
	clean := analysis.Metrics{Attempts: 500, Arrivals: 500, GenRefusedBy: map[string]int64{}, Outcomes: map[string]int64{}, PExceed: map[string]analysis.Float{}}
	s := &analysis.Summary{Complete: true, Run: analysis.RunInfo{Name: "gen", DurationS: 60, Attempts: 900},
		Overall: m, Phases: map[string]analysis.Metrics{"warmup": clean}, PhaseOrder: []string{"warmup"}}

	var b bytes.Buffer
	printAnalysis(&b, s)
	out := b.String()
	for _, want := range []string{
		"the generator's own account",
		"refused by reason: max_in_flight 60, no_conn 10\n",
		"warning: 3 window(s) are not a valid measurement of the service",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("analyze output lacks %q:\n%s", want, out)
		}
	}
	gen := out[strings.Index(out, "the generator's own account"):]
	var overall string
	for _, l := range strings.Split(gen, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "overall" {
			overall = strings.Join(f, " ")
		}
	}
	if overall != "overall 1000 70 30 250ms 1.5s 3" {
		t.Errorf("generator table overall row %q, want arrivals 1000, refused 70, cut short 30, lag 250ms/1.5s, 3 invalid", overall)
	}

	b.Reset()
	printRunSummary(&b, &runner.Result{Dir: "/tmp/x", Summary: s})
	out = b.String()
	if !strings.Contains(out, "gen: 900 attempts") ||
		!strings.Contains(out, "generator: 1000 arrivals, refused 70 (max_in_flight 60, no_conn 10), cut short 30, send lag p99 250ms, 3 invalid window(s)") ||
		!strings.Contains(out, "warning: 3 window(s)") {
		t.Errorf("run summary does not show the generator apart:\n%s", out)
	}

	// Every window valid: no warning.
	s.Overall = clean
	b.Reset()
	printRunSummary(&b, &runner.Result{Dir: "/tmp/x", Summary: s})
	if strings.Contains(b.String(), "warning") || !strings.Contains(b.String(), "0 invalid window(s)") {
		t.Errorf("clean run summary:\n%s", b.String())
	}
}
