package fault

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/law"
	"github.com/faultbench/faultbench/internal/scenario"
)

// Target kinds: what a fault type aims at.
const (
	TargetNode    = "node"    // node: N | nodes: [..] | node: any
	TargetLink    = "link"    // link: [a, b], or node: N for every link of the node
	TargetGroup   = "group"   // group: [[..], [..]]
	TargetDisk    = "disk"    // node plus disk: N
	TargetCluster = "cluster" // the whole cluster, no target
)

// Type describes one fault type of DESIGN §4.
type Type struct {
	Name     string
	Category string // node | application | network | resource | bug | disk | workload | maintenance
	Target   string // one of the Target* kinds
	Instant  bool   // a maintenance event: no duration, no clear
}

// Types is the catalogue of every fault type faultbench knows, in DESIGN §4
// order. Knowing a type does not mean every backend and system can inject
// it: see Supported.
var Types = func() []Type {
	var ts []Type
	add := func(category, target string, instant bool, names ...string) {
		for _, n := range names {
			ts = append(ts, Type{Name: n, Category: category, Target: target, Instant: instant})
		}
	}
	add("node", TargetNode, false, "node-crash", "node-freeze", "node-reboot")
	add("application", TargetNode, false, "app-crash", "app-hang")
	add("network", TargetLink, false, "link-down", "link-flaky")
	add("network", TargetCluster, false, "switch-down")
	add("network", TargetGroup, false, "partition")
	add("network", TargetLink, false, "delay", "loss", "bandwidth")
	add("resource", TargetNode, false, "mem-alloc-fail", "mem-pressure", "cpu-hog", "slow")
	add("bug", TargetNode, false, "bad-param-null", "bad-param-offset", "bad-param-size", "bitflip")
	add("disk", TargetDisk, false, "disk-read-correctable", "disk-read-uncorrectable", "disk-write-correctable",
		"disk-write-uncorrectable", "disk-hw-error", "disk-illegal-command", "disk-hang-read", "disk-hang-write",
		"disk-hang-idle", "disk-power-fail", "disk-remove")
	add("workload", TargetCluster, false, "load-spike")
	add("maintenance", TargetDisk, true, "replace-disk", "start-reconstruction", "remove-wrong-disk")
	add("maintenance", TargetNode, true, "restart-node")
	add("maintenance", TargetCluster, true, "restart-all")
	return ts
}()

// Lookup returns the catalogue entry of a fault type.
func Lookup(name string) (Type, bool) {
	i := slices.IndexFunc(Types, func(t Type) bool { return t.Name == name })
	if i < 0 {
		return Type{}, false
	}
	return Types[i], true
}

// Support says where an injector works.
type Support struct {
	Backends []string // e.g. {"local"}; "" in a scenario means local
	Systems  []string // empty: every system
}

func (s Support) covers(backend, system string) bool {
	return slices.Contains(s.Backends, backend) && (len(s.Systems) == 0 || slices.Contains(s.Systems, system))
}

type registration struct {
	injector Injector
	support  Support
}

var (
	regMu    sync.Mutex
	registry = map[string][]registration{}
)

// Register adds an injector for a catalogue fault type where s says it
// works. A type may be registered several times with different Support
// (e.g. local process faults here, container faults by the docker backend);
// the first registration whose Support covers a backend and system wins.
// It panics on a type missing from the catalogue: add it to Types first.
func Register(typ string, inj Injector, s Support) {
	if _, ok := Lookup(typ); !ok {
		panic("fault: Register of a type not in the catalogue: " + typ)
	}
	regMu.Lock()
	defer regMu.Unlock()
	registry[typ] = append(registry[typ], registration{injector: inj, support: s})
}

// injectorFor returns the injector of typ for a backend and system, or an
// error naming all three.
func injectorFor(typ, backend, system string) (Injector, error) {
	if backend == "" {
		backend = "local"
	}
	if _, ok := Lookup(typ); !ok {
		names := make([]string, len(Types))
		for i, t := range Types {
			names[i] = t.Name
		}
		return nil, fmt.Errorf("unknown fault type %q (known: %s)", typ, strings.Join(names, ", "))
	}
	regMu.Lock()
	defer regMu.Unlock()
	for _, r := range registry[typ] {
		if r.support.covers(backend, system) {
			return r.injector, nil
		}
	}
	return nil, fmt.Errorf("fault %s cannot be injected by backend %s into system %s (%s)", typ, backend, system, supportedHint(backend, system))
}

func supportedHint(backend, system string) string {
	var ok []string
	for _, name := range slices.Sorted(maps.Keys(registry)) {
		for _, r := range registry[name] {
			if r.support.covers(backend, system) {
				ok = append(ok, name)
				break
			}
		}
	}
	if len(ok) == 0 {
		return "it supports no fault yet"
	}
	return "it supports " + strings.Join(ok, ", ")
}

// Supported reports whether backend ("" = local) can inject typ into system;
// the error names the type, the backend and the system.
func Supported(typ, backend, system string) error {
	_, err := injectorFor(typ, backend, system)
	return err
}

// FieldError is a problem with one key of one fault entry; the scenario
// loader maps Index and Key to a file line.
type FieldError struct {
	Index int    // position in scenario.Faults
	Key   string // YAML key, e.g. "node", "every"; "" for the entry as a whole
	Err   error
}

func (e *FieldError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("faults[%d]: %v", e.Index, e.Err)
	}
	return fmt.Sprintf("faults[%d].%s: %v", e.Index, e.Key, e.Err)
}

func (e *FieldError) Unwrap() error { return e.Err }

// Validate checks every fault of sc and returns all problems joined, each a
// *FieldError. The run length is the sum of the phases (no check when there
// are none).
func Validate(sc *scenario.Scenario) error {
	var runLength time.Duration
	for _, p := range sc.Phases {
		runLength += p.Duration.Duration
	}
	var errs []error
	for i, f := range sc.Faults {
		errs = append(errs, ValidateFault(i, f, sc.Cluster, runLength))
	}
	return errors.Join(errs...)
}

// ValidateFault checks fault number index of a scenario whose cluster is c
// and whose run lasts runLength (0: unknown).
func ValidateFault(index int, f scenario.Fault, c scenario.Cluster, runLength time.Duration) error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &FieldError{Index: index, Key: key, Err: fmt.Errorf(format, args...)})
	}
	t, known := Lookup(f.Type)
	if _, err := injectorFor(f.Type, c.Backend, c.System); err != nil {
		bad("type", "%v", err)
	}
	if !known {
		return errors.Join(errs...)
	}
	inRange := func(key string, n int) {
		if n < 1 || n > c.Nodes {
			bad(key, "no node %d: the cluster has nodes 1..%d", n, c.Nodes)
		}
	}
	switch t.Target {
	case TargetNode, TargetDisk:
		switch {
		case f.Node.IsSet() && len(f.Nodes) > 0:
			bad("nodes", "give node or nodes, not both")
		case !f.Node.IsSet() && len(f.Nodes) == 0:
			bad("node", "%s needs a target: node: N, nodes: [..] or node: any", f.Type)
		case f.Node.IsSet() && !f.Node.Any:
			inRange("node", f.Node.N)
		}
		for _, n := range f.Nodes {
			inRange("nodes", n)
		}
		if t.Target == TargetDisk && f.Disk == nil {
			bad("disk", "%s needs disk: N", f.Type)
		}
	case TargetLink:
		// node: N instead of a link means every link of node N: its cable or
		// NIC, the "link down" of seed 000 Table 1.
		switch {
		case len(f.Link) == 0 && f.Node.IsSet() && len(f.Nodes) == 0:
			if !f.Node.Any {
				inRange("node", f.Node.N)
			}
		case len(f.Link) != 2 || f.Link[0] == f.Link[1]:
			bad("link", "%s needs link: [a, b] with two different nodes, or node: N for every link of node N", f.Type)
		case f.Node.IsSet() || len(f.Nodes) > 0:
			bad("node", "give link: [a, b] or node: N, not both")
		}
		for _, n := range f.Link {
			inRange("link", n)
		}
	case TargetGroup:
		if len(f.Group) < 2 {
			bad("group", "%s needs group: [[..], [..]] with at least two sides", f.Type)
		}
		for _, side := range f.Group {
			for _, n := range side {
				inRange("group", n)
			}
		}
	}
	if f.At.Duration < 0 {
		bad("at", "negative time %v", f.At)
	} else if runLength > 0 && f.At.Duration >= runLength {
		bad("at", "%v is not before the end of the run (%v)", f.At, runLength)
	}
	if f.Duration.Duration < 0 {
		bad("duration", "negative duration %v", f.Duration)
	}
	switch f.Mode {
	case "", "transient", "sticky":
	default:
		bad("mode", "mode %q: want transient or sticky", f.Mode)
	}
	if f.Mode == "sticky" && f.Duration.Duration > 0 {
		bad("duration", "a sticky fault lasts until repaired: drop duration or use mode: transient")
	}
	if t.Instant && (f.Duration.Duration > 0 || f.Mode == "sticky") {
		bad("duration", "%s is an instantaneous maintenance event: it takes no duration or mode", f.Type)
	}
	if f.Every != "" {
		l, err := law.Parse(f.Every)
		switch {
		case err != nil:
			bad("every", "%v", err)
		case l.Name == "exponential":
			bad("every", "use poisson(MEAN) for exponential gaps between faults")
		case l.Mean <= 0:
			bad("every", "the interval must be positive")
		}
	}
	return errors.Join(errs...)
}
