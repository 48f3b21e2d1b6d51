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

// Target kinds: what a fault type aims at (scenario.Target*).
const (
	TargetNode    = scenario.TargetNode
	TargetLink    = scenario.TargetLink
	TargetGroup   = scenario.TargetGroup
	TargetDisk    = scenario.TargetDisk
	TargetCluster = scenario.TargetCluster
)

// Type describes one fault type of docs/scenario.md (scenario.FaultType).
type Type = scenario.FaultType

// Types is the catalogue of every fault type faultbench knows
// (scenario.Catalogue, the one list). Knowing a type does not mean every
// backend and system can inject it: see Supported.
var Types = scenario.Catalogue

// Lookup returns the catalogue entry of a fault type.
func Lookup(name string) (Type, bool) { return scenario.LookupFault(name) }

// Support says what an injector needs: the levers it looks up on the
// target (Lever*), and the systems whose nodes it understands.
type Support struct {
	Levers  []string // every lever the injector uses, offered by the backend or the system
	Systems []string // empty: every system
}

func (s Support) coversSystem(system string) bool {
	return len(s.Systems) == 0 || slices.Contains(s.Systems, system)
}

type registration struct {
	injector Injector
	support  Support
}

var (
	regMu    sync.Mutex
	registry = map[string][]registration{}
)

// Register adds an injector for a catalogue fault type with what it needs.
// A type may be registered several times for different systems (e.g.
// link-down by press and by ssm, each over its own links); the first
// registration that covers a system wins. It panics on a type missing from
// the catalogue: add it to Types first.
func Register(typ string, inj Injector, s Support) {
	if _, ok := Lookup(typ); !ok {
		panic("fault: Register of a type not in the catalogue: " + typ)
	}
	regMu.Lock()
	defer regMu.Unlock()
	registry[typ] = append(registry[typ], registration{injector: inj, support: s})
}

// registrationFor returns the registration of typ for system, or an error
// naming the type, the backend and the system.
func registrationFor(typ, backend, system string) (registration, error) {
	if backend == "" {
		backend = "local"
	}
	if _, ok := Lookup(typ); !ok {
		names := make([]string, len(Types))
		for i, t := range Types {
			names[i] = t.Name
		}
		return registration{}, fmt.Errorf("unknown fault type %q (known: %s)", typ, strings.Join(names, ", "))
	}
	regMu.Lock()
	defer regMu.Unlock()
	for _, r := range registry[typ] {
		if r.support.coversSystem(system) {
			return r, nil
		}
	}
	return registration{}, fmt.Errorf("fault %s cannot be injected by backend %s into system %s (%s)", typ, backend, system, supportedHint(system))
}

// injectorFor returns the injector of typ for a system. The backend is
// named in the error only: whether it can serve the fault is a question
// of levers (Offer.Check), asked before the run.
func injectorFor(typ, backend, system string) (Injector, error) {
	r, err := registrationFor(typ, backend, system)
	if err != nil {
		return nil, err
	}
	return r.injector, nil
}

func supportedHint(system string) string {
	var ok []string
	for _, name := range slices.Sorted(maps.Keys(registry)) {
		for _, r := range registry[name] {
			if r.support.coversSystem(system) {
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

// Offer is what a run can give the injectors: the levers of the backend's
// cluster and those the system's rig adds.
type Offer struct {
	Backend       string
	BackendLevers []string
	System        string
	SystemLevers  []string
}

// Check reports whether typ can be injected with what o offers: a
// registration for o.System whose every lever the backend or the system
// offers. The error names the fault, the missing lever, the backend and
// the system.
func (o Offer) Check(typ string) error {
	r, err := registrationFor(typ, o.Backend, o.System)
	if err != nil {
		return err
	}
	var missing []string
	for _, l := range r.support.Levers {
		if !slices.Contains(o.BackendLevers, l) && !slices.Contains(o.SystemLevers, l) {
			missing = append(missing, l)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("fault %s needs the %s lever, which neither backend %s (offers %s) nor system %s (offers %s) has",
			typ, strings.Join(missing, " and "), o.Backend, leverList(o.BackendLevers), o.System, leverList(o.SystemLevers))
	}
	return nil
}

func leverList(ls []string) string {
	if len(ls) == 0 {
		return "none"
	}
	return strings.Join(ls, ", ")
}

// Supported reports whether system can take typ at all (some registration
// covers it); the error names the type, the backend and the system. What
// the backend can serve is Offer.Check's question.
func Supported(typ, backend, system string) error {
	_, err := injectorFor(typ, backend, system)
	return err
}

// FieldError is a problem with one key of one fault entry; the scenario
// loader maps Index and Key to a file line.
type FieldError struct {
	Index int    // position in scenario.Faults
	Key   string // YAML key, e.g. "node", "every", "params.delay"; "" for the entry as a whole
	Err   error
}

func (e *FieldError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("faults[%d]: %v", e.Index, e.Err)
	}
	return fmt.Sprintf("faults[%d].%s: %v", e.Index, e.Key, e.Err)
}

func (e *FieldError) Unwrap() error { return e.Err }

// Path is the key path of the problem in the scenario file, for
// scenario.Scenario.Errorf: "faults", Index, then Key split at its dots
// (params.delay is the key delay under params).
func (e *FieldError) Path() []any {
	path := []any{"faults", e.Index}
	if e.Key != "" {
		for _, k := range strings.Split(e.Key, ".") {
			path = append(path, k)
		}
	}
	return path
}

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
func ValidateFault(index int, f scenario.Fault, c scenario.ClusterSpec, runLength time.Duration) error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &FieldError{Index: index, Key: key, Err: fmt.Errorf(format, args...)})
	}
	t, known := Lookup(f.Type)
	if inj, err := injectorFor(f.Type, c.Backend, c.System); err != nil {
		bad("type", "%v", err)
	} else if _, err := ParseParams(inj, f.Type, f.Params); err != nil {
		for _, e := range unjoinErrors(err) {
			key := "params"
			var pe *ParamError
			if errors.As(e, &pe) {
				if pe.Key != "" {
					key += "." + pe.Key
				}
				e = pe.Err
			}
			errs = append(errs, &FieldError{Index: index, Key: key, Err: e})
		}
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
		// NIC, the "link down" of Broadwell (2004) Table 1.
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
