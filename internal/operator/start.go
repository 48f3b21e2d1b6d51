package operator

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
)

// Random streams of the scenario seed (PCG(seed, stream)), the same as the
// runner's. Faults and operator draw from separate streams, so adding a
// fault does not change the operator's response times and vice versa.
const (
	StreamFaults   = 1
	StreamOperator = 2
)

// Run is a scenario's fault schedule and operator, running.
type Run struct {
	sched     *fault.Scheduler
	unplanned *Unplanned
	occ       []fault.Occurrence
	cancel    context.CancelFunc
	wg        sync.WaitGroup

	once sync.Once
	mu   sync.Mutex
	errs []error
}

// Start validates sc's faults and operator, expands the schedule with the
// scenario seed, and runs the scheduler and the operator, each in its own
// goroutine, until ctx ends or Stop. clock must read 0 at the run's start;
// emit receives fault.* and operator.* events from those goroutines (and
// from the caller's, in Stop). Errors are bad input (a fault the backend or
// system cannot inject, a bad law), each naming the fault's index and key.
//
// The operator's levers are looked up on c with fault.As (through any
// wrappers a system's rig put around the backend's cluster); a repair
// needing a lever c lacks fails with fault.ErrUnsupported.
func Start(ctx context.Context, sc *scenario.Scenario, c fault.Target, clock fault.Clock, emit func(record.Event)) (*Run, error) {
	if err := fault.Validate(sc); err != nil {
		return nil, err
	}
	occ, err := fault.Expand(sc.Faults, fault.Plan{RunLength: sc.Length(), Nodes: sc.Cluster.Nodes, Boot: sc.Cluster.Boot.Duration},
		rand.New(rand.NewPCG(uint64(sc.Seed), StreamFaults)))
	if err != nil {
		return nil, err
	}
	sched, err := fault.NewScheduler(occ, c, fault.SchedulerConfig{Backend: sc.Cluster.Backend, System: sc.Cluster.System, Clock: clock, Emit: emit})
	if err != nil {
		return nil, err
	}
	cfg, err := FromScenario(sc.Operator, sc.Cluster.Boot.Duration)
	if err != nil {
		return nil, err
	}
	// Unplanned exits are faults too; their IDs follow the schedule's.
	unplanned := NewUnplanned(len(occ)+1, clock, emit, nil)
	op, err := New(cfg, sc.Cluster.Nodes, rand.New(rand.NewPCG(uint64(sc.Seed), StreamOperator)), LeversOf(c),
		repairers{sched, unplanned}, clock, emit)
	if err != nil {
		return nil, err
	}
	sched.SetObserver(op)
	unplanned.obs = op
	if w, ok := fault.As[ExitWatcher](c); ok {
		w.WatchExits(unplanned)
	}
	if w, ok := fault.As[RestartWatcher](c); ok {
		w.WatchRestarts(outsideRepairs{sched: sched, unplanned: unplanned, clock: clock})
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &Run{sched: sched, occ: occ, cancel: cancel, unplanned: unplanned}
	r.wg.Add(2)
	go func() { defer r.wg.Done(); r.fail(sched.Run(ctx)) }()
	go func() { defer r.wg.Done(); r.fail(op.Run(ctx)) }()
	return r, nil
}

// LeversOf finds the operator's levers on t (fault.As): its application
// lever and its host lever, each possibly on a different target of the
// Unwrap chain. A lever t lacks returns fault.ErrUnsupported when used.
func LeversOf(t fault.Target) Levers {
	var l foundLevers
	l.app, l.hasApp = fault.As[fault.AppLever](t)
	l.host, l.hasHost = fault.As[fault.HostLever](t)
	return l
}

type foundLevers struct {
	app     fault.AppLever
	host    fault.HostLever
	hasApp  bool
	hasHost bool
}

func (l foundLevers) KillApp(n int) error {
	if !l.hasApp {
		return fmt.Errorf("operator: kill node %d's application: %w", n, fault.ErrUnsupported)
	}
	return l.app.KillApp(n)
}

func (l foundLevers) StartApp(n int) error {
	if !l.hasApp {
		return fmt.Errorf("operator: start node %d's application: %w", n, fault.ErrUnsupported)
	}
	return l.app.StartApp(n)
}

func (l foundLevers) HostDown(n int, graceful bool) error {
	if !l.hasHost {
		return fmt.Errorf("operator: take node %d's host down: %w", n, fault.ErrUnsupported)
	}
	return l.host.HostDown(n, graceful)
}

func (r *Run) fail(err error) {
	if err != nil {
		r.mu.Lock()
		r.errs = append(r.errs, err)
		r.mu.Unlock()
	}
}

// Schedule is the expanded fault schedule; the caller must not modify it.
func (r *Run) Schedule() []fault.Occurrence { return r.occ }

// Stop ends the schedule and the operator, waits for them, and reverts
// every fault still in effect (stopped processes are continued; crashed
// ones are left down for the cluster's Stop). Unplanned faults still in
// effect are cleared, and later exits are the run's own stop. Call it
// before stopping the cluster and before closing the event log. Safe to
// call twice and from any goroutine, e.g. on an interrupt.
func (r *Run) Stop() {
	r.once.Do(func() {
		r.cancel()
		r.wg.Wait()
		r.fail(r.sched.RevertAll())
		r.unplanned.Stop()
	})
}

// Err returns what went wrong while injecting, clearing, repairing and
// reverting, joined; nil if nothing did. Complete after Stop.
func (r *Run) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}
