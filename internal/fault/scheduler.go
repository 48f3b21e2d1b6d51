package fault

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/record"
)

// Clock tells the time since the run started (testbed.Clock satisfies it).
type Clock interface{ Now() time.Duration }

// Observer hears about injections and clears, e.g. the operator. Its methods
// are called without the Scheduler's lock held, from whichever goroutine
// caused the change (Run, Repaired, RevertAll); they must not block.
type Observer interface {
	Injected(now time.Duration, o Occurrence)
	Cleared(now time.Duration, o Occurrence)
}

// Scheduler injects and clears a schedule of occurrences on a target.
//
// Its core is Step, which does everything due at a given time and says when
// the next thing is due, so tests drive it with simulated time; Run is the
// thin real-time loop around it. Repaired and RevertAll may be called from
// other goroutines while Run is running.
type Scheduler struct {
	target   Target
	backend  string
	system   string
	clock    Clock
	emit     func(record.Event)
	observer Observer

	mu       sync.Mutex
	occ      []Occurrence
	next     int             // index of the next occurrence to inject
	active   map[int]*active // by occurrence ID, in effect now
	reverted bool            // RevertAll ran: inject nothing more
	errs     []error
}

type active struct {
	occ       Occurrence
	revert    Revert
	onlyHeals bool // the revert only restarts things: RevertAll skips it
}

// SchedulerConfig wires a Scheduler.
type SchedulerConfig struct {
	Backend, System string             // to pick each type's injector ("" backend = local)
	Clock           Clock              // time since run start
	Emit            func(record.Event) // fault.inject, fault.clear, fault.skip, fault.error; may be nil
	Observer        Observer           // may be nil
}

// NewScheduler prepares occ (as returned by Expand, sorted by At), decoding
// each occurrence's parameters for its injector (it does not modify occ).
// It fails if some occurrence's type has no injector for the backend and
// system, or parameters that injector rejects.
func NewScheduler(occ []Occurrence, t Target, cfg SchedulerConfig) (*Scheduler, error) {
	occ = slices.Clone(occ)
	if err := bindParams(occ, func(typ string) (Injector, error) { return injectorFor(typ, cfg.Backend, cfg.System) }); err != nil {
		return nil, err
	}
	if cfg.Emit == nil {
		cfg.Emit = func(record.Event) {}
	}
	return &Scheduler{target: t, backend: cfg.Backend, system: cfg.System, clock: cfg.Clock, emit: cfg.Emit,
		observer: cfg.Observer, occ: occ, active: map[int]*active{}}, nil
}

// SetObserver sets the observer; call it before Run.
func (s *Scheduler) SetObserver(o Observer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.observer = o
}

func (s *Scheduler) event(now time.Duration, kind string, o Occurrence, detail string) {
	s.emit(record.Event{TS: now.Seconds(), Kind: kind, Node: o.Node, Fault: o.Type, Detail: detail, ID: o.ID})
}

// notice is an observer call to make once the lock is released.
type notice struct {
	inject bool
	occ    Occurrence
}

func (s *Scheduler) tell(now time.Duration, ns []notice) {
	s.mu.Lock()
	obs := s.observer
	s.mu.Unlock()
	if obs == nil {
		return
	}
	for _, n := range ns {
		if n.inject {
			obs.Injected(now, n.occ)
		} else {
			obs.Cleared(now, n.occ)
		}
	}
}

// Step clears every transient fault whose time has come, then injects every
// occurrence due at now (in that order, so a recurring fault that resumes at
// the instant it cleared is not skipped). It returns the time the next thing
// is due, or ok = false when nothing more is scheduled (faults lasting until
// repaired may still be active). An inject failure is recorded as a
// fault.error event and kept for Err; the schedule goes on.
func (s *Scheduler) Step(ctx context.Context, now time.Duration) (next time.Duration, ok bool) {
	s.mu.Lock()
	var ns []notice
	for _, id := range s.dueClears(now) {
		a := s.active[id]
		delete(s.active, id)
		// The event goes first, so the timeline reads in order: the node.up
		// the revert causes follows its fault.clear.
		s.event(now, "fault.clear", a.occ, "duration over")
		if err := a.revert(); err != nil {
			s.failed(now, a.occ, "clear", err)
		}
		ns = append(ns, notice{occ: a.occ})
	}
	for !s.reverted && s.next < len(s.occ) && s.occ[s.next].At <= now {
		o := s.occ[s.next]
		s.next++
		if n, ok := s.injectLocked(ctx, now, o); ok {
			ns = append(ns, n)
		}
	}
	next, ok = s.nextLocked()
	s.mu.Unlock()
	s.tell(now, ns)
	return next, ok
}

func (s *Scheduler) injectLocked(ctx context.Context, now time.Duration, o Occurrence) (notice, bool) {
	for _, a := range s.active {
		if a.occ.Type == o.Type && a.occ.sameTarget(o) {
			s.event(now, "fault.skip", o, fmt.Sprintf("still in effect as fault %d", a.occ.ID))
			return notice{}, false
		}
	}
	inj, err := injectorFor(o.Type, s.backend, s.system)
	if err != nil {
		s.failed(now, o, "inject", err)
		return notice{}, false
	}
	detail := "until repaired"
	switch {
	case o.Instant:
		detail = "maintenance event"
	case o.Duration > 0:
		detail = "for " + o.Duration.String()
	}
	// The event goes first, so the node.down the injection causes follows
	// it in the timeline; a failure is reported right after as fault.error.
	s.event(now, "fault.inject", o, detail)
	revert, err := inj.Inject(ctx, s.target, o)
	if err != nil {
		s.failed(now, o, "inject", err)
		return notice{}, false
	}
	if !o.Instant {
		h, isHealer := inj.(Healer)
		s.active[o.ID] = &active{occ: o, revert: revert, onlyHeals: isHealer && h.RevertOnlyHeals()}
	}
	return notice{inject: true, occ: o}, true
}

// failed records a failure to inject, clear or revert o: a fault.error
// event, and an error kept for Err, which it also returns. The event's
// detail begins with the step that failed ("inject", "clear", "revert"),
// the fault and its target (record.RevertFailed reads it).
func (s *Scheduler) failed(now time.Duration, o Occurrence, what string, err error) error {
	err = fmt.Errorf("%s %s on %s: %w", what, o.Type, o.Where(), err)
	s.errs = append(s.errs, err)
	s.event(now, "fault.error", o, err.Error())
	return err
}

// dueClears lists, in ID order, the active transient faults due by now.
func (s *Scheduler) dueClears(now time.Duration) []int {
	var ids []int
	for id, a := range s.active {
		if a.occ.Duration > 0 && a.occ.At+a.occ.Duration <= now {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func (s *Scheduler) nextLocked() (time.Duration, bool) {
	var next time.Duration
	ok := false
	consider := func(t time.Duration) {
		if !ok || t < next {
			next, ok = t, true
		}
	}
	if !s.reverted && s.next < len(s.occ) {
		consider(s.occ[s.next].At)
	}
	for _, a := range s.active {
		if a.occ.Duration > 0 {
			consider(a.occ.At + a.occ.Duration)
		}
	}
	return next, ok
}

// Run drives the schedule in real time by the clock until nothing more is
// scheduled or ctx ends. It returns nil then, or the inject and clear
// failures joined (see Step). Call it once, from one goroutine.
func (s *Scheduler) Run(ctx context.Context) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		next, ok := s.Step(ctx, s.clock.Now())
		if !ok {
			return s.Err()
		}
		if wait := next - s.clock.Now(); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return s.Err()
			case <-timer.C:
			}
		} else if ctx.Err() != nil {
			return s.Err()
		}
	}
}

// Err returns the inject and clear failures so far, joined.
func (s *Scheduler) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.errs...)
}

// Active lists the faults in effect, in ID order; the caller owns the slice.
func (s *Scheduler) Active() []Occurrence {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int
	for id := range s.active {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]Occurrence, len(ids))
	for i, id := range ids {
		out[i] = s.active[id].occ
	}
	return out
}

// Repaired records that a repair at now (a restart or reboot, named by by)
// restored nodes: every fault in effect on one of them is cleared with a
// fault.clear event "repaired by ...", and its scheduled clear is dropped.
// The Revert of a Healer is not called (the repair already restarted what
// it would); any other Revert is, since it may undo something a restart
// does not (it is idempotent, and harmless on a fresh process). Faults that
// target no single node (links, partitions) are not touched. It returns the
// cleared occurrences.
func (s *Scheduler) Repaired(now time.Duration, nodes []int, by string) []Occurrence {
	s.mu.Lock()
	var cleared []Occurrence
	var ns []notice
	for _, id := range s.activeIDs() {
		a := s.active[id]
		if !containsNode(nodes, a.occ.Node) {
			continue
		}
		delete(s.active, id)
		s.event(now, "fault.clear", a.occ, "repaired by "+by)
		if !a.onlyHeals {
			if err := a.revert(); err != nil {
				s.failed(now, a.occ, "revert", err)
			}
		}
		cleared = append(cleared, a.occ)
		ns = append(ns, notice{occ: a.occ})
	}
	s.mu.Unlock()
	s.tell(now, ns)
	return cleared
}

// Healed records that something outside the run (a container engine's
// restart policy) started node's application again at now: every fault in
// effect on node whose Revert only heals (Healer: it ended the
// application, and that restart did what its Revert would) is cleared
// with a fault.clear event "repaired by WHO", and its scheduled clear is
// dropped; its Revert is not called. The node's other faults (a stopped
// process, a rule) stay in effect. It returns the cleared occurrences.
func (s *Scheduler) Healed(now time.Duration, node int, who string) []Occurrence {
	s.mu.Lock()
	var cleared []Occurrence
	var ns []notice
	for _, id := range s.activeIDs() {
		a := s.active[id]
		if a.occ.Node != node || node == 0 || !a.onlyHeals {
			continue
		}
		delete(s.active, id)
		s.event(now, "fault.clear", a.occ, "repaired by "+who)
		cleared = append(cleared, a.occ)
		ns = append(ns, notice{occ: a.occ})
	}
	s.mu.Unlock()
	s.tell(now, ns)
	return cleared
}

// RevertAll reverts every fault still in effect and stops injecting: stopped
// processes are continued; faults whose revert would only restart something
// (Healer: a crashed application, a downed host) are left as they are, since
// the cluster is about to stop. Each gets its fault.clear event. It is for the end of a run and for an interrupt: safe to call
// twice, concurrently with Run, and after the cluster stopped.
func (s *Scheduler) RevertAll() error {
	now := time.Duration(0)
	if s.clock != nil {
		now = s.clock.Now()
	}
	s.mu.Lock()
	s.reverted = true
	var errs []error
	var ns []notice
	for _, id := range s.activeIDs() {
		a := s.active[id]
		delete(s.active, id)
		if a.onlyHeals {
			s.event(now, "fault.clear", a.occ, "run ended; left as it is")
		} else {
			s.event(now, "fault.clear", a.occ, "reverted at end of run")
			if err := a.revert(); err != nil {
				errs = append(errs, s.failed(now, a.occ, "revert", err))
			}
		}
		ns = append(ns, notice{occ: a.occ})
	}
	s.mu.Unlock()
	s.tell(now, ns)
	return errors.Join(errs...)
}

func (s *Scheduler) activeIDs() []int {
	ids := make([]int, 0, len(s.active))
	for id := range s.active {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func containsNode(nodes []int, n int) bool {
	return n != 0 && slices.Contains(nodes, n)
}
