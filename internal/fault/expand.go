package fault

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/faultbench/faultbench/internal/law"
	"github.com/faultbench/faultbench/internal/scenario"
)

// Occurrence is one concrete fault of the schedule.
type Occurrence struct {
	ID       int    // 1-based, in order of At; ties fault.inject to fault.clear
	Source   int    // index of the scenario fault it came from
	Type     string // catalogue name
	Node     int    // target node (1-based); 0 when the target is not one node
	Link     []int  // link faults
	Group    [][]int
	Disk     *int
	Scope    string
	At       time.Duration // since the run started
	Duration time.Duration // 0: until repaired (or instantaneous, see Instant)
	Sticky   bool
	Instant  bool
	// Params are the typed parameters the injector receives, decoded and
	// validated from RawParams by NewScheduler (ParseParams); nil before.
	Params Params
	// RawParams are the scenario's params: map, as written.
	RawParams map[string]string
}

// sameTarget reports whether o2 strikes the component o does: the same
// node, disk and link. A second disk-power-fail on another disk of the
// same array is a fault of its own, not a repeat (it was skipped as one).
func (o Occurrence) sameTarget(o2 Occurrence) bool {
	if o.Node != o2.Node || !slices.Equal(o.Link, o2.Link) {
		return false
	}
	if o.Disk == nil || o2.Disk == nil {
		return o.Disk == nil && o2.Disk == nil
	}
	return *o.Disk == *o2.Disk
}

// UntilRepaired reports whether the occurrence stays until a repair.
func (o Occurrence) UntilRepaired() bool { return o.Duration == 0 && !o.Instant }

// Where names the occurrence's target for a message: "node 2",
// "link [1 2]", "groups [[1] [2 3]]", or "the cluster" (a switch, a
// load spike).
func (o Occurrence) Where() string {
	switch {
	case o.Node > 0:
		return fmt.Sprintf("node %d", o.Node)
	case len(o.Link) == 2:
		return fmt.Sprintf("link %v", o.Link)
	case len(o.Group) > 0:
		return fmt.Sprintf("groups %v", o.Group)
	}
	return "the cluster"
}

// Plan is what Expand needs to know about the run.
type Plan struct {
	RunLength time.Duration // occurrences start before this
	Nodes     int           // for node: any
	Boot      time.Duration // how long a crashed or rebooted node is down (default 30s)
}

// maxPerFault bounds the occurrences one recurring entry can expand into.
const maxPerFault = 100000

// Expand unrolls faults into concrete occurrences sorted by time (ties keep
// scenario order). rng supplies every random choice — node: any and the gaps
// of every: LAW — in a fixed order (scenario order, then time), so the same
// seed gives the same schedule. faults are assumed valid (ValidateFault);
// Expand still returns an error for a bad recurrence law or a schedule that
// would exceed maxPerFault occurrences.
func Expand(faults []scenario.Fault, p Plan, rng *rand.Rand) ([]Occurrence, error) {
	if p.Boot <= 0 {
		p.Boot = 30 * time.Second
	}
	var out []Occurrence
	for i, f := range faults {
		t, _ := Lookup(f.Type)
		var recur *law.Law
		if f.Every != "" {
			l, err := law.Parse(f.Every)
			if err != nil {
				return nil, &FieldError{Index: i, Key: "every", Err: err}
			}
			recur = &l
		}
		targets := f.Nodes
		if len(targets) == 0 {
			targets = []int{f.Node.N} // 0 when any or not a node fault
		}
		at := f.At.Duration
		for k := 0; at < p.RunLength || (p.RunLength == 0 && k == 0); k++ {
			if k == maxPerFault {
				return nil, &FieldError{Index: i, Key: "every", Err: fmt.Errorf("%s gives more than %d faults in %v", f.Every, maxPerFault, p.RunLength)}
			}
			occ := Occurrence{Source: i, Type: f.Type, Link: f.Link, Group: f.Group, Disk: f.Disk, Scope: f.Scope,
				At: at, Duration: f.Duration.Duration, Sticky: f.Mode == "sticky", Instant: t.Instant, RawParams: f.Params}
			if occ.Sticky || occ.Instant {
				occ.Duration = 0
			} else if occ.Duration == 0 && (f.Type == "node-crash" || f.Type == "node-reboot") {
				occ.Duration = p.Boot
			}
			for _, n := range targets {
				occ.Node = n
				if f.Node.Any && p.Nodes > 0 {
					occ.Node = 1 + rng.IntN(p.Nodes)
				}
				out = append(out, occ)
			}
			if recur == nil {
				break
			}
			// A renewal process: the gap runs from the clear.
			at += occ.Duration + recur.Draw(rng)
			if recur.Mean == 0 && occ.Duration == 0 {
				break
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Occurrence) int { return cmp.Compare(a.At, b.At) })
	for i := range out {
		out[i].ID = i + 1
	}
	return out, nil
}
