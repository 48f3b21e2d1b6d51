package operator

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/record"
)

// Levers are what the operator does to the cluster; LeversOf finds them on
// a fault target.
type Levers interface {
	KillApp(node int) error
	StartApp(node int) error
	HostDown(node int, graceful bool) error
}

// Repairer learns of finished repairs (fault.Scheduler has it).
type Repairer interface {
	Repaired(now time.Duration, nodes []int, by string) []fault.Occurrence
}

// Operator runs a Machine in real time against a cluster. It is a
// fault.Observer: pass it to the Scheduler (SetObserver) so it hears of
// every injection and clear.
type Operator struct {
	levers Levers
	repair Repairer
	clock  fault.Clock
	emit   func(record.Event)
	wake   chan struct{}

	mu sync.Mutex
	m  *Machine
}

// New returns an operator for a cluster of nodes nodes. rng must be the
// operator's own stream (not the schedule's), so adding a fault does not
// change the operator's response times. emit may be nil.
func New(cfg Config, nodes int, rng *rand.Rand, levers Levers, repair Repairer, clock fault.Clock, emit func(record.Event)) (*Operator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if emit == nil {
		emit = func(record.Event) {}
	}
	return &Operator{levers: levers, repair: repair, clock: clock, emit: emit,
		wake: make(chan struct{}, 1), m: NewMachine(cfg, nodes, rng)}, nil
}

// Injected implements fault.Observer; it never blocks.
func (o *Operator) Injected(now time.Duration, occ fault.Occurrence) {
	o.mu.Lock()
	o.m.Injected(now, occ)
	o.mu.Unlock()
	o.poke()
}

// Cleared implements fault.Observer; it never blocks.
func (o *Operator) Cleared(now time.Duration, occ fault.Occurrence) {
	o.mu.Lock()
	o.m.Cleared(now, occ)
	o.mu.Unlock()
	o.poke()
}

func (o *Operator) poke() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Run performs the operator's steps as they come due until ctx ends, then
// returns the failures of its actions joined (nil if none). An action left
// half done by the end of the run (application killed, not yet started) is
// left so; the cluster is stopped next anyway. Call it once.
func (o *Operator) Run(ctx context.Context) error {
	var errs []error
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		o.mu.Lock()
		next, ok := o.m.Next()
		o.mu.Unlock()
		var due <-chan time.Time
		if ok {
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
			timer.Reset(max(0, next-o.clock.Now()))
			due = timer.C
		}
		select {
		case <-ctx.Done():
			return errors.Join(errs...)
		case <-o.wake:
			continue
		case <-due:
		}
		o.mu.Lock()
		steps := o.m.Advance(o.clock.Now())
		o.mu.Unlock()
		for _, s := range steps {
			if err := o.perform(s); err != nil {
				errs = append(errs, err)
			}
		}
	}
}

// perform carries out one step. Its event goes out before the step acts,
// so the node.down or node.up the action causes follows it in the timeline;
// a lever failure is reported by a second operator.action event.
func (o *Operator) perform(s Step) error {
	now := o.clock.Now()
	ev := record.Event{TS: now.Seconds(), Node: s.Fault.Node, Fault: s.Fault.Type, ID: s.Fault.ID, Kind: "operator.action"}
	switch s.Kind {
	case Detect:
		ev.Kind = "operator.detect"
		ev.Detail = fmt.Sprintf("noticed %s %v after injection", s.Fault.Type, (s.At - s.Fault.At).Round(time.Millisecond))
		switch {
		case s.Busy:
			ev.Detail += "; a repair is already under way"
		case s.Idle:
			ev.Detail += "; " + s.Policy + " has no single node to act on"
		}
		o.emit(ev)
		return nil
	case Begin:
		ev.Detail = fmt.Sprintf("%s begins on node %s", s.Policy, nodeList(s.Nodes))
	case Done:
		ev.Detail = fmt.Sprintf("%s done on node %s", s.Policy, nodeList(s.Nodes))
	}
	o.emit(ev)
	var errs []error
	for _, n := range s.Nodes {
		switch {
		case s.Kind == Done:
			errs = append(errs, o.levers.StartApp(n))
		case s.Policy == RebootNode:
			errs = append(errs, o.levers.HostDown(n, false))
		default:
			errs = append(errs, o.levers.KillApp(n))
		}
	}
	if s.Kind == Done {
		o.repair.Repaired(now, s.Nodes, s.Policy)
	}
	if err := errors.Join(errs...); err != nil {
		ev.Detail = fmt.Sprintf("%s failed on node %s: %v", s.Policy, nodeList(s.Nodes), err)
		o.emit(ev)
		return fmt.Errorf("operator %s: %w", s.Policy, err)
	}
	return nil
}

func nodeList(nodes []int) string {
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ",")
}
