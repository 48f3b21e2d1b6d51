package testbed

import (
	"context"
	"fmt"
	"sync"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
)

// A System adapts the testbed to a reference system whose nodes need more
// than the flags every node gets: helpers started beside the nodes (press's
// faultnet proxies), per-node addresses, fixed ports, a per-run secret,
// fault levers of its own. A system registers one in an init function; the
// runner and the scenario check look the cluster's system up, so neither
// grows a case per system. A system without an entry runs as a plain
// cluster.
type System interface {
	// Check validates the scenario's cluster section for this system
	// before anything runs. Every error names file:line (sc.Errorf); the
	// result may join several.
	Check(sc *scenario.Scenario) error
	// Prepare is called once per run, before the nodes start, with the
	// scenario's seed. It may fill spec (Port, NodeOptions, Env) and start
	// helpers, which the returned Rig owns. On error nothing is left running.
	Prepare(spec *Spec, seed int64) (Rig, error)
}

// Rig is what a System runs beside one cluster.
type Rig interface {
	// Target is the fault target of the running cluster c: c with the
	// system's extra levers. It keeps every lever of c (embed it).
	Target(c *Cluster) fault.Target
	// Close stops the helpers and reverts whatever they still impose
	// (e.g. a cut link). Call it after the faults are reverted and the
	// cluster stopped; safe to call twice.
	Close() error
}

// ClientNodes is an optional Rig capability: the nodes the clients send
// to, when not every node serves clients (ssm: the front ends, not the
// bricks). Without it the clients send to every node.
type ClientNodes interface {
	ClientNodes() []int
}

// Watcher is an optional Rig capability: a loop the system runs beside the
// load (ssm: the Pinpoint monitor, which restarts misbehaving bricks). The
// runner calls Watch once, in a goroutine of its own, when the load starts,
// with the running cluster; ctx ends when the load ends, before the faults
// are reverted, and Watch returns once what it started has finished. emit
// is safe for concurrent use; events carry the run's clock (Spec.Clock).
type Watcher interface {
	Watch(ctx context.Context, c *Cluster, emit func(record.Event))
}

// Sampler is an optional Rig capability: system metric series sampled
// while the load runs (raid: redundancy and reconstruction progress; ssm:
// brick statistics), which become extra columns of windows.csv and a
// second axis of the availability graph. The runner calls Sample once, in
// a goroutine of its own, when the load starts; ctx ends when the load
// ends, and Sample returns once it has stopped sampling. series records v
// for name at the run's current time; it is safe for concurrent use. A
// window holds the last value recorded in it, so sample at least once per
// window (Spec.Window; once a second when zero) to leave no gaps.
type Sampler interface {
	Sample(ctx context.Context, c *Cluster, series func(name string, v float64))
}

var (
	systemsMu sync.Mutex
	systems   = map[string]System{}
)

// RegisterSystem makes s the adapter of cluster.system name. It panics on
// a duplicate, like http.Handle.
func RegisterSystem(name string, s System) {
	systemsMu.Lock()
	defer systemsMu.Unlock()
	if _, dup := systems[name]; dup {
		panic("testbed: system registered twice: " + name)
	}
	systems[name] = s
}

func systemFor(name string) (System, bool) {
	systemsMu.Lock()
	defer systemsMu.Unlock()
	s, ok := systems[name]
	return s, ok
}

// CheckSystem runs the registered System's Check for sc's cluster; nil for
// a system without one.
func CheckSystem(sc *scenario.Scenario) error {
	s, ok := systemFor(sc.Cluster.System)
	if !ok {
		return nil
	}
	return s.Check(sc)
}

// PrepareSystem runs the registered System's Prepare for spec.System, or
// returns a Rig that adds nothing when the system has no entry.
func PrepareSystem(spec *Spec, seed int64) (Rig, error) {
	s, ok := systemFor(spec.System)
	if !ok {
		return plainRig{}, nil
	}
	rig, err := s.Prepare(spec, seed)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.System, err)
	}
	return rig, nil
}

// plainRig is the Rig of a system with no adapter: the cluster as it is.
type plainRig struct{}

func (plainRig) Target(c *Cluster) fault.Target { return c }
func (plainRig) Close() error                   { return nil }
