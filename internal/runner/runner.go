// Package runner carries out one experiment: it starts the cluster, drives
// it with the client emulators, injects the fault schedule, plays the
// operator, records every request, and leaves a complete results directory
// (scenario.yaml, requests.parquet, windows.csv, events.jsonl, summary.json,
// report.html) — also when the run is interrupted, in which case every fault
// is reverted, every node stopped and the summary marked incomplete.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/operator"
	"github.com/faultbench/faultbench/internal/pageset"
	"github.com/faultbench/faultbench/internal/progress"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/report"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/testbed"
	"github.com/faultbench/faultbench/internal/workload"
)

// Options say how to run a scenario. The scenario is already scaled.
type Options struct {
	Scenario *scenario.Scenario
	OutDir   string    // results directory; created, must not hold a previous run
	Progress io.Writer // terminal for the progress bar; nil draws none
	Log      io.Writer // one-line messages (start, results path); nil is silent
	// AllowRemote lets the load generator send to addresses outside loopback.
	AllowRemote bool
	// Executable and Env start node programs (tests point them at a test binary).
	Executable string
	Env        []string
}

// Result is what a finished (or interrupted) run leaves.
type Result struct {
	Dir     string
	Summary *analysis.Summary
	// Interrupted is true when the context ended the run early.
	Interrupted bool
	// Knee is the outcome of the scenario's knee search ("" without one),
	// as in the run.knee event.
	Knee string
}

// ErrStart wraps failures to bring the cluster up (a port in use, a
// command that exits at once, an unready node): the run did not happen.
var ErrStart = errors.New("cluster did not start")

// Run carries out the experiment. It returns an error only when the run
// could not be carried out or its results could not be written; an
// interrupted run returns its partial Result with Interrupted set and
// ctx's error.
func Run(ctx context.Context, opt Options) (*Result, error) {
	sc := opt.Scenario
	if err := os.MkdirAll(opt.OutDir, 0o755); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(opt.OutDir, record.RequestsFile)); err == nil {
		return nil, fmt.Errorf("%s already holds a run: choose another -o", opt.OutDir)
	}
	body, err := sc.Marshal()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(opt.OutDir, record.ScenarioFile), body, 0o644); err != nil {
		return nil, err
	}
	events, err := record.CreateEventLog(filepath.Join(opt.OutDir, record.EventsFile))
	if err != nil {
		return nil, err
	}
	defer events.Close()
	logf := func(format string, args ...any) {
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, format+"\n", args...)
		}
	}

	// The clock starts when the load starts; events before it (cluster
	// start-up) are stamped at 0.
	var t0 time.Time
	var t0Mu sync.RWMutex
	clock := testbed.ClockFunc(func() time.Duration {
		t0Mu.RLock()
		defer t0Mu.RUnlock()
		if t0.IsZero() {
			return 0
		}
		return time.Since(t0)
	})
	emit := func(e record.Event) { events.Add(e) }

	spec := testbed.FromScenario(sc.Cluster, opt.OutDir)
	spec.Executable, spec.Env, spec.Clock = opt.Executable, opt.Env, clock
	spec.Window = sc.Workload.Window.Duration
	// The system's rig (press: the faultnet proxies between its nodes) is
	// set up before the nodes, which need its addresses, and closed after
	// them; the deferred Close covers the early returns.
	rig, err := testbed.PrepareSystem(&spec, sc.Seed)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStart, err)
	}
	defer rig.Close()
	logf("starting %d %s node(s)", sc.Cluster.Nodes, sc.Cluster.System)
	cluster, err := testbed.StartLocal(ctx, spec, emit)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStart, err)
	}
	defer cluster.Stop()
	target, ok := rig.Target(cluster).(operator.Cluster)
	if !ok {
		return nil, fmt.Errorf("%w: the %s rig's fault target lost the cluster's levers", ErrStart, sc.Cluster.System)
	}

	var kneeSummary string
	if sc.Workload.Knee != nil {
		sc, kneeSummary, err = findKnee(ctx, sc, workloadConfig(sc, cluster, rig, opt), opt.OutDir, emit, logf)
		if err != nil {
			return nil, err
		}
	}

	rec, err := record.NewRecorder(opt.OutDir, sc.Workload.Window.Seconds(),
		sc.Workload.ConnectTimeout.Seconds()+sc.Workload.ResponseTimeout.Seconds()+2)
	if err != nil {
		return nil, err
	}
	defer rec.Close(0)

	gen, err := workload.New(ctx, workloadConfig(sc, cluster, rig, opt), rec)
	if err != nil {
		return nil, err
	}

	length := sc.Length()
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	t0Mu.Lock()
	t0 = time.Now()
	start := t0
	t0Mu.Unlock()
	logf("running %q for %s; results in %s", sc.Name, length, opt.OutDir)

	var bg sync.WaitGroup
	bg.Go(func() { announcePhases(runCtx, sc, start, emit) })
	faults, err := operator.Start(runCtx, sc, target, clock, emit)
	if err != nil {
		stopRun()
		bg.Wait()
		return nil, err
	}
	if w, ok := rig.(testbed.Watcher); ok {
		bg.Go(func() { w.Watch(runCtx, cluster, emit) })
	}
	if s, ok := rig.(testbed.Sampler); ok {
		bg.Go(func() {
			s.Sample(runCtx, cluster, func(name string, v float64) { rec.Series(name, clock.Now().Seconds(), v) })
		})
	}
	if opt.Progress != nil {
		bg.Go(func() {
			progress.Show(runCtx, opt.Progress, length, clock.Now, func() progress.Stats {
				l := rec.Snapshot()
				return progress.Stats{Phase: sc.Phases[sc.PhaseAt(clock.Now())].Name, Total: l.Total, OK: l.OK, P99: l.RecentP99}
			})
		})
	}

	genErr := gen.Run(runCtx, start, length)
	interrupted := ctx.Err() != nil
	endS := math.Min(clock.Now().Seconds(), length.Seconds())
	if !interrupted {
		endS = length.Seconds()
	}
	stopRun()
	// Revert every fault before the nodes stop, so a stopped process is
	// continued and its state is what the operator would see.
	faults.Stop()
	faultErr := faults.Err()
	bg.Wait()
	stopErr := cluster.Stop()
	// Every fault is already reverted; closing the rig now only releases
	// its ports, with no node left to notice.
	stopErr = errors.Join(stopErr, rig.Close())
	if interrupted {
		emit(record.Event{TS: endS, Kind: "run.interrupted", Detail: "run interrupted; faults reverted, nodes stopped"})
	}
	emit(record.Event{TS: endS, Kind: "run.end"})

	windows, series, recErr := rec.Close(endS)
	if recErr != nil {
		return nil, fmt.Errorf("writing %s: %w", record.RequestsFile, recErr)
	}
	if err := record.WriteWindows(filepath.Join(opt.OutDir, record.WindowsFile), windows, series); err != nil {
		return nil, err
	}
	if err := events.Close(); err != nil {
		return nil, err
	}
	if genErr != nil && !interrupted {
		return nil, genErr
	}

	sum, err := analysis.Analyze(opt.OutDir, analysis.Options{Complete: !interrupted})
	if err != nil {
		return nil, fmt.Errorf("analysing %s: %w", opt.OutDir, err)
	}
	if err := analysis.Write(opt.OutDir, sum); err != nil {
		return nil, err
	}
	if err := report.Write([]string{opt.OutDir}, filepath.Join(opt.OutDir, record.ReportFile)); err != nil {
		return nil, fmt.Errorf("writing the report: %w", err)
	}
	res := &Result{Dir: opt.OutDir, Summary: sum, Interrupted: interrupted, Knee: kneeSummary}
	if interrupted {
		return res, ctx.Err()
	}
	if stopErr != nil {
		logf("warning: stopping the cluster: %v", stopErr)
	}
	if faultErr != nil {
		// Faults that could not be injected or reverted make the run's
		// record unreliable: say so, but keep the results.
		return res, fmt.Errorf("faults: %w (results kept in %s)", faultErr, opt.OutDir)
	}
	return res, nil
}

// workloadConfig turns the scenario's workload into the generator's config:
// round-robin over every node that serves clients (all of them, unless the
// rig says which), verifying page bodies where the system serves the
// synthetic page set.
func workloadConfig(sc *scenario.Scenario, cluster *testbed.Cluster, rig testbed.Rig, opt Options) workload.Config {
	w := sc.Workload
	cfg := workload.Config{
		Driver: w.Driver, Rate: w.Rate, Arrivals: w.Arrivals, Clients: w.Clients,
		ConnectTimeout: w.ConnectTimeout.Duration, ResponseTimeout: w.ResponseTimeout.Duration,
		Keepalive: w.Keepalive, MaxConns: w.MaxConns, Trace: w.Trace, MaxInFlight: w.MaxInFlight, Seed: sc.Seed,
		Users: w.Users, Flow: w.Flow,
		AllowRemote: opt.AllowRemote, BaseDir: sc.Dir(),
	}
	var serving []int
	if cn, ok := rig.(testbed.ClientNodes); ok {
		serving = cn.ClientNodes()
	}
	for _, n := range cluster.Nodes() {
		if serving != nil && !slices.Contains(serving, n.ID) {
			continue
		}
		cfg.Targets = append(cfg.Targets, workload.Target{Node: n.ID, Addr: n.Addr})
		if ap, err := netip.ParseAddrPort(n.Addr); err == nil {
			cfg.OwnHosts = append(cfg.OwnHosts, ap.Addr())
		}
	}
	if servesPageSet(sc.Cluster.System) {
		cfg.Verify = pageset.Verify
	}
	return cfg
}

func servesPageSet(system string) bool {
	return system == "static" || system == "press" || system == "raid"
}

// announcePhases emits a phase.start event at the start of each phase.
func announcePhases(ctx context.Context, sc *scenario.Scenario, start time.Time, emit func(record.Event)) {
	var at time.Duration
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for _, p := range sc.Phases {
		if wait := time.Until(start.Add(at)); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		}
		emit(record.Event{TS: at.Seconds(), Kind: "phase.start", Detail: p.Name})
		at += p.Duration.Duration
	}
}
