package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/faultbench/faultbench/internal/live"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/scenario"
)

// FailedFile is written into a run directory whose run failed; it holds
// the reason, which sweep.csv repeats.
const FailedFile = "failed.txt"

// ExecuteFunc carries out one run of sc into dir and leaves a results
// directory there. It returns an error when the run failed; ctx's error
// when it was interrupted.
type ExecuteFunc func(ctx context.Context, sc *scenario.Scenario, dir string) error

// Options say how to run a sweep.
type Options struct {
	OutDir string
	// Resume skips the runs whose directory holds a complete run and redoes
	// the others; without it, OutDir must not hold runs of this sweep yet.
	Resume bool
	// Progress receives one line per run: i of n, its parameters, ETA.
	Progress io.Writer
	// Execute runs one scenario; nil runs it with runner.Run, scaled by
	// TimeScale, followed by Live.
	Execute   ExecuteFunc
	TimeScale float64
	// Live follows every run as `faultbench run` would (docs/sweep.md):
	// Lines gets each run's windows, Relay serves each run in turn. Its
	// Metrics, UI and Position are not used: the Relay serves the
	// addresses, and Execute places each run.
	Live runner.LiveOptions
}

// ErrExists is returned by Run when OutDir already holds runs and Resume
// is not set.
var ErrExists = errors.New("the sweep directory already holds runs")

// Execute runs every configuration × repetition of s in order, recording
// a failed run with its reason and going on, then collects the run
// directories into OutDir's sweep.csv, sweep.parquet and sweep.json.
// An interrupted sweep keeps what it finished and returns ctx's error;
// --resume picks it up.
func Execute(ctx context.Context, s *Sweep, opt Options) (*Table, error) {
	runs, err := s.Runs()
	if err != nil {
		return nil, err
	}
	exec := opt.Execute
	if exec == nil {
		exec = runnerExecute(opt.TimeScale, opt.Live, positions(s, runs, opt.OutDir))
	}
	if err := os.MkdirAll(opt.OutDir, 0o755); err != nil {
		return nil, err
	}
	var dirs []string
	var jobs []Job
	for _, r := range runs {
		dir := filepath.Join(opt.OutDir, r.ID)
		dirs = append(dirs, dir)
		sc := r.Scenario
		jobs = append(jobs, Job{
			ID: r.ID, Label: ParamString(r.Config.Params), Dir: dir,
			Run:    func(ctx context.Context, dir string) error { return exec(ctx, sc, dir) },
			Failed: func(dir string, reason error) error { return MarkFailed(dir, sc, reason) },
		})
	}
	if !opt.Resume {
		if err := CheckFresh(jobs); err != nil {
			return nil, err
		}
	}
	if err := writeSweepCopy(s, opt.OutDir); err != nil {
		return nil, err
	}
	if _, err := RunBatch(ctx, jobs, BatchOptions{Resume: opt.Resume, Progress: opt.Progress}); err != nil {
		return nil, err
	}
	return Collect(dirs, opt.OutDir)
}

// Plan writes every run of s as a standalone scenario DIR/cfg-NNNN-rR.yaml
// (named, seeded, its parameters in its sweep key), for `faultbench run`
// on any machine, and returns the files written.
func Plan(s *Sweep, dir string) ([]string, error) {
	runs, err := s.Runs()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := writeSweepCopy(s, dir); err != nil {
		return nil, err
	}
	var files []string
	for _, r := range runs {
		body, err := r.Scenario.Marshal()
		if err != nil {
			return nil, err
		}
		head := fmt.Sprintf("# sweep %s, configuration %d of %d, repetition %d: %s\n# run with: faultbench run %s.yaml -o %s\n",
			s.Name, r.Config.Index, len(s.Configs), r.Scenario.Sweep.Repetition, ParamString(r.Config.Params), r.ID, r.ID)
		p := filepath.Join(dir, r.ID+".yaml")
		if err := os.WriteFile(p, append([]byte(head), body...), 0o644); err != nil {
			return nil, err
		}
		files = append(files, p)
	}
	return files, nil
}

func writeSweepCopy(s *Sweep, dir string) error {
	data, err := os.ReadFile(s.File)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "sweep.yaml"), data, 0o644)
}

// positions places every run of the sweep, by its directory.
func positions(s *Sweep, runs []Run, outDir string) map[string]*live.Position {
	ordinal := map[int]int{} // configuration index -> 1-based, in run order
	for i := range s.Configs {
		ordinal[s.Configs[i].Index] = i + 1
	}
	out := map[string]*live.Position{}
	for i, r := range runs {
		out[filepath.Join(outDir, r.ID)] = &live.Position{Sweep: s.Name, Run: r.ID, ConfigID: configID(r.Config.Index),
			Config: ordinal[r.Config.Index], Configs: len(s.Configs), Repetition: r.Scenario.Sweep.Repetition,
			Index: i + 1, Runs: len(runs)}
	}
	return out
}

func runnerExecute(scale float64, follow runner.LiveOptions, at map[string]*live.Position) ExecuteFunc {
	if scale <= 0 {
		scale = 1
	}
	follow.Metrics, follow.UI = nil, nil
	return func(ctx context.Context, sc *scenario.Scenario, dir string) error {
		lo := follow
		lo.Position = at[dir]
		res, err := runner.Run(ctx, runner.Options{Scenario: sc.Scaled(scale), OutDir: dir, Live: lo})
		if err != nil {
			return err
		}
		if res != nil && res.Interrupted {
			return ctx.Err()
		}
		return nil
	}
}

// Complete reports whether dir holds a finished run: a summary.json that
// says complete.
func Complete(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, record.SummaryFile))
	if err != nil {
		return false
	}
	var s struct {
		Complete bool `json:"complete"`
	}
	return json.Unmarshal(data, &s) == nil && s.Complete
}

// MarkFailed leaves the run directory with the scenario and the reason, so
// that Collect can list the run as failed wherever it looks.
func MarkFailed(dir string, sc *scenario.Scenario, reason error) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, record.ScenarioFile)); err != nil {
		body, err := sc.Marshal()
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, record.ScenarioFile), body, 0o644); err != nil {
			return err
		}
	}
	msg := strings.ReplaceAll(reason.Error(), "\n", "; ")
	return os.WriteFile(filepath.Join(dir, FailedFile), []byte(msg+"\n"), 0o644)
}

func progressf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}
