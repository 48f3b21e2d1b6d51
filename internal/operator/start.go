package operator

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
)

// Cluster is what a whole fault run needs of the cluster: the fault target
// and the operator's levers (testbed.Cluster is one).
type Cluster interface {
	fault.Target
	Levers
}

// Random streams of the scenario seed (PCG(seed, stream)), the same as the
// runner's. Faults and operator draw from separate streams, so adding a
// fault does not change the operator's response times and vice versa.
const (
	StreamFaults   = 1
	StreamOperator = 2
)

// Run is a scenario's fault schedule and operator, running.
type Run struct {
	sched  *fault.Scheduler
	occ    []fault.Occurrence
	cancel context.CancelFunc
	wg     sync.WaitGroup

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
func Start(ctx context.Context, sc *scenario.Scenario, c Cluster, clock fault.Clock, emit func(record.Event)) (*Run, error) {
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
	op, err := New(cfg, sc.Cluster.Nodes, rand.New(rand.NewPCG(uint64(sc.Seed), StreamOperator)), c, sched, clock, emit)
	if err != nil {
		return nil, err
	}
	sched.SetObserver(op)
	ctx, cancel := context.WithCancel(ctx)
	r := &Run{sched: sched, occ: occ, cancel: cancel}
	r.wg.Add(2)
	go func() { defer r.wg.Done(); r.fail(sched.Run(ctx)) }()
	go func() { defer r.wg.Done(); r.fail(op.Run(ctx)) }()
	return r, nil
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
// ones are left down for the cluster's Stop). Call it before stopping the
// cluster and before closing the event log. Safe to call twice and from any
// goroutine, e.g. on an interrupt.
func (r *Run) Stop() {
	r.once.Do(func() {
		r.cancel()
		r.wg.Wait()
		r.fail(r.sched.RevertAll())
	})
}

// Err returns what went wrong while injecting, clearing, repairing and
// reverting, joined; nil if nothing did. Complete after Stop.
func (r *Run) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}
