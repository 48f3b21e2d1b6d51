package reproduce

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/sweep"
)

// Files reproduce writes.
const (
	JSONFile  = "reproduce.json"
	HTMLFile  = "reproduce.html"
	MetaFile  = "reproduce-run.json" // in every example run's directory: what ran, at which scale
	ModelFile = "model.json"         // a model command's JSON output
	// CommandFile holds a model run's command line.
	CommandFile = "command.txt"
)

// PerRunOverhead is added to every run's estimate: cluster start and
// stop, analysis and report, about 2–4 s a run on the 2-core development
// machine (docs/magical-1pct.md measured 1.7 s for SSM clusters).
const PerRunOverhead = 3 * time.Second

// kneeSteps is a knee search's usual length in steps (ramp, one or two
// failures, three bisections: docs/raid.md's knee figure takes 10), for
// estimates; a search never takes longer than the scenario's KneeBound.
const kneeSteps = 10

// ErrUnknown is wrapped by Plan's error when a paper or an experiment id
// is not in the registry; the message lists the valid ones.
var ErrUnknown = errors.New("unknown")

// LoadFunc loads, validates and scales a scenario as `faultbench run`
// would, returning bad input with file:line and key.
type LoadFunc func(path string, scale float64) (*scenario.Scenario, error)

// ModelFunc runs `faultbench model ARGS` and writes its output to stdout.
type ModelFunc func(ctx context.Context, args []string, stdout io.Writer) error

// Options say where and how to reproduce.
type Options struct {
	Root string // the repository root: data files' paths are relative to it
	Out  string // results directory
	// TimeScale, when above 0, replaces every experiment's own scale for
	// its runs (examples and sweeps).
	TimeScale float64
	// Reps, when above 0, replaces every example's and sweep's repetitions.
	Reps int
	Load LoadFunc
	// Command is the command line, recorded in reproduce.json.
	Command string
	// Execute runs one scaled scenario into a directory; nil is runner.Run.
	Execute sweep.ExecuteFunc
	Model   ModelFunc
}

// Selection is what the command line asks for.
type Selection struct {
	Paper string   // a paper key or "all"
	Only  []string // experiment ids (or paper/id); empty: every experiment
}

// Plan is the set of runs a selection makes.
type Plan struct {
	Papers      []*Paper // the selected papers, whole: their claims are all judged
	Experiments []*Planned
	Jobs        []sweep.Job
	Estimate    time.Duration
	opt         Options
}

// Planned is one experiment as it will run.
type Planned struct {
	Paper    *Paper
	Exp      *Experiment
	Reps     int
	Scale    float64 // 0 for model commands
	Runs     int     // jobs
	Estimate time.Duration
}

// ID is paper/experiment.
func (p *Planned) ID() string { return p.Paper.Key + "/" + p.Exp.ID }

// SelectPapers returns the papers a PAPER argument names.
func SelectPapers(papers []*Paper, key string) ([]*Paper, error) {
	if key == "all" {
		return papers, nil
	}
	for _, p := range papers {
		if p.Key == key {
			return []*Paper{p}, nil
		}
	}
	return nil, fmt.Errorf("%w paper %q: want one of %s, or all", ErrUnknown, key, strings.Join(Keys(papers), ", "))
}

// NewPlan selects experiments and builds their jobs, loading and checking
// every scenario, sweep and model input they name before anything runs.
func NewPlan(papers []*Paper, sel Selection, opt Options) (*Plan, error) {
	chosen, err := SelectPapers(papers, sel.Paper)
	if err != nil {
		return nil, err
	}
	exps, err := selectExperiments(chosen, sel.Only)
	if err != nil {
		return nil, err
	}
	if opt.Root == "" {
		opt.Root = "."
	}
	if opt.Load == nil {
		return nil, errors.New("reproduce: Options.Load is nil")
	}
	pl := &Plan{Papers: chosen, opt: opt}
	var errs []error
	for _, pe := range exps {
		if err := pl.add(pe); err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: experiment %s: %w", pe.Paper.File, pe.Exp.Line, pe.Exp.ID, err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return pl, nil
}

type paperExp struct {
	Paper *Paper
	Exp   *Experiment
}

func selectExperiments(papers []*Paper, only []string) ([]paperExp, error) {
	var all []paperExp
	for _, p := range papers {
		for _, e := range p.Experiments {
			all = append(all, paperExp{p, e})
		}
	}
	if len(only) == 0 {
		return all, nil
	}
	want := map[paperExp]bool{}
	var bad []string
	for _, id := range only {
		id = strings.TrimSpace(id)
		var found []paperExp
		for _, pe := range all {
			if id == pe.Exp.ID || id == pe.Paper.Key+"/"+pe.Exp.ID {
				found = append(found, pe)
			}
		}
		switch len(found) {
		case 0:
			bad = append(bad, fmt.Sprintf("%q", id))
		case 1:
			want[found[0]] = true
		default:
			var names []string
			for _, pe := range found {
				names = append(names, pe.Paper.Key+"/"+pe.Exp.ID)
			}
			return nil, fmt.Errorf("%w experiment %q: it is in several papers (%s): write paper/id", ErrUnknown, id, strings.Join(names, ", "))
		}
	}
	if len(bad) > 0 {
		var valid []string
		for _, pe := range all {
			valid = append(valid, pe.Paper.Key+"/"+pe.Exp.ID)
		}
		return nil, fmt.Errorf("%w experiment %s for --only: valid ids are %s (the paper/ prefix may be left out)", ErrUnknown, strings.Join(bad, ", "), strings.Join(valid, ", "))
	}
	var out []paperExp
	for _, pe := range all {
		if want[pe] {
			out = append(out, pe)
		}
	}
	return out, nil
}

// runDir is a repetition's directory: OUT/paper/experiment/run/rN.
func runDir(out string, p *Paper, e *Experiment, run string, rep int) string {
	return filepath.Join(out, p.Key, e.ID, run, fmt.Sprintf("r%d", rep))
}

func (pl *Plan) add(pe paperExp) error {
	opt := pl.opt
	e := pe.Exp
	pp := &Planned{Paper: pe.Paper, Exp: e, Reps: e.Repetitions}
	if e.Kind() != KindModel {
		pp.Scale = e.TimeScale
		if opt.TimeScale > 0 {
			pp.Scale = opt.TimeScale
		}
		if opt.Reps > 0 {
			pp.Reps = opt.Reps
		}
	}
	var err error
	switch e.Kind() {
	case KindExamples:
		err = pl.addExamples(pp)
	case KindSweep:
		err = pl.addSweep(pp)
	case KindModel:
		err = pl.addModel(pp)
	}
	if err != nil {
		return err
	}
	pl.Experiments = append(pl.Experiments, pp)
	pl.Estimate += pp.Estimate
	return nil
}

func (pl *Plan) addExamples(pp *Planned) error {
	opt := pl.opt
	var errs []error
	for _, x := range pp.Exp.Examples {
		file := filepath.Join(opt.Root, x)
		if !fileExists(file) {
			errs = append(errs, fmt.Errorf("%s does not exist: run from the repository root, or give it with --root", file))
			continue
		}
		sc, err := opt.Load(file, pp.Scale)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		est := runEstimate(sc)
		id := exampleID(x)
		for rep := 1; rep <= pp.Reps; rep++ {
			meta := runMeta{Paper: pp.Paper.Key, Experiment: pp.Exp.ID, Run: id, Repetition: rep,
				Source: x, TimeScale: pp.Scale, Seed: sc.Seed + int64(rep-1)}
			pl.Jobs = append(pl.Jobs, sweep.Job{
				ID:       pp.ID() + "/" + id,
				Label:    fmt.Sprintf("r%d", rep),
				Dir:      runDir(opt.Out, pp.Paper, pp.Exp, id, rep),
				Estimate: est,
				Run:      pl.exampleRun(file, meta),
				Complete: func(dir string) bool { return sweep.Complete(dir) && fileExists(filepath.Join(dir, MetaFile)) },
			})
			pp.Runs++
			pp.Estimate += est
		}
	}
	return errors.Join(errs...)
}

// runMeta is reproduce-run.json: what a run directory holds.
type runMeta struct {
	Paper      string  `json:"paper"`
	Experiment string  `json:"experiment"`
	Run        string  `json:"run"`
	Repetition int     `json:"repetition"`
	Source     string  `json:"source"`
	TimeScale  float64 `json:"time_scale"`
	Seed       int64   `json:"seed"`
}

func (pl *Plan) exampleRun(file string, meta runMeta) func(context.Context, string) error {
	opt := pl.opt
	return func(ctx context.Context, dir string) error {
		sc, err := opt.Load(file, meta.TimeScale)
		if err != nil {
			return err
		}
		sc.Seed = meta.Seed
		if err := pl.execute(ctx, sc, dir); err != nil {
			return err
		}
		return writeJSONFile(filepath.Join(dir, MetaFile), meta)
	}
}

// execute runs a scaled scenario; a run whose summary says incomplete is
// an error with its reason, so that the batch marks it failed.
func (pl *Plan) execute(ctx context.Context, sc *scenario.Scenario, dir string) error {
	if pl.opt.Execute != nil {
		return pl.opt.Execute(ctx, sc, dir)
	}
	res, err := runner.Run(ctx, runner.Options{Scenario: sc, OutDir: dir})
	if err != nil {
		return err
	}
	if res != nil && res.Interrupted {
		return ctx.Err()
	}
	if res != nil && res.Summary != nil && !res.Summary.Complete {
		return fmt.Errorf("the run is incomplete: %s", orText(res.Summary.IncompleteReason, "summary.json says complete: false"))
	}
	return nil
}

func (pl *Plan) addSweep(pp *Planned) error {
	opt := pl.opt
	file := filepath.Join(opt.Root, pp.Exp.Sweep)
	if !fileExists(file) {
		return fmt.Errorf("%s does not exist: run from the repository root, or give it with --root", file)
	}
	s, err := sweep.Load(file, sweep.LoadOptions{Yes: true})
	if err != nil {
		return err
	}
	id := exampleID(pp.Exp.Sweep)
	for rep := 1; rep <= pp.Reps; rep++ {
		runs, err := s.Runs()
		if err != nil {
			return err
		}
		for _, r := range runs {
			sc, err := r.Scenario.ScaledChecked(pp.Scale)
			if err != nil {
				return fmt.Errorf("%s at --time-scale %v: %w", r.ID, pp.Scale, err)
			}
			// Repetition rep of the whole sweep: seeds after those of the
			// sweep's own repetitions.
			sc.Seed += int64(s.Repetitions * (rep - 1))
			est := runEstimate(sc)
			pl.Jobs = append(pl.Jobs, sweep.Job{
				ID:       pp.ID() + "/" + id,
				Label:    fmt.Sprintf("r%d %s %s", rep, r.ID, sweep.ParamString(r.Config.Params)),
				Dir:      filepath.Join(runDir(opt.Out, pp.Paper, pp.Exp, id, rep), r.ID),
				Estimate: est,
				Run:      func(ctx context.Context, dir string) error { return pl.execute(ctx, sc, dir) },
				Failed:   func(dir string, reason error) error { return sweep.MarkFailed(dir, sc, reason) },
			})
			pp.Runs++
			pp.Estimate += est
		}
	}
	return nil
}

func (pl *Plan) addModel(pp *Planned) error {
	opt := pl.opt
	var errs []error
	for _, m := range pp.Exp.Model {
		args := make([]string, len(m.Args))
		for i, a := range m.Args {
			args[i] = a
			if (strings.HasSuffix(a, ".yaml") || strings.HasSuffix(a, ".yml")) && !filepath.IsAbs(a) && !strings.HasPrefix(a, "-") {
				args[i] = filepath.Join(opt.Root, a)
				if !fileExists(args[i]) {
					errs = append(errs, fmt.Errorf("model run %s: %s does not exist: run from the repository root, or give it with --root", m.ID, args[i]))
				}
			}
		}
		m := m
		pl.Jobs = append(pl.Jobs, sweep.Job{
			ID:       pp.ID() + "/" + m.ID,
			Label:    "model " + strings.Join(m.Args, " "),
			Dir:      runDir(opt.Out, pp.Paper, pp.Exp, m.ID, 1),
			Estimate: time.Second,
			Run:      pl.modelRun(args),
			Complete: func(dir string) bool { return fileExists(filepath.Join(dir, ModelFile)) },
		})
		pp.Runs++
		pp.Estimate += time.Second
	}
	return errors.Join(errs...)
}

func (pl *Plan) modelRun(args []string) func(context.Context, string) error {
	return func(ctx context.Context, dir string) error {
		if pl.opt.Model == nil {
			return errors.New("no model command runner (Options.Model)")
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		full := make([]string, 0, len(args)+1)
		for _, a := range args {
			full = append(full, strings.ReplaceAll(a, "{dir}", dir))
		}
		full = append(full, "--json")
		cmd := "faultbench model " + strings.Join(full, " ") + "\n"
		if err := os.WriteFile(filepath.Join(dir, CommandFile), []byte(cmd), 0o644); err != nil {
			return err
		}
		var out bytes.Buffer
		if err := pl.opt.Model(ctx, full, &out); err != nil {
			return err
		}
		if !json.Valid(out.Bytes()) {
			return fmt.Errorf("faultbench model %s printed no JSON", strings.Join(args, " "))
		}
		return os.WriteFile(filepath.Join(dir, ModelFile), out.Bytes(), 0o644)
	}
}

// runEstimate is a scaled scenario's length, its knee search and the
// per-run overhead.
func runEstimate(sc *scenario.Scenario) time.Duration {
	est := sc.Length() + PerRunOverhead
	if cfg := sc.KneeConfig(); cfg != nil {
		knee := time.Duration(kneeSteps) * cfg.StepTime
		if b := sc.KneeBound(); b < knee {
			knee = b
		}
		est += knee
	}
	return est
}

// Summary prints the plan by experiment, for --dry-run: kind, runs,
// repetitions, time scale and estimate, then each paper's claims.
func (pl *Plan) Summary(w io.Writer) {
	fmt.Fprintf(w, "%-34s %-9s %5s %5s %6s %10s\n", "experiment", "kind", "runs", "reps", "scale", "estimate")
	for _, pp := range pl.Experiments {
		scale := "–"
		if pp.Scale > 0 {
			scale = formatNum(pp.Scale)
		}
		fmt.Fprintf(w, "%-34s %-9s %5d %5d %6s %10s\n", pp.ID(), pp.Exp.Kind(), pp.Runs, pp.Reps, scale, pp.Estimate.Round(time.Second))
	}
	fmt.Fprintf(w, "total: %d experiments, %d runs, estimated %s (scenario lengths × scale, knee searches, %s a run for start, stop and analysis)\n",
		len(pl.Experiments), len(pl.Jobs), pl.Estimate.Round(time.Second), PerRunOverhead)
	for _, p := range pl.Papers {
		counts := map[string]int{}
		for _, c := range p.Claims {
			counts[claimMode(c)]++
		}
		fmt.Fprintf(w, "%s, %s: %d claims (%d measured, %d not measured, %d by construction)\n", p.Key, p.Cite,
			len(p.Claims), counts["measured"], counts["not measured"], counts["by construction"])
	}
}

func claimMode(c *Claim) string {
	switch {
	case c.Measure != nil:
		return "measured"
	case c.Basis != "":
		return "by construction"
	}
	return "not measured"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func orText(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

func writeJSONFile(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
