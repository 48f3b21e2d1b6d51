package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/faultbench/faultbench/internal/law"
)

// The bounds of workload.pacing_tick. Below the shortest the kernel's
// wake-up is as coarse; the longest catches "1s" written for "1ms".
const (
	MinPacingTick = 10 * time.Microsecond
	MaxPacingTick = 100 * time.Millisecond
)

// OperatorPolicies are the operator.policy values.
var OperatorPolicies = []string{"none", "restart-failed", "restart-all", "reboot-node"}

// Defaults that the file may override.
const (
	DefaultSeed            = 1
	DefaultWindow          = 5 * time.Second
	DefaultConnectTimeout  = 2 * time.Second
	DefaultResponseTimeout = 6 * time.Second
	DefaultReadyTimeout    = 15 * time.Second
	DefaultBoot            = 5 * time.Second
	DefaultMaxInFlight     = 10000
	DefaultPages           = 18000
	DefaultPageSize        = 26 * 1024
	DefaultTraceMinUsable  = 0.9
)

// Load reads, defaults and validates a scenario file. The error lists every
// problem found, each as "file:line: key: what is wrong".
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// Parse is Load on bytes; name is the file name used in errors and the
// default scenario name.
func Parse(data []byte, name string) (*Scenario, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %s", name, cleanYAMLError(err))
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, fmt.Errorf("%s: the file is empty: a scenario needs at least cluster, workload and phases", name)
	}
	if root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: a scenario is a mapping of keys (name, cluster, workload, phases, ...)", name, root.Content[0].Line)
	}
	sc := &Scenario{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(sc); err != nil {
		return nil, decodeError(name, err)
	}
	sc.file, sc.root = name, &root
	sc.dir = filepath.Dir(name)
	sc.applyDefaults(!hasKey(&root, "seed"))
	if err := sc.validate(); err != nil {
		return nil, err
	}
	return sc, nil
}

var (
	reLine    = regexp.MustCompile(`^line (\d+): `)
	reUnknown = regexp.MustCompile(`^line (\d+): field (\S+) not found in type scenario\.(\w+)`)
	reType    = regexp.MustCompile(`^line (\d+): cannot unmarshal !!(\w+) ` + "`" + `([^` + "`" + `]*)` + "`" + ` into (\S+)`)
)

var typeSection = map[string]string{"Scenario": "the top level", "ClusterSpec": "cluster", "Workload": "workload", "Phase": "a phase",
	"Fault": "a fault", "Operator": "operator", "Knee": "workload.knee",
	"Request": "a workload.requests entry", "Expect": "a request's expect", "TLS": "workload.tls", "plain": "a guard rule"}

func decodeError(name string, err error) error {
	var fe *fieldError
	if errors.As(err, &fe) {
		return fmt.Errorf("%s:%d: %s", name, fe.line, fe.msg)
	}
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("%s: %s", name, cleanYAMLError(err))
	}
	var errs []error
	for _, msg := range te.Errors {
		if m := reUnknown.FindStringSubmatch(msg); m != nil {
			errs = append(errs, fmt.Errorf("%s:%s: unknown key %q in %s", name, m[1], m[2], typeSection[m[3]]))
			continue
		}
		if m := reType.FindStringSubmatch(msg); m != nil {
			want := strings.TrimPrefix(m[4], "scenario.")
			errs = append(errs, fmt.Errorf("%s:%s: %q is a %s, want %s", name, m[1], m[3], m[2], friendlyType(want)))
			continue
		}
		if m := reLine.FindStringSubmatch(msg); m != nil {
			errs = append(errs, fmt.Errorf("%s:%s: %s", name, m[1], strings.TrimPrefix(msg, m[0])))
			continue
		}
		errs = append(errs, fmt.Errorf("%s: %s", name, msg))
	}
	return errors.Join(errs...)
}

func friendlyType(t string) string {
	switch t {
	case "int", "int64":
		return "a whole number"
	case "float64":
		return "a number"
	case "bool":
		return "true or false"
	case "string":
		return "a string"
	case "[]string":
		return "a list of strings"
	case "[]int":
		return "a list of node numbers"
	case "[]Phase":
		return "a list of phases like [{name: warmup, duration: 60s}]"
	case "[]Fault":
		return "a list of faults"
	case "map[string]string":
		return "a mapping of strings"
	}
	return t
}

func cleanYAMLError(err error) string {
	return strings.TrimPrefix(err.Error(), "yaml: ")
}

func (sc *Scenario) applyDefaults(noSeed bool) {
	if sc.Name == "" {
		sc.Name = strings.TrimSuffix(filepath.Base(sc.file), filepath.Ext(sc.file))
	}
	if noSeed {
		sc.Seed = DefaultSeed
	}
	c := &sc.Cluster
	// cluster.system left out is testbed.DefaultSystem, which
	// testbed.Resolve fills in: which systems exist is the registry's.
	if c.Backend == "" {
		c.Backend = "local"
	}
	if c.ReadyTimeout.Duration == 0 {
		c.ReadyTimeout = D(DefaultReadyTimeout)
	}
	if c.Boot.Duration == 0 {
		c.Boot = D(DefaultBoot)
	}
	// A system's own defaults (the synthetic page set's size, the ready
	// path) are its descriptor's: testbed.Resolve applies them after Load,
	// since this package cannot ask the registry of systems.
	w := &sc.Workload
	if w.Driver == "" {
		w.Driver = "http"
	}
	if w.Arrivals == "" {
		w.Arrivals = "poisson"
	}
	if w.Clients == 0 {
		w.Clients = 1
	}
	if w.ConnectTimeout.Duration == 0 {
		w.ConnectTimeout = D(DefaultConnectTimeout)
	}
	if w.ResponseTimeout.Duration == 0 {
		w.ResponseTimeout = D(DefaultResponseTimeout)
	}
	if w.Window.Duration == 0 {
		// A default must not make a short run invalid: a run whose
		// shortest phase is under 5s gets windows as long as that phase.
		w.Window = D(min(DefaultWindow, sc.shortestPhase()))
	}
	if w.MaxInFlight == 0 {
		w.MaxInFlight = DefaultMaxInFlight
	}
	sc.kneeDefaults()
	if w.TraceMinUsable == 0 && strings.HasPrefix(w.Trace, "clf:") {
		w.TraceMinUsable = DefaultTraceMinUsable
	}
	if w.Trace == "" && (sessionDriver(w.Driver) || w.Driver == "kv") {
		// The session drivers choose their own paths (/session/{user});
		// the trace only feeds the schedule.
		w.Trace = "zipf:1:1.0"
	}
	sc.DefaultTrace()
	for i := range sc.Faults {
		if sc.Faults[i].Mode == "" {
			sc.Faults[i].Mode = "transient"
		}
	}
	if sc.Operator.Policy == "" {
		if sc.Operator.DetectAfter.Duration > 0 {
			sc.Operator.Policy = "restart-failed"
		} else {
			sc.Operator.Policy = "none"
		}
	}
	if sc.Baseline == "" && len(sc.Phases) > 0 {
		sc.Baseline = sc.Phases[0].Name
	}
	if len(sc.Guard) > 0 && sc.GuardCooldown.Duration == 0 {
		sc.GuardCooldown = D(DefaultGuardCooldown)
	}
}

// Errorf returns an error located at the key path (keys and list indexes)
// of the scenario file, e.g. sc.Errorf([]any{"faults", 2, "type"}, "unknown").
// Validators outside this package use it so every error names file:line.
func (sc *Scenario) Errorf(path []any, format string, args ...any) error {
	keys := make([]string, 0, len(path))
	for _, p := range path {
		switch k := p.(type) {
		case int:
			if len(keys) > 0 {
				keys[len(keys)-1] += fmt.Sprintf("[%d]", k)
				continue
			}
			keys = append(keys, fmt.Sprint(k))
		default:
			keys = append(keys, fmt.Sprint(k))
		}
	}
	return fmt.Errorf("%s:%d: %s: %s", sc.file, keyLine(sc.root, path...), strings.Join(keys, "."), fmt.Sprintf(format, args...))
}

// File is the path the scenario was loaded from.
func (sc *Scenario) File() string { return sc.file }

// Dir is the directory of the scenario file: relative trace and data paths
// are resolved against it.
func (sc *Scenario) Dir() string { return sc.dir }

// Length is the run length: the sum of the phase durations.
func (sc *Scenario) Length() time.Duration {
	var total time.Duration
	for _, p := range sc.Phases {
		total += p.Duration.Duration
	}
	return total
}

// shortestPhase is the shortest positive phase duration (DefaultWindow
// when there is none).
func (sc *Scenario) shortestPhase() time.Duration {
	shortest := DefaultWindow
	for _, p := range sc.Phases {
		if d := p.Duration.Duration; d > 0 && d < shortest {
			shortest = d
		}
	}
	return shortest
}

// PhaseAt returns the index of the phase running at offset t (the last
// phase for t at or past the end).
func (sc *Scenario) PhaseAt(t time.Duration) int {
	var end time.Duration
	for i, p := range sc.Phases {
		end += p.Duration.Duration
		if t < end {
			return i
		}
	}
	return len(sc.Phases) - 1
}

func (sc *Scenario) validate() error {
	var errs []error
	bad := func(path []any, format string, args ...any) {
		errs = append(errs, sc.Errorf(path, format, args...))
	}
	c := sc.Cluster
	// Which systems and backends exist is the testbed registry's to say
	// (testbed.Check): here only that they are names.
	if c.System != "" && !isName(c.System) {
		bad([]any{"cluster", "system"}, "system %q: want a name such as press or command", c.System)
	}
	if !isName(c.Backend) {
		bad([]any{"cluster", "backend"}, "backend %q: want a name such as local", c.Backend)
	}
	// Attached, the engine says how many nodes there are (testbed.Check
	// fills nodes in); a number given must match it.
	nodesLater := c.Attach != nil && c.Nodes == 0
	if (c.Nodes < 1 && !nodesLater) || c.Nodes > 200 {
		bad([]any{"cluster", "nodes"}, "%d nodes: want 1 to 200", c.Nodes)
	}
	if c.Attach != nil {
		sc.validateAttach(bad)
	}
	// Which systems need or take command, image, env and port is their
	// descriptors' to say (testbed.System.Takes and Check).
	if c.Port < 0 || c.Port > 65535 {
		bad([]any{"cluster", "port"}, "%d is not a port (1-65535)", c.Port)
	}
	if c.Ready != "" && !strings.HasPrefix(c.Ready, "/") {
		bad([]any{"cluster", "ready"}, "%q is not a URL path: want one starting with / like /health", c.Ready)
	}
	if c.Pages < 0 || c.PageSize < 0 || c.PageSize > 64<<20 {
		bad([]any{"cluster", "page_size"}, "pages and page_size must be positive (page_size at most 64 MiB)")
	}

	w := sc.Workload
	switch {
	case w.Model == "closed":
		errs = append(errs, sc.validateClosed()...)
	case w.Model != "" && w.Model != "open":
		bad([]any{"workload", "model"}, "unknown model %q (want open, or closed for users who wait for each answer)", w.Model)
	case w.Knee != nil:
		errs = append(errs, sc.validateKnee()...)
	case w.Rate <= 0 || w.Rate > 1e6:
		bad([]any{"workload", "rate"}, "rate %v: want requests per second above 0 (at most 1000000), or a knee: section to find it", w.Rate)
	}
	if !contains([]string{"poisson", "constant"}, w.Arrivals) {
		bad([]any{"workload", "arrivals"}, "unknown arrivals %q (want poisson or constant)", w.Arrivals)
	}
	if w.Clients < 1 || w.Clients > 1000 {
		bad([]any{"workload", "clients"}, "%d clients: want 1 to 1000", w.Clients)
	}
	if w.Trace != "" && !strings.HasPrefix(w.Trace, "zipf:") && !strings.HasPrefix(w.Trace, "paths:") && !strings.HasPrefix(w.Trace, "clf:") && !strings.HasPrefix(w.Trace, "har:") {
		bad([]any{"workload", "trace"}, "%q: want zipf:N:s, paths:FILE, clf:FILE or har:FILE", w.Trace)
	}
	if w.TraceMinUsable != 0 && !strings.HasPrefix(w.Trace, "clf:") {
		bad([]any{"workload", "trace_min_usable"}, "trace_min_usable is for clf: traces (this trace is %q)", w.Trace)
	} else if w.TraceMinUsable < 0 || w.TraceMinUsable > 1 || w.TraceMinUsable != w.TraceMinUsable {
		bad([]any{"workload", "trace_min_usable"}, "%v: want the share of the log's lines that must parse, above 0 and at most 1 (e.g. 0.9)", w.TraceMinUsable)
	}
	if w.MaxInFlight < 1 {
		bad([]any{"workload", "max_in_flight"}, "want at least 1")
	}
	if w.MaxConns < 0 || (w.MaxConns > 0 && !w.Keepalive) {
		bad([]any{"workload", "max_conns"}, "max_conns caps keep-alive connections: give a positive number with keepalive: true")
	}
	switch t := w.PacingTick.Duration; {
	case t == 0:
	case w.Model == "closed":
		bad([]any{"workload", "pacing_tick"}, "pacing_tick paces scheduled arrivals; closed-loop users send when their previous answer came: leave it out")
	case t < MinPacingTick || t > MaxPacingTick:
		bad([]any{"workload", "pacing_tick"}, "%v: want a tick between %v and %v (e.g. 1ms), or leave it out to send every arrival at its instant", t, MinPacingTick, MaxPacingTick)
	}
	if w.Users < 0 || w.Users > 65536 {
		bad([]any{"workload", "users"}, "%d users: want 1 to 65536 per client (0: the default 64)", w.Users)
	}
	if w.Flow < 0 {
		bad([]any{"workload", "flow"}, "%d: want a positive number of requests per session", w.Flow)
	}
	if w.Think != "" && w.Model != "closed" {
		bad([]any{"workload", "think"}, "think is the pause of closed-loop users: add model: closed, or leave think out")
	}
	sc.validateRequests(bad)
	if w.KV != nil && w.Driver != "kv" {
		bad([]any{"workload", "kv"}, "kv configures driver: kv, not driver %s", w.Driver)
	}
	if k := w.KV; k != nil {
		if k.API != "" && k.API != "etcd" {
			bad([]any{"workload", "kv", "api"}, "api %q is unknown (want etcd)", k.API)
		}
		if k.Prefix != "" && !strings.HasPrefix(k.Prefix, "/") {
			bad([]any{"workload", "kv", "prefix"}, "prefix %q: want a URL path such as /v3", k.Prefix)
		}
		if k.Keys < 0 || k.Keys > 65536 {
			bad([]any{"workload", "kv", "keys"}, "%d keys: want 1 to 65536 per user (0: the default 8)", k.Keys)
		}
		if k.Reads < 0 || k.Reads > 1 {
			bad([]any{"workload", "kv", "reads"}, "%v: want the share of gets, from 0 to 1", k.Reads)
		}
		if k.ValueSize < 0 || k.ValueSize > 1<<20 {
			bad([]any{"workload", "kv", "value_size"}, "%d: want 1 to 1048576 bytes (0: the default 64)", k.ValueSize)
		}
	}
	if ((w.Users != 0 && w.Model != "closed") || w.Flow != 0) && !sessionDriver(w.Driver) && !(w.Driver == "kv" && w.Flow == 0) {
		bad([]any{"workload"}, "users and flow are settings of the ssm and session drivers, not of driver %s", w.Driver)
	}

	if len(sc.Phases) == 0 {
		bad([]any{"phases"}, "at least one phase is needed, e.g. [{name: warmup, duration: 60s}, {name: fault, duration: 90s}]")
	}
	seen := map[string]bool{}
	for i, p := range sc.Phases {
		if p.Name == "" {
			bad([]any{"phases", i}, "phase %d has no name", i+1)
		}
		if seen[p.Name] {
			bad([]any{"phases", i, "name"}, "phase name %q is used twice", p.Name)
		}
		seen[p.Name] = true
		if p.Duration.Duration <= 0 {
			bad([]any{"phases", i}, "phase %q needs a positive duration", p.Name)
		}
	}
	if len(sc.Phases) > 0 && !seen[sc.Baseline] {
		bad([]any{"baseline"}, "no phase named %q", sc.Baseline)
	}
	length := sc.Length()
	for i, f := range sc.Faults {
		at := func(k string) []any { return []any{"faults", i, k} }
		if f.Type == "" {
			bad([]any{"faults", i}, "fault %d has no type", i+1)
		} else if !IsFaultType(f.Type) {
			bad(at("type"), "unknown fault type %q (see the fault types in docs/scenario.md: e.g. app-crash, app-hang, node-crash, node-freeze, link-down)", f.Type)
		}
		if length > 0 && f.At.Duration >= length {
			bad(at("at"), "%s is at or after the end of the run (%s)", f.At, length)
		}
		if f.Mode != "transient" && f.Mode != "sticky" {
			bad(at("mode"), "unknown mode %q (want transient or sticky)", f.Mode)
		}
		if f.Mode == "transient" && f.Duration.Duration == 0 && needsDuration(f.Type) {
			bad(at("duration"), "a transient %s needs a duration (or mode: sticky to last until repaired)", f.Type)
		}
		if f.Every != "" {
			if l, err := law.Parse(f.Every); err != nil {
				bad(at("every"), "%v", err)
			} else if !l.Is("poisson", "gaussian", "fixed") {
				bad(at("every"), "%s: a recurrence is poisson(MEAN), gaussian(MEAN, SD) or fixed(D)", l)
			}
		}
		// With nodes still to be found, fault.Validate checks the targets
		// once they are.
		outside := func(n int) bool { return n < 1 || (!nodesLater && n > c.Nodes) }
		if !nodesLater && f.Node.N > c.Nodes {
			bad(at("node"), "node %d does not exist (the cluster has nodes 1 to %d)", f.Node.N, c.Nodes)
		}
		for j, n := range append(append([]int{}, f.Nodes...), f.Link...) {
			if outside(n) {
				bad(at("nodes"), "node %d (entry %d) does not exist (the cluster has nodes 1 to %d)", n, j+1, c.Nodes)
			}
		}
		if f.Link != nil && (len(f.Link) != 2 || f.Link[0] == f.Link[1]) {
			bad(at("link"), "a link is two different nodes, like [1, 2]")
		}
		for _, g := range f.Group {
			for _, n := range g {
				if outside(n) {
					bad(at("group"), "node %d does not exist (the cluster has nodes 1 to %d)", n, c.Nodes)
				}
			}
		}
		if f.Scope != "" && f.Scope != "client" {
			bad(at("scope"), "unknown scope %q (leave it out for intra-cluster, or client)", f.Scope)
		}
		if needsNode(f.Type) && !f.Node.IsSet() && len(f.Nodes) == 0 {
			bad([]any{"faults", i}, "%s needs a target: node: N, nodes: [..] or node: any", f.Type)
		}
	}
	op := sc.Operator
	if !contains(OperatorPolicies, op.Policy) {
		bad([]any{"operator", "policy"}, "unknown policy %q (want %s)", op.Policy, strings.Join(OperatorPolicies, ", "))
	}
	if op.Response != "" {
		if l, err := law.Parse(op.Response); err != nil {
			bad([]any{"operator", "response"}, "%v", err)
		} else if !l.Is("fixed", "exponential") {
			bad([]any{"operator", "response"}, "%s: a response time is fixed(D) or exponential(MEAN)", l)
		}
	}
	for _, k := range sortedKeys(sc.Demerits) {
		v := sc.Demerits[k]
		if !contains(demeritKeys, k) {
			bad([]any{"demerits", k}, "unknown demerit %q (want %s)", k, strings.Join(demeritKeys, ", "))
		} else if v < 0 {
			bad([]any{"demerits", k}, "weight %v is negative", v)
		}
	}
	sc.validateGuard(bad)
	return errors.Join(errs...)
}

var demeritKeys = []string{"conn_abort", "conn_error", "timeout", "http_error", "data_error", "latency_second", "latency_scale"}

// needsDuration reports whether a transient fault of type t must say how
// long it lasts (instantaneous events like a crash that is repaired by the
// operator or a maintenance action do not).
func needsDuration(t string) bool {
	switch t {
	case "app-crash", "node-crash", "node-reboot", "restart-node", "restart-all", "replace-disk", "start-reconstruction", "remove-wrong-disk", "disk-remove", "disk-power-fail":
		return false
	}
	return true
}

// Scaled returns a copy with every duration multiplied by f (--time-scale),
// except cluster.ready_timeout, which bounds start-up rather than shaping the
// experiment, and workload.pacing_tick, which is the generator's resolution
// as rates are its load. Rates are unchanged.
func (sc *Scenario) Scaled(f float64) *Scenario {
	out := *sc
	if f == 1 {
		return &out
	}
	s := func(d Duration) Duration { return D(scaleDuration(d.Duration, f)) }
	out.Cluster.Boot = s(sc.Cluster.Boot)
	out.Workload.ConnectTimeout = s(sc.Workload.ConnectTimeout)
	out.Workload.ResponseTimeout = s(sc.Workload.ResponseTimeout)
	out.Workload.Window = s(sc.Workload.Window)
	if k := sc.Workload.Knee; k != nil {
		scaled := *k
		scaled.StepTime, scaled.P99 = s(k.StepTime), s(k.P99)
		out.Workload.Knee = &scaled
	}
	out.Phases = make([]Phase, len(sc.Phases))
	for i, p := range sc.Phases {
		out.Phases[i] = Phase{Name: p.Name, Duration: s(p.Duration)}
	}
	out.Faults = make([]Fault, len(sc.Faults))
	for i, ft := range sc.Faults {
		ft.At, ft.Duration = s(ft.At), s(ft.Duration)
		if ft.Every != "" {
			if l, err := law.Parse(ft.Every); err == nil {
				ft.Every = l.Scaled(f).String()
			}
		}
		if len(ft.Params) > 0 {
			p := make(map[string]string, len(ft.Params))
			for k, v := range ft.Params {
				if d, err := time.ParseDuration(v); err == nil {
					v = scaleDuration(d, f).String()
				}
				p[k] = v
			}
			ft.Params = p
		}
		out.Faults[i] = ft
	}
	out.Guard = scaledGuard(sc.Guard, f)
	out.GuardCooldown = s(sc.GuardCooldown)
	out.Operator.DetectAfter = s(sc.Operator.DetectAfter)
	out.Operator.ActionTime = s(sc.Operator.ActionTime)
	if sc.Operator.Response != "" {
		if l, err := law.Parse(sc.Operator.Response); err == nil {
			out.Operator.Response = l.Scaled(f).String()
		}
	}
	return &out
}

// Marshal writes the scenario as YAML with defaults filled in (scenario.yaml
// of a results directory, and `faultbench validate`).
func (sc *Scenario) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(sc); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

// sortedKeys is a helper for deterministic iteration over maps.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func scaleDuration(d time.Duration, f float64) time.Duration {
	return time.Duration(float64(d) * f)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// isName reports whether s is a registry name: lower-case letters, digits
// and dashes, starting with a letter.
func isName(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

// sessionDriver reports whether driver speaks the SSM session protocol.
// DefaultTrace gives a scenario without workload.trace one request per
// page of its page set, Zipf-distributed (zipf:PAGES:1.0), once
// cluster.pages is known. Load calls it, and testbed.Resolve again after
// the system's defaults.
func (sc *Scenario) DefaultTrace() {
	if w := &sc.Workload; w.Trace == "" && sc.Cluster.Pages > 0 && len(w.Requests) == 0 {
		w.Trace = fmt.Sprintf("zipf:%d:1.0", sc.Cluster.Pages)
	}
}

// CheckTrace is the last check of a resolved scenario (after
// testbed.Resolve): a trace is required unless the system's page set gave
// one.
func (sc *Scenario) CheckTrace() error {
	if sc.Workload.Trace == "" && len(sc.Workload.Requests) == 0 {
		return sc.Errorf([]any{"workload"}, "trace is required for system: %s (zipf:N:s, paths:FILE, clf:FILE or har:FILE), or requests", sc.Cluster.System)
	}
	return nil
}

func sessionDriver(driver string) bool { return driver == "ssm" || driver == "session" }
