package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/record"
)

// faultKinds are the faults the local backend injects into a static node,
// indexed by the fuzzer's faultKind (0: no fault).
var faultKinds = []string{"", "app-hang", "app-crash", "node-freeze", "node-crash", "restart-node"}

// Bounds on what the property test actually runs: a scenario validate
// accepts but that would take longer is not run (the property is about
// crashes, which do not need long runs).
const (
	fuzzMaxLength   = 2 * time.Second
	fuzzMaxRequests = 4000
)

// FuzzValidateThenRun is the property that validate finds everything run
// would: a scenario `faultbench validate --time-scale F` accepts runs with
// `faultbench run --time-scale F` on a static cluster without a crash, ends
// with exit 0 (or 3, a missed threshold) and leaves a results directory
// with a summary. Scenarios are built from a template whose values the
// fuzzer mutates (durations, rates, recurrence laws, trace files with odd
// lines, the scale); the ones validate rejects are not run.
//
// `go test` runs the seed corpus below, a few short real runs; `go test
// -run '^$' -fuzz FuzzValidateThenRun -fuzzminimizetime 1x -parallel 1
// ./internal/cli` explores further (each accepted input is a real run of
// seconds, longer than the fuzzer's default minimisation budget allows).
func FuzzValidateThenRun(f *testing.F) {
	if testing.Short() {
		f.Skip("starts processes; skipped with -short")
	}
	// rate, window, phase1, phase2, faultKind, at, duration, every, detect, traceKind, clfLine, clients, scale
	f.Add(200.0, "200ms", "600ms", "600ms", uint8(1), "300ms", "300ms", "", "", uint8(0), "", uint8(1), 1.0)
	f.Add(100.0, "2s", "6s", "4s", uint8(2), "5s", "", "", "2s", uint8(2), "garbage between good lines", uint8(2), 0.2)
	f.Add(300.0, "100ms", "500ms", "500ms", uint8(3), "100ms", "100ms", "fixed(200ms)", "", uint8(1), "", uint8(3), 1.0)
	f.Add(50.0, "1ns", "1s", "1s", uint8(0), "", "", "", "", uint8(0), "", uint8(1), 1e-9) // rejected: not run
	f.Fuzz(func(t *testing.T, rate float64, window, phase1, phase2 string, faultKind uint8, at, duration, every, detect string,
		traceKind uint8, clfLine string, clients uint8, scale float64) {
		dir := t.TempDir()
		path := filepath.Join(dir, "s.yaml")
		if err := os.WriteFile(path, []byte(fuzzScenario(rate, window, phase1, phase2, faultKind, at, duration, every, detect, traceKind, clients)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "paths.txt"), []byte("/p/1\n/p/2\n# a comment\n/p/3\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitAfter(goodCLF(40), "\n")
		log := strings.Join(lines[:7], "") + strings.ReplaceAll(clfLine, "\n", " ") + "\n" + strings.Join(lines[7:], "")
		if err := os.WriteFile(filepath.Join(dir, "access.log"), []byte(log), 0o644); err != nil {
			t.Fatal(err)
		}
		scaleArg := strconv.FormatFloat(scale, 'g', -1, 64)

		_, _, code := run(t, "validate", path, "--time-scale", scaleArg)
		if code != ExitOK {
			return // rejected before anything ran: what validate is for
		}
		sc, err := prepareScenario(path, scale, io.Discard)
		if err != nil {
			t.Fatalf("validate accepted the scenario but prepareScenario refuses it: %v", err)
		}
		if sc.Length() > fuzzMaxLength || sc.Workload.Rate*sc.Length().Seconds() > fuzzMaxRequests {
			return // valid, but too long to run here
		}
		// A run is bounded too: start-up, the run, the drain of its last
		// attempts and a margin for analysis. Past that it is stuck.
		w := sc.Workload
		// Generous, since -race on a busy two-core machine is several times
		// slower: this bound catches a hang, it does not time the run.
		budget := 4*(sc.Cluster.ReadyTimeout.Duration+sc.Length()+w.ConnectTimeout.Duration+w.ResponseTimeout.Duration+sc.Cluster.Boot.Duration) + 3*time.Minute
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		out := filepath.Join(dir, "out")
		var stdoutB, stderrB bytes.Buffer
		code = ExitCode(Run(ctx, []string{"run", path, "--time-scale", scaleArg, "-o", out, "--quiet"}, &stdoutB, &stderrB))
		stdout, stderr := stdoutB.String(), stderrB.String()
		if ctx.Err() != nil {
			body, _ := os.ReadFile(path)
			t.Fatalf("run at --time-scale %s still running after %s\nscenario:\n%s\nstderr: %s", scaleArg, budget, body, stderr)
		}
		if code != ExitOK && code != ExitThreshold {
			body, _ := os.ReadFile(path)
			t.Fatalf("validate accepted this scenario at --time-scale %s, but run exited %d\nscenario:\n%s\nstdout: %s\nstderr: %s", scaleArg, code, body, stdout, stderr)
		}
		if st, err := os.Stat(filepath.Join(out, record.SummaryFile)); err != nil || st.Size() == 0 {
			t.Fatalf("run exited %d without a summary: %v", code, err)
		}
	})
}

// fuzzScenario fills the template with the fuzzer's values; every string is
// quoted, so whatever it holds stays inside its key.
func fuzzScenario(rate float64, window, phase1, phase2 string, faultKind uint8, at, duration, every, detect string, traceKind uint8, clients uint8) string {
	q := strconv.Quote
	var b strings.Builder
	fmt.Fprintf(&b, "name: fuzz\ncluster: {system: static, nodes: 2, pages: 50, page_size: 256}\n")
	fmt.Fprintf(&b, "workload: {rate: %s, clients: %d, window: %s", strconv.FormatFloat(rate, 'g', -1, 64), 1+int(clients)%4, q(window))
	switch traceKind % 3 {
	case 1:
		b.WriteString(`, trace: "paths:paths.txt"`)
	case 2:
		b.WriteString(`, trace: "clf:access.log"`)
	}
	b.WriteString("}\n")
	fmt.Fprintf(&b, "phases: [{name: a, duration: %s}, {name: b, duration: %s}]\n", q(phase1), q(phase2))
	if kind := faultKinds[int(faultKind)%len(faultKinds)]; kind != "" {
		fmt.Fprintf(&b, "faults:\n  - {type: %s, node: 2, at: %s", kind, q(at))
		if duration != "" {
			fmt.Fprintf(&b, ", duration: %s", q(duration))
		}
		if every != "" {
			fmt.Fprintf(&b, ", every: %s", q(every))
		}
		b.WriteString("}\n")
	}
	if detect != "" {
		fmt.Fprintf(&b, "operator: {detect_after: %s}\n", q(detect))
	}
	return b.String()
}
