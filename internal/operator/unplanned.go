package operator

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/testbed"
)

// UnplannedType is the fault type of a node application that ended when
// nobody asked it to: not the fault schedule, not the operator, not the
// run's stop. It is recorded, analysed, drawn and repaired like any injected
// fault, so that a failure nobody planned is never left unexplained
// (Broadwell (2004) Fig. 9 shows such a "spontaneous hiccup").
const UnplannedType = analysis.UnplannedFault

// ExitWatcher is the capability of a cluster that reports unplanned exits
// (testbed.Cluster, and every rig wrapper around it). Start looks it up; a
// cluster without it has no unplanned faults.
type ExitWatcher interface {
	WatchExits(testbed.ExitObserver)
}

// Unplanned turns unplanned exits into faults: a fault.inject of type
// UnplannedType when a node's application exits on its own, told to the
// operator as an injection, and a fault.clear when the node is repaired by
// the operator's policy or answers again because something else started it.
// It is a testbed.ExitObserver and a Repairer. Its methods never block and
// are safe for concurrent use.
type Unplanned struct {
	clock fault.Clock
	emit  func(record.Event)

	mu      sync.Mutex
	obs     fault.Observer // the operator, told of injections and clears
	nextID  int
	open    map[int]fault.Occurrence // by node: the unplanned fault in effect
	stopped bool
}

// NewUnplanned returns a tracker whose fault IDs start at firstID, past
// every ID of the planned schedule so that each fault.clear pairs with its
// own fault.inject. obs hears of every injection and clear (nil: no one).
func NewUnplanned(firstID int, clock fault.Clock, emit func(record.Event), obs fault.Observer) *Unplanned {
	if emit == nil {
		emit = func(record.Event) {}
	}
	return &Unplanned{clock: clock, emit: emit, obs: obs, nextID: firstID, open: map[int]fault.Occurrence{}}
}

// Exited implements testbed.ExitObserver: node's application ended on its
// own, cause says how. A second exit of a node already failed is ignored.
func (u *Unplanned) Exited(node int, cause string) {
	u.mu.Lock()
	if _, down := u.open[node]; down || u.stopped {
		u.mu.Unlock()
		return
	}
	now := u.clock.Now()
	occ := fault.Occurrence{ID: u.nextID, Type: UnplannedType, Node: node, At: now}
	u.nextID++
	u.open[node] = occ
	u.emit(record.Event{TS: now.Seconds(), Kind: "fault.inject", Node: node, Fault: UnplannedType, ID: occ.ID,
		Detail: fmt.Sprintf("not injected: the application exited on its own (%s)", cause)})
	obs := u.obs
	u.mu.Unlock()
	if obs != nil {
		obs.Injected(now, occ)
	}
}

// Ready implements testbed.ExitObserver: the node answers again, whoever
// started it, so its unplanned fault (if any) is over.
func (u *Unplanned) Ready(node int) {
	u.clear(u.clock.Now(), []int{node}, "the application answers again")
}

// Repaired implements Repairer: the operator's action on nodes is done.
func (u *Unplanned) Repaired(now time.Duration, nodes []int, by string) []fault.Occurrence {
	return u.clear(now, nodes, "repaired by "+by)
}

// Stop clears every unplanned fault still in effect (as the scheduler's
// RevertAll does for planned ones) and ignores later exits: the run's own
// stop ends processes on purpose. Safe twice.
func (u *Unplanned) Stop() {
	u.mu.Lock()
	nodes := make([]int, 0, len(u.open))
	for n := range u.open {
		nodes = append(nodes, n)
	}
	u.stopped = true
	u.mu.Unlock()
	slices.Sort(nodes)
	u.clear(u.clock.Now(), nodes, "run ended")
}

func (u *Unplanned) clear(now time.Duration, nodes []int, why string) []fault.Occurrence {
	var cleared []fault.Occurrence
	u.mu.Lock()
	for _, n := range nodes {
		occ, ok := u.open[n]
		if !ok {
			continue
		}
		delete(u.open, n)
		u.emit(record.Event{TS: now.Seconds(), Kind: "fault.clear", Node: n, Fault: UnplannedType, ID: occ.ID, Detail: why})
		cleared = append(cleared, occ)
	}
	obs := u.obs
	u.mu.Unlock()
	if obs != nil {
		for _, occ := range cleared {
			obs.Cleared(now, occ)
		}
	}
	return cleared
}

// repairers tells every Repairer of a finished repair.
type repairers []Repairer

func (rs repairers) Repaired(now time.Duration, nodes []int, by string) []fault.Occurrence {
	var out []fault.Occurrence
	for _, r := range rs {
		out = append(out, r.Repaired(now, nodes, by)...)
	}
	return out
}

// RestartWatcher is the capability of a cluster that reports restarts
// nobody in the run made (testbed.RestartObserver): a container engine
// restarting a crashed container by its restart policy. Start looks it up.
type RestartWatcher interface {
	WatchRestarts(testbed.RestartObserver)
}

// outsideRepairs turns a restart the run did not make into the recovery
// of the faults it ended: the scheduler's faults that only ended the
// application (fault.Scheduler.Healed) and the node's unplanned fault are
// cleared, "repaired by" whoever restarted it, and the operator, told of
// the clears, drops its pending detection: it does not claim a repair it
// did not make.
type outsideRepairs struct {
	sched     *fault.Scheduler
	unplanned *Unplanned
	clock     fault.Clock
}

func (o outsideRepairs) Restarted(node int, who string) {
	now := o.clock.Now()
	o.sched.Healed(now, node, who)
	o.unplanned.clear(now, []int{node}, "repaired by "+who)
}
