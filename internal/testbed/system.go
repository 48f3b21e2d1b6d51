package testbed

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
)

// System describes one system faultbench can run (cluster.system): a
// reference system of this binary, or the user's own command. A system
// registers its System once, in an init function of its own package; the
// runner, validate, the scenario check and the CLI ask the registry, so
// none of them keeps a list of systems or grows a case per system.
type System struct {
	// Name is the cluster.system value.
	Name string
	// NodeKinds are the `faultbench node` kinds its nodes run.
	NodeKinds []string
	// Levers are the fault levers (fault.Lever*) its Rig's target adds to
	// the backend's.
	Levers []string
	// PageSet: its nodes serve the synthetic page set (package pageset),
	// so the clients verify every body.
	PageSet bool
	// Takes are the cluster keys that describe the user's own program
	// which this system reads: TakesCommand, TakesImage, TakesEnv. A
	// scenario that sets one its system does not take is an error naming
	// the systems that do; whether the system needs it is its Check's to
	// say.
	Takes []string
	// Drivers are the workload drivers (workload.driver) its clients may
	// use; empty: any. Check rejects another with DriverHint, which says
	// why and what to use instead.
	Drivers    []string
	DriverHint string
	// Defaults fills the system's own defaults into the scenario's
	// cluster section (Resolve calls it after the page set's); nil: none.
	Defaults func(c *scenario.ClusterSpec)
	// Check validates the scenario for this system before anything runs,
	// with the addresses the backend plans (stand-ins for the real ones),
	// or a zero Plan when the backend refused the cluster (then Check's
	// errors, if any, stand for the backend's).
	// Every error names file:line (sc.Errorf); the result may join
	// several. Nil: nothing to check beyond the scenario's own rules.
	Check func(sc *scenario.Scenario, plan Plan) error
	// Prepare is called once per run, before the nodes start, with the
	// backend's plan and the scenario's seed. It may fill spec (Port,
	// NodeOptions, Env, Options) and start helpers, which the returned Rig
	// owns. On error nothing is left running. Nil: a plain cluster.
	Prepare func(spec *Spec, plan Plan, seed int64) (Rig, error)
}

// DefaultSystem is the system of a scenario that names none: the static
// page server (Resolve fills it in).
const DefaultSystem = "static"

// AttachSystem is the system of a scenario that names none and attaches
// to running containers (cluster.attach): the user's own image, which the
// docker backend registers.
const AttachSystem = "container"

// The cluster keys a System Takes.
const (
	TakesCommand = "command" // cluster.command: the program and its arguments
	TakesImage   = "image"   // cluster.image: the user's container image
	TakesEnv     = "env"     // cluster.env: environment entries for the user's program
)

// Rig is what a System runs beside one cluster.
type Rig interface {
	// Target is the fault target of the running cluster c: c with the
	// system's extra levers. It must reach c through Unwrap (fault.As),
	// never by embedding, so every lever of c stays found.
	Target(c Cluster) fault.Target
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
	Watch(ctx context.Context, c Cluster, emit func(record.Event))
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
	Sample(ctx context.Context, c Cluster, series func(name string, v float64))
}

var (
	systemsMu sync.Mutex
	systems   = map[string]System{}
)

// RegisterSystem makes s the system of cluster.system s.Name. It panics on
// a duplicate or a nameless system, like http.Handle.
func RegisterSystem(s System) {
	systemsMu.Lock()
	defer systemsMu.Unlock()
	if s.Name == "" {
		panic("testbed: system without a name")
	}
	if _, dup := systems[s.Name]; dup {
		panic("testbed: system registered twice: " + s.Name)
	}
	systems[s.Name] = s
}

// LookupSystem returns the system registered as name ("" is
// DefaultSystem), or an error naming the systems this build can run.
func LookupSystem(name string) (System, error) {
	if name == "" {
		name = DefaultSystem
	}
	systemsMu.Lock()
	defer systemsMu.Unlock()
	if s, ok := systems[name]; ok {
		return s, nil
	}
	return System{}, fmt.Errorf("unknown system %q (this build runs %s)", name, strings.Join(slices.Sorted(maps.Keys(systems)), ", "))
}

// systemsTaking says which registered systems take cluster key key, as
// "system: a or b" (sorted).
func systemsTaking(key string) string {
	systemsMu.Lock()
	defer systemsMu.Unlock()
	var names []string
	for _, name := range slices.Sorted(maps.Keys(systems)) {
		if slices.Contains(systems[name].Takes, key) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return "no system of this build"
	}
	return "system: " + strings.Join(names, " or ")
}

// SystemNames lists the registered systems, sorted.
func SystemNames() []string {
	systemsMu.Lock()
	defer systemsMu.Unlock()
	return slices.Sorted(maps.Keys(systems))
}

// Rig runs s.Prepare, or returns a Rig that adds nothing when s has
// none.
func (s System) Rig(spec *Spec, plan Plan, seed int64) (Rig, error) {
	if s.Prepare == nil {
		return plainRig{}, nil
	}
	rig, err := s.Prepare(spec, plan, seed)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	return rig, nil
}

// plainRig is the Rig of a system with no Prepare: the cluster as it is.
type plainRig struct{}

func (plainRig) Target(c Cluster) fault.Target { return c }
func (plainRig) Close() error                  { return nil }
