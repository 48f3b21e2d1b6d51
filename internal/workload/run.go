package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

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
// Arrivals refused by MaxInFlight are not sent and not observed.
type SendObserver interface {
	Sent(client int, lag time.Duration)
}

// drainGrace is how long past every deadline the generator waits for
// attempts (a slow Verify, say) before abandoning them.
const drainGrace = time.Second

// Generator runs the client emulators of one run. Build it with New, run it
// once with Run; Stop may be called from any goroutine, any number of times.
type Generator struct {
	cfg     Config
	targets []resolvedTarget
	trace   Trace
	sink    Sink
	obs     SendObserver

	mu      sync.Mutex
	started bool
	stopped bool
	cancel  context.CancelFunc // stops scheduling; nil until Run
	abort   context.CancelFunc // abandons attempts in flight; nil until Run
	dropped atomic.Bool        // set when in-flight results are to be discarded
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
	spec, _ := ParseTraceSpec(cfg.Trace) // Validate parsed it
	trace, err := LoadTrace(spec, cfg.BaseDir)
	if err != nil {
		return nil, err
	}
	targets, err := resolveTargets(ctx, cfg)
	if err != nil {
		return nil, err
	}
	g := &Generator{cfg: cfg, targets: targets, trace: trace, sink: sink}
	g.obs, _ = sink.(SendObserver)
	return g, nil
}

// Run sends the workload from start (the run's t0; a record's StartS is its
// scheduled time minus start) until start+length, then waits for the attempts
// still in flight, which their own deadlines bound, and returns. It returns
// ctx's error if ctx ended the run early, and nil when it ran to its end or
// Stop ended it.
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
	stopped := g.stopped
	g.mu.Unlock()
	if stopped {
		return nil
	}
	// Stop and ctx both abandon attempts in flight; their results are dropped.
	stopWatch := context.AfterFunc(schedCtx, g.drop)
	defer stopWatch()

	var wg sync.WaitGroup
	for c := range g.cfg.Clients {
		wg.Go(func() { g.client(schedCtx, attemptCtx, c, start, length) })
	}
	wg.Wait()
	return ctx.Err()
}

// drop abandons in-flight attempts and discards their results.
func (g *Generator) drop() {
	g.dropped.Store(true)
	g.mu.Lock()
	abort := g.abort
	g.mu.Unlock()
	if abort != nil {
		abort()
	}
}

// Stop ends the run early: no new attempts start, attempts in flight are
// abandoned and not recorded, and Run returns. Safe to call twice, and
// before or after Run.
func (g *Generator) Stop() {
	g.mu.Lock()
	g.stopped = true
	cancel := g.cancel
	g.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Run is New followed by Generator.Run.
func Run(ctx context.Context, cfg Config, start time.Time, length time.Duration, sink Sink) error {
	g, err := New(ctx, cfg, sink)
	if err != nil {
		return err
	}
	return g.Run(ctx, start, length)
}

// client is one emulator: it walks its schedule, sleeping until each
// arrival, and starts a goroutine per attempt. The loop is bounded by the
// run's length; the wait after it by the attempts' deadlines plus drainGrace.
func (g *Generator) client(schedCtx, attemptCtx context.Context, c int, start time.Time, length time.Duration) {
	sched := newSchedule(g.cfg, g.trace, c)
	driver := drivers[g.cfg.Driver](DriverConfig{
		ConnectTimeout:  g.cfg.ConnectTimeout,
		ResponseTimeout: g.cfg.ResponseTimeout,
		Keepalive:       g.cfg.Keepalive,
		MaxConns:        g.cfg.MaxConns,
		Verify:          g.cfg.Verify,
		Client:          c,
		Users:           g.cfg.Users,
		Flow:            g.cfg.Flow,
	})
	if closer, ok := driver.(io.Closer); ok {
		defer closer.Close()
	}
	var inFlight atomic.Int64
	var attempts sync.WaitGroup
	sleep := newSleeper(schedCtx)
	defer sleep.close()
	maxInFlight := int64(g.cfg.MaxInFlight)

	for {
		a, ok := sched.next()
		if !ok || a.at >= length {
			break
		}
		when := start.Add(a.at)
		if !sleep.until(schedCtx, when) {
			break
		}
		t := &g.targets[a.target]
		if inFlight.Load() >= maxInFlight {
			g.sink.Record(record.Request{StartS: a.at.Seconds(), Outcome: record.ConnError, Node: t.Node, Client: c, Target: a.path})
			continue
		}
		inFlight.Add(1)
		attempts.Add(1)
		go func() {
			defer attempts.Done()
			defer inFlight.Add(-1)
			if g.obs != nil {
				g.obs.Sent(c, time.Since(when))
			}
			r := driver.Do(attemptCtx, Attempt{Scheduled: when, Addr: t.dial, Host: t.host, Target: a.path})
			if g.dropped.Load() {
				return
			}
			target := a.path
			if r.Target != "" {
				target = r.Target
			}
			g.sink.Record(record.Request{
				StartS:   a.at.Seconds(),
				LatencyS: r.End.Sub(when).Seconds(),
				Outcome:  r.Outcome,
				Node:     t.Node,
				Client:   c,
				Bytes:    r.Bytes,
				Status:   r.Status,
				Target:   target,
			})
		}()
	}

	done := make(chan struct{})
	go func() { attempts.Wait(); close(done) }()
	// Every attempt has ended by the end of the run plus both timeouts.
	bound := time.Until(start.Add(length).Add(g.cfg.ConnectTimeout + g.cfg.ResponseTimeout + drainGrace))
	guard := time.NewTimer(max(bound, drainGrace))
	defer guard.Stop()
	select {
	case <-done:
	case <-guard.C:
		g.drop()
		<-done
	}
}
