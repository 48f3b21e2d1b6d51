package cli

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/record"
)

// guardTestPort keeps this end-to-end run apart from the other press tests.
const guardTestPort = 31480

// examples/guarded-app-hang.yaml stops itself: the guard fires on the
// app-hang (live, on the oldest attempt in flight), every fault is
// reverted, the abort is recorded in events.jsonl and summary.json, the
// report says so, and the run exits 3 — well before the scenario's end.
func TestGuardedAppHangStopsItself(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run; skipped with -short")
	}
	body, err := os.ReadFile("../../examples/guarded-app-hang.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(body), "\n  nodes: 4", fmt.Sprintf("\n  nodes: 4\n  port: %d", guardTestPort), 1)
	text = strings.Replace(text, "\n  rate: 300\n", "\n  rate: 150\n", 1)
	p := writeScenario(t, text)
	dir := filepath.Join(t.TempDir(), "out")
	linesPath := filepath.Join(t.TempDir(), "live.jsonl")
	stdout, stderr, code := run(t, "run", p, "--time-scale", "0.2", "--quiet", "-o", dir, "--live", linesPath)
	if code != ExitThreshold {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, ExitThreshold, stdout, stderr)
	}
	if !strings.Contains(stderr, "aborted: guard") {
		t.Errorf("stderr does not say why it stopped: %s", stderr)
	}
	events, err := record.ReadEvents(filepath.Join(dir, record.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	var abortS, injectS, clearS float64 = -1, -1, -1
	for _, e := range events {
		switch e.Kind {
		case "abort":
			abortS = e.TS
		case "fault.inject":
			injectS = e.TS
		case "fault.clear":
			clearS = e.TS
		}
	}
	if abortS < 0 || injectS < 0 || clearS < 0 {
		t.Fatalf("events: abort %v, inject %v, clear %v: want all three", abortS, injectS, clearS)
	}
	// The hang was planned for 24 s (120 s scaled); the guard cut it.
	if clearS < abortS || clearS > injectS+20 {
		t.Errorf("fault injected at %.2f s, cleared at %.2f s, abort at %.2f s: want the clear at the abort, not at the planned end", injectS, clearS, abortS)
	}
	sum := readSummary(t, dir)
	if sum.Aborted == nil || !strings.HasPrefix(sum.Aborted.By, "inflight_age") || sum.Aborted.AtS != abortS {
		t.Errorf("summary aborted %+v: want the inflight_age rule at %.3f s", sum.Aborted, abortS)
	}
	if sum.Complete || !strings.Contains(sum.IncompleteReason, "guard") {
		t.Errorf("complete %v, reason %q: want incomplete, stopped by the guard", sum.Complete, sum.IncompleteReason)
	}
	// Cooldown 6 s (30 s scaled) after the abort, far short of 40 s.
	if d := sum.Run.DurationS; d > abortS+6+1 || d < abortS+6-1 {
		t.Errorf("run lasted %.2f s: want the abort (%.2f s) plus the 6 s cooldown", d, abortS)
	}
	report, _ := os.ReadFile(filepath.Join(dir, record.ReportFile))
	if !strings.Contains(string(report), "stopped by the steady-state guard") {
		t.Error("report.html does not say the guard stopped the run")
	}
	lines, _ := os.ReadFile(linesPath)
	windows, _, err := record.ReadWindows(filepath.Join(dir, record.WindowsFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(lines), "\n"); n != len(windows) {
		t.Errorf("--live wrote %d lines, windows.csv has %d rows", n, len(windows))
	}
	if pids := processesWith(fmt.Sprintf("127.0.0.11:%d", guardTestPort)); len(pids) > 0 {
		t.Errorf("node processes left behind: %v", pids)
	}
}

// Bad live flags and a bad guard are bad input, said before anything runs.
func TestLiveBadInput(t *testing.T) {
	ok := writeScenario(t, `cluster: {system: static, nodes: 1}
workload: {rate: 10}
phases: [{name: warmup, duration: 1s}]
`)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--metrics", busy.Addr().String()}, "--metrics " + busy.Addr().String()},
		{[]string{"--ui", "0.0.0.0:0"}, "not on loopback"},
		{[]string{"--metrics", "nonsense"}, "want HOST:PORT"},
	} {
		dir := filepath.Join(t.TempDir(), "out")
		_, stderr, code := run(t, append([]string{"run", ok, "--quiet", "-o", dir}, c.args...)...)
		if code != ExitBadInput || !strings.Contains(stderr, c.says) {
			t.Errorf("run %v: exit %d, stderr %q; want exit %d saying %q", c.args, code, stderr, ExitBadInput, c.says)
		}
		if _, err := os.Stat(filepath.Join(dir, record.EventsFile)); err == nil {
			t.Errorf("run %v: started although its input was bad", c.args)
		}
	}
	bad := writeScenario(t, `cluster: {system: static, nodes: 1}
workload: {rate: 10}
phases: [{name: warmup, duration: 1s}]
guard:
  - "goodput < 0.5 for 10s"
  - "latency > 2s"
  - {probe: "ftp://x"}
  - {promql: "up", prometheus: "http://127.0.0.1:9090", when: "about 1"}
  - {probe: "http://127.0.0.1/health", colour: red}
`)
	_, stderr, code := run(t, "validate", bad)
	if code != ExitBadInput {
		t.Fatalf("validate: exit %d, want %d; stderr %s", code, ExitBadInput, stderr)
	}
	for _, want := range []string{`s.yaml:9: guard: unknown key "colour"`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	fixed := strings.Replace(mustRead(t, bad), ", colour: red", "", 1)
	p := writeScenario(t, fixed)
	_, stderr, code = run(t, "validate", p)
	for _, want := range []string{
		`s.yaml:6: guard[1]: guard expression "latency > 2s": unknown metric "latency": want one of`,
		`s.yaml:7: guard[2].probe: "ftp://x" is not an http:// or https:// URL`,
		`s.yaml:8: guard[3].when: guard expression "about 1": want OP VALUE`,
	} {
		if code != ExitBadInput || !strings.Contains(stderr, want) {
			t.Errorf("exit %d; stderr lacks %q:\n%s", code, want, stderr)
		}
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
