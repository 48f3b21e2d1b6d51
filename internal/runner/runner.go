// Package runner carries out one experiment: it starts the cluster, drives
// it with the client emulators, injects the fault schedule, plays the
// operator, records every request, and leaves a complete results directory
// (scenario.yaml, requests.parquet, windows.csv, events.jsonl, summary.json,
// report.html) — also when the run is interrupted, in which case every fault
// is reverted, every node stopped and the summary marked incomplete.
//
// A run has three steps: prepare (results directory, event log, the
// system's rig, the backend's cluster, the recorder, the generator), drive
// (the load, the phases, the fault schedule and operator, the system's
// watchers and samplers) and finish (revert the faults, stop the nodes,
// write the record, analyse, report). One value, the run, owns everything
// that must be torn down and tears each thing down once, in order, whether
// the run finishes or returns early.
package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/live"
	"github.com/faultbench/faultbench/internal/operator"
	"github.com/faultbench/faultbench/internal/pageset"
	"github.com/faultbench/faultbench/internal/placement"
	"github.com/faultbench/faultbench/internal/progress"
	"github.com/faultbench/faultbench/internal/provenance"
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
	// Live follows the run as it goes (--live, --metrics, --ui); the
	// scenario's guard uses the same machinery (live.go).
	Live LiveOptions
}

// Result is what a finished (or interrupted) run leaves.
type Result struct {
	Dir     string
	Summary *analysis.Summary
	// RunID identifies the run: every event of events.jsonl carries it
	// (run_id), and every process the run started had it in its
	// environment (testbed.RunIDEnv).
	RunID string
	// Interrupted is true when the context ended the run early.
	Interrupted bool
	// Knee is the outcome of the scenario's knee search ("" without one),
	// as in the run.knee event.
	Knee string
	// Aborted is set when the scenario's guard stopped the experiment.
	Aborted *live.Aborted
}

// ErrStart wraps failures to bring the cluster up (a port in use, a
// command that exits at once, an unready node): the run did not happen.
var ErrStart = errors.New("cluster did not start")

// NewRunID draws a run id: 12 hex digits from crypto/rand.
func NewRunID() (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("run id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Run carries out the experiment. It returns an error only when the run
// could not be carried out or its results could not be written; an
// interrupted run returns its partial Result with Interrupted set and
// ctx's error.
func Run(ctx context.Context, opt Options) (*Result, error) {
	r := &run{opt: opt, sc: opt.Scenario, ctx: ctx}
	defer r.teardown()
	if err := r.prepare(ctx); err != nil {
		return nil, err
	}
	d, err := r.drive(ctx)
	if err != nil {
		return nil, err
	}
	return r.finish(ctx, d)
}

// run is one experiment: what prepare sets up and drive uses. It is the
// one owner of teardown: every step of teardown runs once, in order, from
// finish or (after an early return) from the deferred teardown in Run.
type run struct {
	opt Options
	sc  *scenario.Scenario
	id  string
	// ctx is Run's: it ends the live endpoint's linger early (Ctrl-C).
	ctx context.Context

	events *record.EventLog
	emit   func(record.Event)
	clock  testbed.Clock
	t0Mu   sync.RWMutex
	t0     time.Time

	rig     testbed.Rig
	cluster testbed.Cluster
	target  fault.Target
	rec     *record.Recorder
	gen     *workload.Generator
	knee    string
	// kvHistory is the kv driver's history file (kv.go); nil otherwise.
	kvHistory *os.File
	live      liveRun
	// placement is where the run's processes run (placement.go); unpin
	// puts the controller back after a workload.cpus pin.
	placement placement.Record
	unpin     func() error

	// Teardown: each step is done once, by finish or (after an early
	// return) by teardown, whichever comes first; the run, not the
	// idempotence of what it closes, guarantees it.
	nodesDown, recordClosed, eventsClosed, kvClosed step
}

// step is one step of teardown: Do runs f the first time only, and every
// call returns that first result.
type step struct {
	done bool
	err  error
}

// Do runs f unless the step is done; it returns f's error (the first
// call's, on later calls). Only the goroutine running Run calls it.
func (s *step) Do(f func() error) error {
	if !s.done {
		s.done = true
		s.err = f()
	}
	return s.err
}

func (r *run) logf(format string, args ...any) {
	if r.opt.Log != nil {
		fmt.Fprintf(r.opt.Log, format+"\n", args...)
	}
}

// now is the run's clock: zero until the load starts, so events of the
// cluster's start-up are stamped at 0.
func (r *run) now() time.Duration {
	r.t0Mu.RLock()
	defer r.t0Mu.RUnlock()
	if r.t0.IsZero() {
		return 0
	}
	return time.Since(r.t0)
}

// prepare makes the results directory and the event log, draws the run id,
// sets up the system's rig and starts the backend's cluster, runs the knee
// search if the scenario has one, and makes the recorder and generator.
func (r *run) prepare(ctx context.Context) error {
	sc, opt := r.sc, r.opt
	if err := os.MkdirAll(opt.OutDir, 0o755); err != nil {
		return err
	}
	if record.HoldsRun(opt.OutDir) {
		return fmt.Errorf("%s already holds a run: choose another -o", opt.OutDir)
	}
	// The system's defaults, for callers that did not resolve the
	// scenario (the CLI has; Resolve is idempotent).
	if err := testbed.Resolve(sc); err != nil {
		return err
	}
	body, err := sc.Marshal()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(opt.OutDir, record.ScenarioFile), body, 0o644); err != nil {
		return err
	}
	if r.id, err = NewRunID(); err != nil {
		return err
	}
	if r.events, err = record.CreateEventLog(filepath.Join(opt.OutDir, record.EventsFile)); err != nil {
		return err
	}
	if err := r.startLive(); err != nil {
		return err
	}
	r.emit = func(e record.Event) {
		e.RunID = r.id
		r.events.Add(e)
		r.hubEvent(e)
	}
	r.clock = testbed.ClockFunc(r.now)
	r.emit(record.Event{Kind: "run.start", Detail: "run_id=" + r.id})

	backend, err := testbed.LookupBackend(sc.Cluster.Backend)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrStart, err)
	}
	system, err := testbed.LookupSystem(sc.Cluster.System)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrStart, err)
	}
	// A fault neither the backend nor the system has the levers for is bad
	// input, found before anything starts (validate says the same).
	offer := testbed.OfferOf(sc.Cluster.Backend, backend, system)
	for i, f := range sc.Faults {
		if err := offer.Check(f.Type); err != nil {
			return &fault.FieldError{Index: i, Key: "type", Err: err}
		}
	}
	spec := testbed.FromScenario(sc.Cluster, opt.OutDir)
	spec.Executable, spec.Env, spec.Clock = opt.Executable, opt.Env, r.clock
	spec.Window = sc.Workload.Window.Duration
	spec.RunID = r.id
	plan, err := backend.Plan(spec)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrStart, err)
	}
	if sc.Cluster.Nodes == 0 { // attached: the backend found them (the CLI's check has filled this in already)
		sc.Cluster.Nodes, spec.Nodes = len(plan.Hosts), len(plan.Hosts)
	}
	// The system's rig (press: the faultnet proxies between its nodes) is
	// set up before the nodes, which need its addresses, and closed after
	// them (teardown).
	if r.rig, err = system.Rig(&spec, plan, sc.Seed); err != nil {
		return fmt.Errorf("%w: %v", ErrStart, err)
	}
	host, err := placement.Allowed()
	if err != nil {
		return err
	}
	verb := "starting"
	if spec.Attach != nil {
		verb = "attaching to"
	}
	r.logf("%s %d %s node(s) on backend %s", verb, sc.Cluster.Nodes, sc.Cluster.System, backendName(sc.Cluster.Backend))
	if r.cluster, err = backend.Start(ctx, spec, plan, r.emit); err != nil {
		return fmt.Errorf("%w: %v", ErrStart, err)
	}
	r.target = r.rig.Target(r.cluster)
	if err := r.place(backend, host); err != nil {
		return fmt.Errorf("%w: %v", ErrStart, err)
	}
	if d, ok := r.cluster.(testbed.Describer); ok {
		for _, line := range describeLines(d.Describe()) {
			r.logf("%s", line)
		}
	}

	if sc.Workload.Knee != nil {
		if r.sc, r.knee, err = findKnee(ctx, sc, r.workloadConfig(), opt.OutDir, r.emit, r.logf); err != nil {
			return err
		}
		sc = r.sc
	}
	if r.rec, err = record.NewRecorder(opt.OutDir, sc.Workload.Window.Seconds(),
		sc.Workload.ConnectTimeout.Seconds()+sc.Workload.ResponseTimeout.Seconds()+2); err != nil {
		return err
	}
	cfg := r.workloadConfig()
	if err := r.openKVHistory(&cfg); err != nil {
		return err
	}
	if r.gen, err = workload.New(ctx, cfg, r.rec); err != nil {
		return err
	}
	r.followLive()
	if skips := r.gen.TraceSkips(); skips.Malformed > 0 {
		// The record says which replay it is: the lines of the log left out.
		r.emit(record.Event{Kind: "workload.clf_skipped", Detail: fmt.Sprintf("clf_skipped_lines=%d: %s", skips.Malformed, skips)})
	}
	return nil
}

// driven is what drive leaves for finish.
type driven struct {
	genErr, faultErr error
	interrupted      bool
	endS             float64
}

// drive runs the load for the scenario's length beside the phases, the
// fault schedule and operator, the rig's watchers and samplers and the
// progress display, then reverts every fault and waits for all of them.
func (r *run) drive(ctx context.Context) (driven, error) {
	sc, opt := r.sc, r.opt
	length := sc.Length()
	defer loadGC()()
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	r.t0Mu.Lock()
	r.t0 = time.Now()
	start := r.t0
	r.t0Mu.Unlock()
	r.logf("running %q for %s; results in %s", sc.Name, length, opt.OutDir)
	// What made this record, stamped with the instant t = 0, before the
	// first request: in provenance.json (read back into summary.json) and
	// in the Parquet metadata.
	prov := provenance.Collect(r.id, start, os.Args)
	prov.Placement = &r.placement
	prov.Testbed = r.testbed()
	if err := provenance.Write(opt.OutDir, prov); err != nil {
		return driven{}, err
	}
	r.rec.SetMeta(prov.Meta())

	var bg sync.WaitGroup
	bg.Go(func() { announcePhases(runCtx, sc, start, r.emit) })
	// The generator joins the fault target (load-spike acts on it) and
	// reports its spikes on the timeline.
	r.gen.SetEvents(r.emit, r.clock.Now)
	faults, err := operator.Start(runCtx, sc, r.gen.Target(r.target), r.clock, r.emit)
	if err != nil {
		stopRun()
		bg.Wait()
		return driven{}, err
	}
	if w, ok := r.rig.(testbed.Watcher); ok {
		bg.Go(func() { w.Watch(runCtx, r.cluster, r.emit) })
	}
	if s, ok := r.rig.(testbed.Sampler); ok {
		bg.Go(func() {
			s.Sample(runCtx, r.cluster, func(name string, v float64) { r.rec.Series(name, r.clock.Now().Seconds(), v) })
		})
	}
	if opt.Progress != nil {
		bg.Go(func() {
			progress.Show(runCtx, opt.Progress, length, r.clock.Now, func() progress.Stats {
				l := r.rec.Snapshot()
				return progress.Stats{Phase: sc.Phases[sc.PhaseAt(r.clock.Now())].Name, Total: l.Total, OK: l.OK, P99: l.RecentP99}
			})
		})
	}

	bg.Go(func() { r.watchGuard(runCtx, faults, start) })

	// On interrupt, revert faults first, then await the attempts in
	// flight (interrupt.go), so nothing scheduled goes unrecorded.
	var d driven
	genDone := make(chan error, 1)
	go func() { genDone <- r.gen.Run(runCtx, start, length) }()
	genErr, cutS := awaitLoad(ctx, genDone, faults.Stop, r.gen.Abandon, r.clock.Now, r.logf)
	d.genErr = genErr
	d.interrupted = ctx.Err() != nil
	d.endS = length.Seconds()
	if d.interrupted {
		d.endS = math.Min(cutS, length.Seconds())
	}
	stopRun()
	// Revert every fault before the nodes stop, so a stopped process is
	// continued and its state is what the operator would see.
	faults.Stop()
	d.faultErr = faults.Err()
	bg.Wait()
	if r.live.aborted != nil && !d.interrupted {
		d.endS = math.Min(d.endS, r.live.endS)
	}
	if h := r.live.hub; h != nil {
		h.SetEnd(d.endS)
	}
	return d, nil
}

// finish stops the nodes, writes the record, analyses it and writes the
// report.
func (r *run) finish(ctx context.Context, d driven) (*Result, error) {
	opt := r.opt
	stopErr := r.stopNodes()
	if d.interrupted {
		r.emit(record.Event{TS: d.endS, Kind: "run.interrupted", Detail: "run interrupted; faults reverted, nodes stopped"})
	}
	r.emit(record.Event{TS: d.endS, Kind: "run.end"})

	var windows []record.Window
	var series []string
	if err := r.recordClosed.Do(func() (err error) {
		windows, series, err = r.rec.Close(d.endS)
		return err
	}); err != nil {
		return nil, fmt.Errorf("writing %s: %w", record.RequestsFile, err)
	}
	if err := record.WriteWindows(filepath.Join(opt.OutDir, record.WindowsFile), windows, series); err != nil {
		return nil, err
	}
	if err := r.closeEvents(); err != nil {
		return nil, err
	}
	if err := r.kvClosed.Do(r.closeKVHistory); err != nil {
		return nil, err
	}
	if d.genErr != nil && !d.interrupted {
		return nil, d.genErr
	}

	// A run the guard stopped is incomplete (the rest of the scenario did
	// not run); analysis reads the abort event and says so.
	sum, err := analysis.Analyze(opt.OutDir, analysis.Options{Complete: !d.interrupted && r.live.aborted == nil})
	if err != nil {
		return nil, fmt.Errorf("analysing %s: %w", opt.OutDir, err)
	}
	if err := analysis.Write(opt.OutDir, sum); err != nil {
		return nil, err
	}
	if err := report.Write([]string{opt.OutDir}, filepath.Join(opt.OutDir, record.ReportFile)); err != nil {
		return nil, fmt.Errorf("writing the report: %w", err)
	}
	res := &Result{Dir: opt.OutDir, Summary: sum, RunID: r.id, Interrupted: d.interrupted, Knee: r.knee, Aborted: r.live.aborted}
	if d.interrupted {
		return res, ctx.Err()
	}
	if stopErr != nil {
		r.logf("warning: stopping the cluster: %v", stopErr)
	}
	if d.faultErr != nil {
		// Faults that could not be injected or reverted make the run's
		// record unreliable: say so, on one line, but keep the results. A
		// failed revert also made the summary incomplete (RunState).
		what, remedy := "faults", ""
		if !sum.Complete {
			what, remedy = `run incomplete ("complete": false in summary.json)`, "; run it again for a complete record"
		}
		return res, &faultsError{msg: fmt.Sprintf("%s: %s; the other faults were reverted; results kept in %s%s", what, oneLine(d.faultErr), opt.OutDir, remedy), err: d.faultErr}
	}
	if !sum.Complete && r.live.aborted == nil {
		// Nothing failed here, yet the record says the run did not carry
		// out its scenario (the warden's lease lapsed): a failed run.
		return res, fmt.Errorf("run incomplete (\"complete\": false in summary.json): %s; results kept in %s; run it again for a complete record", sum.IncompleteReason, opt.OutDir)
	}
	return res, nil
}

// faultsError is the failures of a run's faults as one line; Unwrap gives
// them as they were.
type faultsError struct {
	msg string
	err error
}

func (e *faultsError) Error() string { return e.msg }
func (e *faultsError) Unwrap() error { return e.err }

// oneLine joins err's lines (errors.Join puts one failure a line) with "; ".
func oneLine(err error) string {
	var parts []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}

// stopNodes stops the cluster, then closes the rig: every fault is already
// reverted (drive), so closing the rig only releases its ports, with no
// node left to notice. It runs once; later calls return the first result.
func (r *run) stopNodes() error {
	return r.nodesDown.Do(func() error {
		var err error
		if r.cluster != nil {
			err = r.cluster.Stop()
		}
		if r.rig != nil {
			err = errors.Join(err, r.rig.Close())
		}
		return err
	})
}

// closeEvents closes the event log, once.
func (r *run) closeEvents() error {
	return r.eventsClosed.Do(func() error {
		if r.events == nil {
			return nil
		}
		return r.events.Close()
	})
}

// teardown does, in order, whichever steps of teardown finish has not
// done: stop the nodes and close the rig, stop the live endpoints, close
// the recorder (its record as far as it goes: an early return has no
// run end), the event log and the kv history. After finish only the live
// endpoints are left to it.
func (r *run) teardown() {
	_ = r.stopNodes()
	r.unplace()
	r.closeLive()
	_ = r.recordClosed.Do(func() error {
		if r.rec == nil {
			return nil
		}
		_, _, err := r.rec.Close(0)
		return err
	})
	_ = r.closeEvents()
	_ = r.kvClosed.Do(r.closeKVHistory)
}

// workloadConfig turns the scenario's workload into the generator's config:
// round-robin over every node that serves clients (all of them, unless the
// rig says which), verifying page bodies where the system serves the
// synthetic page set.
func (r *run) workloadConfig() workload.Config {
	sc := r.sc
	w := sc.Workload
	cfg := workload.Config{
		Driver: w.Driver, Rate: w.Rate, Arrivals: w.Arrivals, Clients: w.Clients,
		ConnectTimeout: w.ConnectTimeout.Duration, ResponseTimeout: w.ResponseTimeout.Duration,
		Keepalive: w.Keepalive, MaxConns: w.MaxConns, PacingTick: w.PacingTick.Duration, Trace: w.Trace, MaxInFlight: w.MaxInFlight, Seed: sc.Seed,
		Users: w.Users, Flow: w.Flow, Model: w.Model, Think: w.Think, KV: kvConfig(w.KV),
		AllowRemote: r.opt.AllowRemote, BaseDir: sc.Dir(), TraceMinUsable: w.TraceMinUsable,
		Requests: RequestSpecs(w), TLS: TLSSpec(w), MaxBody: w.MaxBody,
	}
	// The users' entry point (an attached stack's load balancer) when the
	// cluster has one; its requests carry node 0. Its hosts are the run's
	// own: the user named them.
	if e, ok := r.cluster.(testbed.Entry); ok && len(e.Entry()) > 0 {
		for _, addr := range e.Entry() {
			cfg.Targets = append(cfg.Targets, workload.Target{Node: 0, Addr: addr})
			if ap, err := netip.ParseAddrPort(addr); err == nil {
				cfg.OwnHosts = append(cfg.OwnHosts, ap.Addr())
			}
		}
		if system, err := testbed.LookupSystem(sc.Cluster.System); err == nil && system.PageSet {
			cfg.Verify = pageset.Verify
		}
		return cfg
	}
	var serving []int
	if cn, ok := r.rig.(testbed.ClientNodes); ok {
		serving = cn.ClientNodes()
	}
	for _, n := range r.cluster.Nodes() {
		if serving != nil && !slices.Contains(serving, n.ID) {
			continue
		}
		cfg.Targets = append(cfg.Targets, workload.Target{Node: n.ID, Addr: n.Addr})
		if ap, err := netip.ParseAddrPort(n.Addr); err == nil {
			cfg.OwnHosts = append(cfg.OwnHosts, ap.Addr())
		}
	}
	if system, err := testbed.LookupSystem(sc.Cluster.System); err == nil && system.PageSet {
		cfg.Verify = pageset.Verify
	}
	return cfg
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

func backendName(name string) string {
	if name == "" {
		return testbed.DefaultBackend
	}
	return name
}

// testbed is what ran the nodes, for provenance.json: the backend's own
// description (Describer), or just its name.
func (r *run) testbed() *provenance.Testbed {
	if d, ok := r.cluster.(testbed.Describer); ok {
		tb := d.Describe()
		return &tb
	}
	return &provenance.Testbed{Backend: backendName(r.sc.Cluster.Backend)}
}

// describeLines is the console's account of what runs the nodes: the
// backend, then one line per node's container and image.
func describeLines(tb provenance.Testbed) []string {
	lines := []string{strings.TrimSpace("backend " + tb.Backend + ": " + tb.Detail)}
	for _, n := range tb.Nodes {
		line := fmt.Sprintf("  node %d: container %s (%s) image %s (%s)", n.Node, n.Container, shortHex(n.ContainerID), n.Image, shortHex(n.ImageID))
		if n.RestartPolicy != "" {
			line += ", restart policy " + n.RestartPolicy
		}
		if n.Addr != "" {
			line += ", at " + n.Addr
		}
		lines = append(lines, line)
	}
	return lines
}

func shortHex(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	return id[:min(12, len(id))]
}
