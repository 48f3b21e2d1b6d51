package workload

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/kvcheck"
	"github.com/faultbench/faultbench/internal/record"
)

// Sink receives one record.Request per attempt. Record is called from the
// attempts' own goroutines, and (for arrivals refused by MaxInFlight) from
// the clients' scheduling goroutines, many at once: it must be safe for
// concurrent use and should not block for long, since a slow sink holds
// attempts in flight and delays the schedule. Records arrive roughly, not
// strictly, in time order. The Request is passed by value; the sink owns it.
// Record is never called after Run returns.
type Sink interface {
	Record(record.Request)
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(record.Request)

// Record calls f(r).
func (f SinkFunc) Record(r record.Request) { f(r) }

// SendObserver is an optional Sink capability, for benchmarks and progress
// displays: Sent is called, from the attempt's goroutine, when an attempt is
// handed to its driver, with lag = that moment minus its scheduled time.
// Arrivals refused by MaxInFlight, or cut short before they were sent, are
// not sent and not observed.
type SendObserver interface {
	Sent(client int, lag time.Duration)
}

// FlightObserver follows the attempts in flight (live views, the guard's
// inflight_age). Started is called when the generator hands an arrival on
// (from the client's scheduling goroutine, before the arrival waits for a
// worker or a connection), Ended from the attempt's goroutine when the
// driver returned, before the attempt is recorded; at is the attempt's
// scheduled offset from the run's start (its record's StartS). Every Started attempt
// is Ended exactly once. Both must be safe for concurrent use and quick.
type FlightObserver interface {
	Started(client int, at time.Duration)
	Ended(client int, at time.Duration)
}

// drainGrace is how long past every deadline the generator waits for
// attempts (a slow Verify, say) before cutting them short.
const drainGrace = time.Second

// Generator runs the client emulators of one run. Build it with New, run it
// once with Run; Stop and Abandon may be called from any goroutine, any
// number of times.
//
// Every arrival scheduled before the run ends (its length, or the moment
// ctx or Stop cut it) is recorded exactly once: with its outcome; as
// refused by the generator (record.Request.Refused); or, when it had not
// finished by the time Abandon or the drain bound cut it, as cut short
// (record.Request.CutShort) with the time it had waited.
type Generator struct {
	cfg     Config
	targets []resolvedTarget
	trace   Trace
	sink    Sink
	// requests and tls are the http driver's templated requests and HTTPS
	// configuration (nil: GETs of the trace's paths, plain HTTP).
	requests *RequestSet
	tls      *tls.Config
	obs      SendObserver
	// kvHistory is the kv driver's history, from Run's start to its end;
	// nil without Config.KV.History.
	kvHistory *kvcheck.Writer
	flight    FlightObserver

	mu        sync.Mutex
	started   bool
	stopped   bool
	abandoned bool
	cancel    context.CancelFunc // stops scheduling; nil until Run
	abort     context.CancelFunc // cuts attempts in flight short; nil until Run
	cutAt     atomic.Int64       // UnixNano when attempts in flight were cut short; 0 before
	run       runBounds          // set by Run under mu, for load spikes

	offered atomic.Int64 // arrivals handed out so far (load-spike evidence)
	spikes  spikeState
}

// ErrAlreadyRun is returned by Run on a Generator that has run before.
var ErrAlreadyRun = errors.New("workload generator already ran")

// New checks cfg (after WithDefaults), loads the trace, resolves every
// target and applies the safety rule, all before anything is sent. Errors
// wrap ErrConfig, ErrTraceSpec, ErrCLF or ErrRemote.
func New(ctx context.Context, cfg Config, sink Sink) (*Generator, error) {
	cfg = WithDefaults(cfg)
	if err := Validate(cfg); err != nil {
		return nil, err
	}
	if sink == nil {
		return nil, fmt.Errorf("%w: nil sink", ErrConfig)
	}
	var trace Trace = &requestTrace{}
	if cfg.Trace != "" {
		var err error
		if trace, err = loadTrace(cfg); err != nil {
			return nil, err
		}
	}
	reqs, tlsConfig, err := loadRequests(cfg, trace)
	if err != nil {
		return nil, err
	}
	targets, err := resolveTargets(ctx, cfg)
	if err != nil {
		return nil, err
	}
	g := &Generator{cfg: cfg, targets: targets, trace: trace, sink: sink, requests: reqs, tls: tlsConfig}
	g.obs, _ = sink.(SendObserver)
	return g, nil
}

// Run sends the workload from start (the run's t0; a record's StartS is its
// scheduled time minus start) until start+length, or until ctx ends or Stop
// is called, whichever is first. It then waits for the attempts still in
// flight — their own deadlines bound the wait — unless Abandon cuts them
// short, and returns once every arrival up to the end is recorded. It
// returns ctx's error if ctx ended the run early, and nil when it ran to
// its end or Stop ended it.
//
// ctx ending does not abandon the attempts in flight: an interrupted run
// still learns what became of them (the caller should first revert the
// faults that hold them), and calls Abandon when it cannot wait any longer.
func (g *Generator) Run(ctx context.Context, start time.Time, length time.Duration) error {
	schedCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	attemptCtx, abort := context.WithCancel(context.WithoutCancel(ctx))
	defer abort()
	g.mu.Lock()
	if g.started {
		g.mu.Unlock()
		return ErrAlreadyRun
	}
	g.started = true
	g.cancel, g.abort = cancel, abort
	g.run = runBounds{sched: schedCtx, attempts: attemptCtx, start: start, length: length}
	stopped, abandoned := g.stopped, g.abandoned
	g.mu.Unlock()
	if stopped {
		return nil
	}
	if abandoned {
		g.Abandon()
	}

	if g.cfg.KV.History != nil && g.cfg.Driver == "kv" {
		g.kvHistory = kvcheck.NewWriter(g.cfg.KV.History, start)
	}
	var wg sync.WaitGroup
	for c := range g.cfg.Clients {
		if g.cfg.Model == ModelClosed {
			wg.Go(func() { g.closedClient(schedCtx, attemptCtx, c, start, length) })
			continue
		}
		wg.Go(func() { g.client(schedCtx, attemptCtx, c, start, length, newSchedule(g.cfg, g.trace, c), nil) })
	}
	wg.Wait()
	g.endSpikes()
	if g.kvHistory != nil {
		if err := g.kvHistory.Close(); err != nil {
			return fmt.Errorf("writing the kv history: %w", err)
		}
	}
	return ctx.Err()
}

// ObserveFlight sets o to follow the attempts in flight. Call it before Run.
func (g *Generator) ObserveFlight(o FlightObserver) { g.flight = o }

// Stop ends the run early: no new attempts start, and Run returns once the
// attempts in flight have ended (or Abandon cut them short). Safe to call
// twice, and before or after Run.
func (g *Generator) Stop() {
	g.mu.Lock()
	g.stopped = true
	cancel := g.cancel
	g.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Abandon stops the run and cuts every attempt still in flight short: each
// is recorded at once with CutShort set and the time it had waited, and Run
// returns. Safe to call twice, and before or after Run.
func (g *Generator) Abandon() {
	g.mu.Lock()
	g.stopped, g.abandoned = true, true
	cancel, abort := g.cancel, g.abort
	g.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	g.cutAt.CompareAndSwap(0, time.Now().UnixNano())
	abort()
}

// Run is New followed by Generator.Run.
func Run(ctx context.Context, cfg Config, start time.Time, length time.Duration, sink Sink) error {
	g, err := New(ctx, cfg, sink)
	if err != nil {
		return err
	}
	return g.Run(ctx, start, length)
}

// client is one emulator: it walks its schedule (the client's own, or a
// load spike's), sleeping until each arrival, and hands each attempt to a
// goroutine of its own (attemptWorkers). The loop is bounded by the
// run's length; the wait after it by the attempts' deadlines plus
// drainGrace, after which they are cut short.
//
// count, when not nil, counts the arrivals handed out (a spike's own).
func (g *Generator) client(schedCtx, attemptCtx context.Context, c int, start time.Time, length time.Duration, sched *schedule, count *atomic.Int64) {
	driver := g.newDriver(c)
	if closer, ok := driver.(io.Closer); ok {
		defer closer.Close()
	}
	var inFlight atomic.Int64
	var attempts sync.WaitGroup
	sleep := newSleeper(schedCtx)
	defer sleep.close()
	coarse := newTimerSleeper()
	defer coarse.close()
	maxInFlight := int64(g.cfg.MaxInFlight)
	workers := attemptWorkers{do: func(j job) {
		defer attempts.Done()
		defer inFlight.Add(-1)
		g.attempt(attemptCtx, driver, c, j.a, j.when, j.t)
	}}
	if l, ok := driver.(connLimiter); ok && l.connLimit() > 0 {
		workers.laneLimit, workers.lanes = l.connLimit(), make([]lane, len(g.targets))
	}

	a, ok := sched.next()
	for ; ok && a.at < length; a, ok = sched.next() {
		when := start.Add(a.at)
		at := start.Add(paceAt(a.at, g.cfg.PacingTick))
		wake := sleep
		if workers.waiting(a.target) > 0 && time.Until(at) < coarseWaitMax {
			// Its lane already holds arrivals that wait for a worker, and
			// a worker frees only when an answer wakes the process, at
			// which point the runtime checks its timers. So a Go timer,
			// which costs no system call, hands this arrival on no later
			// than it could be sent; the timerfd (a hardware timer armed
			// through the hypervisor on a virtual machine) is kept for
			// waits that may find the process idle. An overloaded run
			// thus gets cheaper per arrival as it falls behind, not
			// dearer (docs/benchmarks.md, "Queued lanes").
			wake = coarse
		}
		if !wake.until(schedCtx, at) {
			break
		}
		t := &g.targets[a.target]
		g.offered.Add(1)
		if count != nil {
			count.Add(1)
		}
		if inFlight.Load() >= maxInFlight {
			waited := time.Since(when).Seconds()
			g.sink.Record(record.Request{StartS: a.at.Seconds(), LatencyS: waited, SendLagS: waited, Outcome: record.ConnError,
				Refused: record.RefusedMaxInFlight, Node: t.Node, Client: c, Target: a.path})
			continue
		}
		inFlight.Add(1)
		attempts.Add(1)
		if g.flight != nil {
			g.flight.Started(c, a.at)
		}
		workers.run(job{a: a, when: when, t: t})
	}
	workers.close()
	if ok && a.at < length && schedCtx.Err() != nil {
		// The run was cut: the arrivals already due that the loop had not
		// reached (it was behind, or asleep for the next one) are part of
		// the run and are recorded, unsent, as cut short.
		cut := time.Now()
		for ; ok && a.at < length && !start.Add(a.at).After(cut); a, ok = sched.next() {
			waited := cut.Sub(start.Add(a.at)).Seconds()
			g.sink.Record(record.Request{StartS: a.at.Seconds(), LatencyS: waited, SendLagS: waited, Outcome: record.ConnError,
				CutShort: true, Node: g.targets[a.target].Node, Client: c, Target: a.path})
		}
	}

	g.drain(&attempts, start, length)
}

// drain waits for a client's attempts. Every attempt has ended by the end
// of the run plus both timeouts; past that (and drainGrace) they are
// abandoned, so the wait is bounded whatever the service does.
func (g *Generator) drain(attempts *sync.WaitGroup, start time.Time, length time.Duration) {
	done := make(chan struct{})
	go func() { attempts.Wait(); close(done) }()
	bound := time.Until(start.Add(length).Add(g.cfg.ConnectTimeout + g.cfg.ResponseTimeout + drainGrace))
	guard := time.NewTimer(max(bound, drainGrace))
	defer guard.Stop()
	select {
	case <-done:
	case <-guard.C:
		g.Abandon()
		<-done
	}
}

// attempt sends one arrival through driver and records it: with its
// outcome, as refused when the driver had no user or connection for it, or
// as cut short when Abandon ended it. It returns when the attempt ended
// (a closed-loop user thinks from then on). The caller has told the
// FlightObserver it Started, when it handed the arrival on.
func (g *Generator) attempt(ctx context.Context, driver Driver, c int, a arrival, when time.Time, t *resolvedTarget) (end time.Time) {
	handed := time.Now()
	if g.obs != nil {
		g.obs.Sent(c, handed.Sub(when))
	}
	r := driver.Do(ctx, Attempt{Scheduled: when, Addr: t.dial, Host: t.host, Target: a.path})
	if g.flight != nil {
		g.flight.Ended(c, a.at)
	}
	req := record.Request{StartS: a.at.Seconds(), Outcome: r.Outcome, Node: t.Node, Client: c, Bytes: r.Bytes, Status: r.Status, Target: a.path, Check: r.Check}
	if r.Target != "" {
		req.Target = r.Target
	}
	sent := r.Sent
	if sent.IsZero() {
		sent = handed
	}
	req.LatencyS, req.SendLagS = r.End.Sub(when).Seconds(), sent.Sub(when).Seconds()
	// An outcome reached after the cut is the cut's doing (a cancelled
	// dial, a deadline forced into the past), not the service's. One
	// reached before it stands, even if Do returned a moment later.
	if cutAt := g.cutAt.Load(); cutAt != 0 && ctx.Err() != nil && r.End.UnixNano() > cutAt {
		cut := time.Unix(0, cutAt)
		req = record.Request{StartS: req.StartS, LatencyS: max(0, cut.Sub(when).Seconds()), Outcome: record.ConnError, CutShort: true,
			Node: t.Node, Client: c, Target: req.Target, SendLagS: max(0, cut.Sub(when).Seconds())}
		if sent.Before(cut) {
			req.SendLagS = max(0, sent.Sub(when).Seconds())
		}
	} else if r.Refused != record.NotRefused {
		req.Refused, req.Outcome, req.SendLagS = r.Refused, record.ConnError, req.LatencyS
	}
	g.sink.Record(req)
	return r.End
}

// A job is one arrival handed to an attempt worker.
type job struct {
	a    arrival
	when time.Time
	t    *resolvedTarget
}

// attemptWorkers runs every attempt of one client in a goroutine of its
// own, as a go statement per attempt would, but keeps the goroutines that
// finish and hands them the next arrivals. A new goroutine costs a stack
// and its growth to the driver's depth on every attempt, the largest
// share of the run's CPU per request that was not a system call; a kept
// one is handed its arrival through a channel. Only the client's
// scheduling goroutine calls run and close.
//
// There are never more workers than attempts were once in flight at the
// same time (MaxInFlight bounds that); an idle worker waits for the next
// arrival or for close, which ends it.
//
// When the driver caps its connections to an address (a connLimiter:
// keep-alive HTTP with max_conns), more workers than connections would
// only wait for one, each in a select with a timer of its own, and an
// overloaded run would spend its CPU starting them. Each target then has
// a lane instead: a queue of its arrivals, first in first out as the
// connection pool's waiters were (past laneBuffer waiting, roughly so),
// served by at most laneLimit workers. A worker always finds its
// connection free, and the wait for one is the time its arrival spent in
// the lane. Lanes are per target, so a node that holds every connection
// to it delays no other node's arrivals.
type attemptWorkers struct {
	do   func(job)
	jobs chan job // unbuffered: a send succeeds only when a worker waits

	laneLimit int    // workers per target; 0: no lanes
	lanes     []lane // by target index
	// overflow counts the goroutines handing on arrivals that found
	// their lane's buffer full; close waits for them.
	overflow sync.WaitGroup
}

// A lane is one target's queue and the number of workers serving it.
type lane struct {
	jobs    chan job
	workers int
}

// laneBuffer is a lane's queue. An arrival that finds it full is handed
// on by a goroutine of its own (attemptWorkers.overflow), so the queue
// holds as many as MaxInFlight without allocating that much up front.
const laneBuffer = 1024

// connLimiter is implemented by drivers that never hold more than
// connLimit connections to one address at once (0: no cap).
type connLimiter interface {
	connLimit() int
}

// run hands j to an idle worker, or starts one for it.
func (w *attemptWorkers) run(j job) {
	if w.laneLimit > 0 {
		w.queue(j)
		return
	}
	if w.jobs == nil {
		w.jobs = make(chan job)
	}
	select {
	case w.jobs <- j:
	default:
		go w.work(j)
	}
}

// queue appends j to its target's lane, starting the lane's next worker
// while it has fewer than laneLimit.
func (w *attemptWorkers) queue(j job) {
	l := &w.lanes[j.a.target]
	if l.jobs == nil {
		l.jobs = make(chan job, laneBuffer)
	}
	if l.workers < w.laneLimit {
		l.workers++
		go w.serve(l.jobs)
	}
	select {
	case l.jobs <- j:
	default:
		w.overflow.Add(1)
		go func() {
			defer w.overflow.Done()
			l.jobs <- j
		}()
	}
}

// coarseWaitMax bounds the waits Generator.client leaves to a Go timer
// because the arrival's lane queues. A queue can drain, and the process
// go idle, before a long wait ends; a Go timer would then wake up to a
// millisecond late (sleep.go), which a burst of Poisson arrivals at a low
// rate would show as send lag. An overloaded client's waits are its
// arrivals' spacing: 50 µs at 20,000/s a client.
const coarseWaitMax = 200 * time.Microsecond

// waiting is how many arrivals for target wait in its lane for a worker
// (0 without lanes).
func (w *attemptWorkers) waiting(target int) int {
	if w.laneLimit == 0 {
		return 0
	}
	return len(w.lanes[target].jobs)
}

// serve runs a lane's jobs until close.
func (w *attemptWorkers) serve(jobs <-chan job) {
	for j := range jobs {
		w.do(j)
	}
}

// work runs j, then every job handed to it, until close.
func (w *attemptWorkers) work(j job) {
	for ok := true; ok; j, ok = <-w.jobs {
		w.do(j)
	}
}

// close ends the idle workers, and each busy one when its attempt ends
// and its lane is empty.
func (w *attemptWorkers) close() {
	if w.jobs != nil {
		close(w.jobs)
	}
	w.overflow.Wait()
	for _, l := range w.lanes {
		if l.jobs != nil {
			close(l.jobs)
		}
	}
}
