package runner

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/faultbench/faultbench/internal/knee"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/workload"
)

// findKnee runs the scenario's knee search against the started cluster
// (Brown and Patterson 2000, §3.3) and returns the scenario to run: sc with the rate set to
// fraction × knee and the knee section dropped, which it also writes as the
// results directory's scenario.yaml (the scenario as run: rerunning it
// offers the same rate). The steps go to knee.csv, also when the search
// fails or is interrupted, and the outcome to a run.knee event at t=0,
// whose detail findKnee also returns.
func findKnee(ctx context.Context, sc *scenario.Scenario, base workload.Config, outDir string,
	emit func(record.Event), logf func(string, ...any)) (*scenario.Scenario, string, error) {
	cfg := *sc.KneeConfig()
	logf("knee search: up to %d steps of %s from %g/s (at most %s)", cfg.MaxSteps(), cfg.StepTime, cfg.Start, sc.KneeBound())
	probe := &liveProbe{base: base}
	res, err := knee.Search(ctx, cfg, probe)
	csvErr := writeKneeCSV(filepath.Join(outDir, knee.File), cfg, res.Steps)
	if err != nil {
		emit(record.Event{Kind: "run.knee", Detail: fmt.Sprintf("knee search failed: %v; %s", err, res.Summary(cfg))})
		if ctx.Err() != nil {
			return nil, "", fmt.Errorf("interrupted during the knee search after %d step(s); nodes stopped, steps in %s: %w",
				len(res.Steps), filepath.Join(outDir, knee.File), ctx.Err())
		}
		return nil, "", fmt.Errorf("knee search: %w", err)
	}
	if csvErr != nil {
		return nil, "", csvErr
	}
	summary := res.Summary(cfg)
	emit(record.Event{Kind: "run.knee", Detail: summary})
	logf("%s", summary)

	out := *sc
	out.Workload.Rate = math.Max(0.01, math.Round(res.Rate*100)/100)
	out.Workload.Knee = nil
	body, err := out.Marshal()
	if err != nil {
		return nil, "", err
	}
	if err := os.WriteFile(filepath.Join(outDir, record.ScenarioFile), body, 0o644); err != nil {
		return nil, "", err
	}
	return &out, summary, nil
}

// liveProbe offers each step's rate to the real cluster with the run's own
// workload settings (driver, clients, trace, timeouts), a seed of its own
// per step, and waits for every attempt of the step to settle.
type liveProbe struct {
	base  workload.Config
	steps int
}

func (p *liveProbe) Probe(ctx context.Context, rate float64, d time.Duration) (knee.Measure, error) {
	p.steps++
	cfg := p.base
	cfg.Rate = rate
	cfg.Seed = p.base.Seed + int64(p.steps)*7919
	var tally knee.Tally
	sink := workload.SinkFunc(func(r record.Request) {
		switch {
		case r.Refused != record.NotRefused:
			tally.Refuse() // the generator's limit, not the service's outcome
		case r.CutShort:
			// unfinished when the step was abandoned: no outcome
		default:
			tally.Add(r.Outcome == record.OK, time.Duration(r.LatencyS*float64(time.Second)))
		}
	})
	gen, err := workload.New(ctx, cfg, sink)
	if err != nil {
		return knee.Measure{}, err
	}
	// An interrupted probe's step is discarded: do not await its attempts.
	stop := context.AfterFunc(ctx, gen.Abandon)
	defer stop()
	if err := gen.Run(ctx, time.Now(), d); err != nil {
		return knee.Measure{}, err
	}
	return tally.Measure(), nil
}

func writeKneeCSV(path string, cfg knee.Config, steps []knee.Step) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := knee.WriteCSV(f, cfg, steps); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
