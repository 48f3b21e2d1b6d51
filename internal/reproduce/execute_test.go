package reproduce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/sweep"
)

const tinyScenario = `name: tiny
seed: 7
cluster: {system: static, nodes: 2}
workload: {rate: 10, window: 1s}
phases: [{name: warmup, duration: 10s}, {name: fault, duration: 20s}]
`

// fakeRuns stands in for runner.Run: each run writes a summary whose class
// depends on its example and seed, and events whose span depends on them
// too; the run of example b with seed 8 (repetition 2) fails.
type fakeRuns struct {
	ran   []string
	seeds map[string]int64
}

func (f *fakeRuns) execute(ctx context.Context, sc *scenario.Scenario, dir string) error {
	id := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
	f.ran = append(f.ran, id)
	f.seeds[id] = sc.Seed
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	example := filepath.Base(filepath.Dir(dir))
	if example == "b" && sc.Seed == 8 {
		return errors.New("node 2 never became ready")
	}
	class := "C-1"
	if example == "a" && sc.Seed == 9 {
		class = "C-2"
	}
	summary := fmt.Sprintf(`{"complete": true, "faults": [{"class": %q}]}`, class)
	if err := os.WriteFile(filepath.Join(dir, record.SummaryFile), []byte(summary), 0o644); err != nil {
		return err
	}
	span := 14.0 // a: 14 s from inject to the system's event; b: 2 s
	if example == "b" {
		span = 2
	}
	events := fmt.Sprintf("{\"t_s\": 1, \"kind\": \"phase.start\"}\n{\"t_s\": 10, \"kind\": \"fault.inject\"}\n{\"t_s\": %g, \"kind\": \"system.x\"}\n", 10+span)
	return os.WriteFile(filepath.Join(dir, record.EventsFile), []byte(events), 0o644)
}

func testPlan(t *testing.T, root, out string, runs *fakeRuns, only []string) *Plan {
	t.Helper()
	p, err := Parse([]byte(goodPaper), "papers/test99.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pl, err := NewPlan([]*Paper{p}, Selection{Paper: "test99", Only: only}, Options{
		Root: root, Out: out,
		Load: func(path string, scale float64) (*scenario.Scenario, error) {
			data, err := os.ReadFile(path)
			if err != nil {
				return nil, err
			}
			sc, err := scenario.Parse(data, path)
			if err != nil {
				return nil, err
			}
			return sc.ScaledChecked(scale)
		},
		Execute: runs.execute,
		Model: func(ctx context.Context, args []string, stdout io.Writer) error {
			if args[len(args)-1] != "--json" {
				return fmt.Errorf("args %v: --json not appended", args)
			}
			_, err := io.WriteString(stdout, `{"p_loss": 0.52}`)
			return err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func writeExamples(t *testing.T) string {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "examples"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(root, "examples", n+".yaml"), []byte(tinyScenario), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func claimByID(t *testing.T, r *Report, id string) ClaimReport {
	t.Helper()
	for _, p := range r.Papers {
		for _, c := range p.Claims {
			if c.ID == id {
				return c
			}
		}
	}
	t.Fatalf("no claim %s", id)
	return ClaimReport{}
}

func TestExecuteJudgesRunsAndResumes(t *testing.T) {
	root := writeExamples(t)
	out := filepath.Join(t.TempDir(), "out")
	runs := &fakeRuns{seeds: map[string]int64{}}
	pl := testPlan(t, root, out, runs, nil)
	if len(pl.Jobs) != 7 { // 2 examples × 3 repetitions + 1 model command
		t.Fatalf("%d jobs, want 7", len(pl.Jobs))
	}
	// The estimate: 30 s × 0.2 + 3 s a run, six runs, and a second for the model.
	if want := 6*(6e9+PerRunOverhead.Nanoseconds()) + 1e9; pl.Estimate.Nanoseconds() != want {
		t.Errorf("estimate %v", pl.Estimate)
	}
	var progress strings.Builder
	rep, res, err := pl.Execute(context.Background(), sweep.BatchOptions{Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ran != 7 || res.Failed != 1 {
		t.Errorf("batch %+v, want 7 ran and 1 failed", res)
	}
	if !strings.Contains(progress.String(), "[1/7] test99/runs/a r1") || !strings.Contains(progress.String(), "b r2 failed: node 2 never became ready") {
		t.Errorf("progress:\n%s", progress.String())
	}
	// Repetitions differ by their seed: the scenario's, then +1, +2.
	if runs.seeds["a/r1"] != 7 || runs.seeds["a/r2"] != 8 || runs.seeds["a/r3"] != 9 {
		t.Errorf("seeds %v", runs.seeds)
	}
	// The class of a: C-1, C-1, C-2 → mode C-1, agrees.
	cls := claimByID(t, rep, "cls")
	if cls.Verdict != Agrees || cls.Measured.Text != "C-1 (2 of 3; C-2 ×1)" || len(cls.Runs) != 3 {
		t.Errorf("cls: %+v %+v", cls, cls.Measured)
	}
	// a/b spans 14/2 = 7 in repetitions 1 and 3; repetition 2 of b failed.
	rng := claimByID(t, rep, "rng")
	if rng.Verdict != Agrees || rng.Measured.Value != 7.0 || len(rng.Measured.Values) != 2 || !strings.Contains(rng.Note, "never became ready") {
		t.Errorf("rng: %+v %+v", rng, rng.Measured)
	}
	num := claimByID(t, rep, "num")
	if num.Verdict != Agrees || num.Measured.Value != 0.52 {
		t.Errorf("num: %+v", num)
	}
	if c := claimByID(t, rep, "built"); c.Verdict != ByConstruction || c.Basis == "" {
		t.Errorf("built: %+v", c)
	}
	if c := claimByID(t, rep, "missing"); c.Verdict != NotMeasured || c.Missing == "" {
		t.Errorf("missing: %+v", c)
	}
	counts := rep.Papers[0].Counts
	if counts[Agrees] != 3 || counts[ByConstruction] != 1 || counts[NotMeasured] != 1 {
		t.Errorf("counts %v", counts)
	}
	// The files: reproduce.json says the same, reproduce.html links the runs.
	var fromFile Report
	data, err := os.ReadFile(filepath.Join(out, JSONFile))
	if err != nil || json.Unmarshal(data, &fromFile) != nil || len(fromFile.Papers[0].Claims) != 5 {
		t.Fatalf("reproduce.json: %v", err)
	}
	page, err := os.ReadFile(filepath.Join(out, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"test99/runs/a/r1/", "by construction", "C-1 (2 of 3; C-2 ×1)", "runs/b/r2 (failed)", "node 2 never became ready"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("reproduce.html lacks %q", want)
		}
	}
	if strings.Contains(string(page), "http://") || strings.Contains(string(page), "https://") {
		t.Error("reproduce.html refers to an external asset")
	}

	// Again without --resume: refused before anything runs.
	runs.ran = nil
	if _, _, err := testPlan(t, root, out, runs, nil).Execute(context.Background(), sweep.BatchOptions{}); !errors.Is(err, sweep.ErrExists) || len(runs.ran) != 0 {
		t.Fatalf("a second run into the same directory: %v, ran %v", err, runs.ran)
	}
	// With --resume only the failed run runs again (and fails again).
	_, res, err = testPlan(t, root, out, runs, nil).Execute(context.Background(), sweep.BatchOptions{Resume: true})
	if err != nil || res.Ran != 1 || res.Skipped != 6 || strings.Join(runs.ran, ",") != "b/r2" {
		t.Fatalf("resume: %+v %v, ran %v", res, err, runs.ran)
	}
}

func TestOnlyAndNotRun(t *testing.T) {
	root := writeExamples(t)
	out := filepath.Join(t.TempDir(), "out")
	runs := &fakeRuns{seeds: map[string]int64{}}
	pl := testPlan(t, root, out, runs, []string{"test99/models"})
	if len(pl.Jobs) != 1 {
		t.Fatalf("--only models: %d jobs", len(pl.Jobs))
	}
	rep, _, err := pl.Execute(context.Background(), sweep.BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := claimByID(t, rep, "cls"); c.Verdict != NotMeasured || !strings.Contains(c.Note, "--only runs") {
		t.Errorf("a claim of an experiment that did not run: %+v", c)
	}
	p, _ := Parse([]byte(goodPaper), "papers/test99.yaml")
	for _, sel := range []Selection{{Paper: "nope"}, {Paper: "test99", Only: []string{"nope"}}, {Paper: "all", Only: []string{"x/runs"}}} {
		_, err := NewPlan([]*Paper{p}, sel, Options{Load: func(string, float64) (*scenario.Scenario, error) { return nil, nil }})
		if !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "test99") {
			t.Errorf("%+v: %v, want ErrUnknown listing the valid names", sel, err)
		}
	}
}
