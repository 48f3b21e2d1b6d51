package cli

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/knee"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
)

const kneeScenario = `
name: knee
cluster: {system: static, nodes: 2, pages: 50, page_size: 1024}
workload:
  window: 1s
  knee: {start: 50, max: 1600, factor: 2, refine: 2, step_time: 2s, p99: 2s}
phases: [{name: warmup, duration: 4s}, {name: post, duration: 4s}]
`

func TestValidateShowsTheKnee(t *testing.T) {
	stdout, stderr, code := run(t, "validate", writeScenario(t, kneeScenario))
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"knee:", "start: 50", "max: 1600", "refine: 2", "goodput: 0.99", "p99: 2s", "fraction: 0.9"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("validate output lacks %q:\n%s", want, stdout)
		}
	}
	bad := strings.Replace(kneeScenario, "factor: 2", "factor: 0.5", 1)
	if _, stderr, code := run(t, "validate", writeScenario(t, bad)); code != ExitBadInput || !strings.Contains(stderr, "s.yaml:6: workload.knee.factor: 0.5") {
		t.Errorf("factor 0.5: exit %d, stderr %q", code, stderr)
	}
}

// TestKneeEndToEnd searches the knee of a static cluster at a quarter of
// the time, then runs at 0.9 × knee. It asserts on what the search
// recorded, not on the knee's value, which depends on the machine.
func TestKneeEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run; skipped with -short")
	}
	dir := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := run(t, "run", writeScenario(t, kneeScenario), "--time-scale", "0.25", "-o", dir)
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	f, err := os.Open(filepath.Join(dir, knee.File))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	steps, bounds, err := knee.ReadCSV(f, knee.File)
	if err != nil {
		t.Fatal(err)
	}
	if bounds.P99 != 500*time.Millisecond || bounds.Goodput != 0.99 {
		t.Errorf("bounds %+v, want p99 2s × 0.25 and goodput 0.99", bounds)
	}
	cfg := knee.Config{Start: 50, Max: 1600, Factor: 2, Refine: 2}
	if len(steps) == 0 || len(steps) > cfg.MaxSteps() || steps[0].Rate != 50 || !steps[0].Pass {
		t.Fatalf("steps %+v: want 1 to %d, the first at 50/s passing", steps, cfg.MaxSteps())
	}
	highest := 0.0
	for _, s := range steps {
		if s.Pass && s.Stage != "confirm" {
			highest = math.Max(highest, s.Rate)
		}
		if s.Attempts == 0 {
			t.Errorf("step %+v has no attempts", s)
		}
	}
	// The run's scenario.yaml is the scenario as run: the rate found, no knee.
	sc, err := scenario.Load(filepath.Join(dir, record.ScenarioFile))
	if err != nil {
		t.Fatal(err)
	}
	// The last step confirmed the run's rate: 0.9 × knee, or lower if that
	// did not hold on a busy machine.
	last := steps[len(steps)-1]
	if sc.Workload.Knee != nil || last.Stage != "confirm" || !last.Pass || math.Abs(sc.Workload.Rate-last.Rate) > 0.01 || last.Rate > 0.9*highest+0.01 {
		t.Errorf("as run: rate %v knee %+v, last step %+v: want the confirmed rate, at most 0.9 × %v, and no knee", sc.Workload.Rate, sc.Workload.Knee, last, highest)
	}
	events, err := record.ReadEvents(filepath.Join(dir, record.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	var kneeEvents, phases int
	for _, e := range events {
		switch e.Kind {
		case "run.knee":
			kneeEvents++
			if !strings.Contains(e.Detail, "run rate 0.9 × knee") {
				t.Errorf("run.knee detail %q", e.Detail)
			}
		case "phase.start":
			phases++
		}
	}
	if !strings.HasPrefix(stdout, "knee ") {
		t.Errorf("stdout does not start with the knee: %q", stdout)
	}
	if kneeEvents != 1 || phases != 2 {
		t.Errorf("%d run.knee and %d phase.start events, want 1 and 2", kneeEvents, phases)
	}
	report, err := os.ReadFile(filepath.Join(dir, record.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(report), "Knee search") {
		t.Error("report.html does not show the knee search")
	}
}
