package ssm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/control"
	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/faultnet"
	"github.com/faultbench/faultbench/internal/kernelfault"
	"github.com/faultbench/faultbench/internal/node"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/systems/ssm/pinpoint"
	"github.com/faultbench/faultbench/internal/testbed"
)

// DefaultPort is the port every node of an SSM cluster run by `faultbench
// run` listens on at its own loopback address (cluster.port overrides it).
// It is fixed rather than drawn because the front ends must know every
// brick's address before any node starts.
const DefaultPort = 8080

// TokenEnv is the environment variable through which the testbed hands
// every brick the run's control token (the environment of a process is
// readable only by its user, its argv by everyone); a brick without option
// control_token takes it from there.
const TokenEnv = "FAULTBENCH_SSM_TOKEN"

// Run settings in cluster.options that are not node options: the rig reads
// them and removes them before the nodes start.
const (
	// OptPinpoint switches the Pinpoint monitor on for the run: on | off (default off).
	OptPinpoint = "pinpoint"
	// OptPinpointInterval is how often Pinpoint polls every brick's /stats (default 1s).
	OptPinpointInterval = "pinpoint_interval"
)

var runOptions = []string{OptPinpoint, OptPinpointInterval}

func init() {
	testbed.RegisterSystem(testbed.System{
		Name: ClusterKind, NodeKinds: []string{ClusterKind, AppKind, BrickKind},
		Levers: []string{fault.LeverNetwork, fault.LeverControl},
		// The session protocol the front ends serve (docs/ssm.md); "null"
		// sends nothing: it measures the generator.
		Drivers:    []string{"ssm", "session", "null"},
		DriverHint: "an ssm cluster's front ends serve the session protocol (docs/ssm.md); use driver ssm or session",
		Check:      system{}.Check, Prepare: system{}.Prepare,
	})
}

// system adapts the testbed to an SSM cluster of kind ssm: the front ends
// (option apps, default "1") take the clients' load, every other node is a
// brick reached through a faultnet proxy per front end → brick link; bricks
// get a per-run control token for the bitflip and slow faults; Pinpoint
// watches the bricks when the scenario asks.
type system struct{}

// runSettings are the rig's own keys of cluster.options.
type runSettings struct {
	pinpoint     bool
	interval     time.Duration
	restartLimit int // WQ−1, at least 1
}

// restartWindow is how long a Pinpoint restart counts against the budget:
// Pinpoint's grace after a restart, by which hyperactive users have written
// their sessions again (with new copies on live bricks).
const restartWindow = 5 * time.Second

func parseRunSettings(opts map[string]string) (runSettings, map[string]error) {
	s := runSettings{interval: time.Second, restartLimit: 1}
	if wq, err := strconv.Atoi(opts["wq"]); err == nil && wq > 2 {
		s.restartLimit = wq - 1
	}
	errs := map[string]error{}
	switch v := opts[OptPinpoint]; v {
	case "", "off", "false":
	case "on", "true":
		s.pinpoint = true
	default:
		errs[OptPinpoint] = fmt.Errorf("pinpoint %q: want on or off", v)
	}
	if v, ok := opts[OptPinpointInterval]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < 10*time.Millisecond || d > time.Minute {
			errs[OptPinpointInterval] = fmt.Errorf("pinpoint_interval %q: want a duration from 10ms to 1m", v)
		} else {
			s.interval = d
		}
	}
	return s, errs
}

// nodeOptions is opts without the rig's own keys.
func nodeOptions(opts map[string]string) map[string]string {
	m := maps.Clone(opts)
	if m == nil {
		m = map[string]string{}
	}
	for _, k := range runOptions {
		delete(m, k)
	}
	return m
}

// Check validates an SSM cluster before anything runs: roles, the
// replication parameters (1 ≤ wq ≤ w, 1 ≤ r ≤ w, at least wq bricks),
// every node option, the rig's own keys, the params of the faults the rig
// injects (params.go), and that brick faults (bitflip, slow) aim at
// bricks. Every error names file:line and the key.
func (system) Check(sc *scenario.Scenario, plan testbed.Plan) error {
	c := sc.Cluster
	var errs []error
	opt := func(key string) []any { return []any{"cluster", "options", key} }
	if c.Nodes < 2 {
		return sc.Errorf([]any{"cluster", "nodes"}, "ssm needs at least 2 nodes (a front end and a brick), got %d", c.Nodes)
	}
	if plan.KernelLinks {
		for i, f := range sc.Faults {
			if kernelfault.NeedsNetem(f.Type) {
				errs = append(errs, sc.Errorf([]any{"faults", i, "type"}, "fault %s needs the kernel's netem qdisc on backend %s (ssm's links are kernel links there, with no proxy to delay them), and this kernel has none: use backend local", f.Type, c.Backend))
			}
		}
	}
	port := c.Port
	if port == 0 {
		port = DefaultPort
	}
	_, runErrs := parseRunSettings(c.Options)
	for _, k := range slices.Sorted(maps.Keys(runErrs)) {
		errs = append(errs, sc.Errorf(opt(k), "%v", runErrs[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(c.Options)) {
		if k == "control_token" || k == "bricks" || k == "replicas" || strings.HasPrefix(k, "brick.") {
			errs = append(errs, sc.Errorf(opt(k), "option %s is set by faultbench for each run (brick addresses follow cluster.port and the faultnet proxies; the token is drawn per run)", k))
		}
	}
	peers := make([]string, c.Nodes)
	for i := range peers {
		peers[i] = net.JoinHostPort(plan.Host(i+1), strconv.Itoa(port))
	}
	opts := nodeOptions(c.Options)
	apps, bricks, err := Roles(node.Config{Node: 1, Peers: peers, Options: opts})
	if err != nil {
		return errors.Join(append(errs, sc.Errorf(opt("apps"), "%v", err))...)
	}
	// Replication parameters, named by key (the stub's own check says the
	// same without the line).
	num := func(key string, def int) int {
		v, ok := opts[key]
		if !ok {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			errs = append(errs, sc.Errorf(opt(key), "%s %q: want a whole number of bricks, at least 1", key, v))
			return def
		}
		return n
	}
	passive := opts["style"] == "passive"
	if v, ok := opts["style"]; ok && v != "active" && v != "passive" {
		errs = append(errs, sc.Errorf(opt("style"), "style %q: want active (every write to w bricks, acknowledged by wq) or passive (the primary alone answers; it ships writes to w−1 backups)", v))
	}
	if settings, _ := parseRunSettings(c.Options); passive && settings.pinpoint {
		errs = append(errs, sc.Errorf(opt(OptPinpoint), "pinpoint compares every brick's reads and writes with its peers', and in style passive only the primary serves: it would always be the odd one out and be restarted, losing its unshipped writes (use style active with pinpoint)"))
	}
	if (opts["backend"] == "" || opts["backend"] == "ssm") && passive {
		num("w", 3)
		for _, k := range []string{"wq", "r"} {
			if v, ok := opts[k]; ok && v != "1" {
				errs = append(errs, sc.Errorf(opt(k), "%s %q does not apply to style passive: the primary alone acknowledges and answers (leave %s out, or set it to 1)", k, v, k))
			}
		}
	}
	if (opts["backend"] == "" || opts["backend"] == "ssm") && !passive {
		w, wq, r := num("w", 3), num("wq", 2), num("r", 2)
		switch {
		case wq > w:
			errs = append(errs, sc.Errorf(opt("wq"), "wq %d > w %d: the write quota cannot exceed the write group (1 ≤ wq ≤ w)", wq, w))
		case wq > len(bricks):
			errs = append(errs, sc.Errorf(opt("wq"), "wq %d needs at least %d bricks; the cluster has %d (nodes %v)", wq, wq, len(bricks), bricks))
		}
		if r > w {
			errs = append(errs, sc.Errorf(opt("r"), "r %d > w %d: a read asks bricks of the write group, so 1 ≤ r ≤ w", r, w))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// Every option value, as each role will read it.
	standIn := maps.Clone(opts)
	var addrs []string
	for _, j := range bricks {
		addrs = append(addrs, peers[j-1])
	}
	standIn["bricks"] = strings.Join(addrs, ",")
	if _, err := AppConfig(node.Config{Node: apps[0], Listen: peers[apps[0]-1], Peers: peers, Dir: sc.Dir(), Options: standIn}); err != nil {
		errs = append(errs, sc.Errorf([]any{"cluster", "options"}, "%v", err))
	}
	if _, err := BrickConfig(node.Config{Node: bricks[0], Listen: peers[bricks[0]-1], Peers: peers, Options: opts}); err != nil {
		errs = append(errs, sc.Errorf([]any{"cluster", "options"}, "%v", err))
	}
	for i, f := range sc.Faults {
		if f.Type != "bitflip" && f.Type != "slow" {
			continue
		}
		if f.Node.Any {
			errs = append(errs, sc.Errorf([]any{"faults", i, "node"}, "%s acts on a brick's memory: name a brick (%v), not any node", f.Type, bricks))
		}
		targets := append([]int(nil), f.Nodes...)
		if f.Node.N > 0 {
			targets = append(targets, f.Node.N)
		}
		for _, n := range targets {
			if slices.Contains(apps, n) {
				errs = append(errs, sc.Errorf([]any{"faults", i, "node"}, "%s acts on a brick's memory, and node %d is a front end (bricks: %v)", f.Type, n, bricks))
			}
		}
	}
	return errors.Join(errs...)
}

// Prepare fixes the port, draws the run's control token, starts a faultnet
// proxy per link (seeded from the scenario seed) and gives every front end
// brick.J = the proxy of link front end → J; on kernel links
// (plan.KernelLinks: netns) brick.J is brick J's own address.
func (system) Prepare(spec *testbed.Spec, plan testbed.Plan, seed int64) (testbed.Rig, error) {
	settings, errs := parseRunSettings(spec.Options)
	if len(errs) > 0 {
		return nil, errors.Join(slices.Collect(maps.Values(errs))...)
	}
	if spec.Port == 0 {
		spec.Port = DefaultPort
	}
	spec.Options = nodeOptions(spec.Options)
	peers := make([]string, spec.Nodes)
	addrs := map[int]string{}
	for i := 1; i <= spec.Nodes; i++ {
		addrs[i] = net.JoinHostPort(plan.Host(i), strconv.Itoa(spec.Port))
		peers[i-1] = addrs[i]
	}
	apps, bricks, err := Roles(node.Config{Peers: peers, Options: spec.Options})
	if err != nil {
		return nil, err
	}
	token, err := control.NewToken()
	if err != nil {
		return nil, err
	}
	// On a backend with kernel links (netns) the front ends dial the
	// bricks directly and the kernel serves the network faults
	// (kernelfault): no proxy the system would not otherwise use.
	var fn *faultnet.Net
	if !plan.KernelLinks {
		if fn, err = faultnet.NewNet(addrs, faultnet.NetOptions{Seed: seed, ListenAddr: func(int, int) string { return plan.Proxy }}); err != nil {
			return nil, err
		}
	}
	spec.NodeOptions = func(i int) map[string]string {
		if !slices.Contains(apps, i) {
			return nil
		}
		opts := map[string]string{}
		for _, j := range bricks {
			if fn != nil {
				opts["brick."+strconv.Itoa(j)] = fn.Addr(i, j)
			} else {
				opts["brick."+strconv.Itoa(j)] = addrs[j]
			}
		}
		return opts
	}
	spec.Env = append(slices.Clip(spec.Env), TokenEnv+"="+token)
	return &rig{net: fn, addrs: addrs, apps: apps, bricks: bricks, token: token, settings: settings, clock: spec.Clock, window: spec.Window}, nil
}

type rig struct {
	net      *faultnet.Net
	addrs    map[int]string // node → its own address (bricks: stub, /stats, /control)
	apps     []int
	bricks   []int
	token    string
	settings runSettings
	clock    testbed.Clock
	window   time.Duration // the run's analysis window (the span of Sample's records)

	mu      sync.Mutex
	emit    func(record.Event) // the run's timeline, once Watch runs
	offline map[int]bool       // bricks Pinpoint took out of service
}

// takeOffline records that Pinpoint took brick n out of service; from now
// on faults aimed at it find nothing to act on (see brickOffline).
func (r *rig) takeOffline(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.offline == nil {
		r.offline = map[int]bool{}
	}
	r.offline[n] = true
}

// brickOffline reports whether brick n was taken out of service.
func (r *rig) brickOffline(n int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.offline[n]
}

// clockNow is the run's time; 0 without a clock.
func (r *rig) clockNow() time.Duration {
	if r.clock == nil {
		return 0
	}
	return r.clock.Now()
}

// note adds an event to the run's timeline; false before Watch runs.
func (r *rig) note(e record.Event) bool {
	r.mu.Lock()
	emit := r.emit
	r.mu.Unlock()
	if emit == nil {
		return false
	}
	if r.clock != nil {
		e.TS = r.clock.Now().Seconds()
	}
	emit(e)
	return true
}

func (r *rig) Target(c testbed.Cluster) fault.Target { return &ssmTarget{cluster: c, rig: r} }

// ClientNodes implements testbed.ClientNodes: only the front ends serve
// the session protocol.
func (r *rig) ClientNodes() []int { return slices.Clone(r.apps) }

// Close closes every proxy, reverting any network fault still set; safe twice.
func (r *rig) Close() error {
	if r.net == nil {
		return nil
	}
	return r.net.Close()
}

// Watch implements testbed.Watcher: with option pinpoint=on it runs the
// Pinpoint monitor over the bricks' own addresses (statistics are
// management traffic, not subject to the faultnet links) until ctx ends.
// Every decision is an event with its evidence in the detail: suspect,
// restart (through the testbed's RestartApp, within a restart budget: see
// brickRestarter), offline (after too many restarts the brick is killed
// and left down), restart_failed (also a restart over budget).
func (r *rig) Watch(ctx context.Context, c testbed.Cluster, emit func(record.Event)) {
	if !r.settings.pinpoint {
		return
	}
	app, ok := fault.As[fault.AppLever](c)
	if !ok {
		emit(record.Event{TS: r.clockNow().Seconds(), Kind: "system.pinpoint.error",
			Detail: "the backend's cluster cannot restart a node's application (no app lever): Pinpoint not started"})
		return
	}
	r.mu.Lock()
	r.emit = emit
	r.mu.Unlock()
	watched := map[int]string{}
	for _, b := range r.bricks {
		watched[b] = r.addrs[b]
	}
	clock := func() time.Duration { return time.Duration(0) }
	if r.clock != nil {
		clock = r.clock.Now
	}
	m, err := pinpoint.NewMonitor(pinpoint.MonitorConfig{
		Bricks:   watched,
		Interval: r.settings.interval,
		Restarter: &brickRestarter{restart: app.RestartApp, stop: func(n int) error { r.takeOffline(n); return app.KillApp(n) },
			limit: r.settings.restartLimit, window: restartWindow},
		Clock: clock,
		OnEvent: func(e pinpoint.Event) {
			emit(record.Event{TS: e.At.Seconds(), Kind: e.Kind, Node: e.Node, Detail: e.Detail})
		},
	})
	if err != nil {
		emit(record.Event{TS: clock().Seconds(), Kind: "system.pinpoint.error", Detail: err.Error()})
		return
	}
	emit(record.Event{TS: clock().Seconds(), Kind: "system.pinpoint.start",
		Detail: fmt.Sprintf("watching bricks %v every %v", r.bricks, r.settings.interval)})
	_ = m.Run(ctx)
}

// brickRestarter carries out Pinpoint's decisions on the testbed, within
// a restart budget: at most limit (WQ−1) restarts within window. A session
// survives WQ−1 lost copies between two of its writes (§3.7), and a
// restart loses every copy the brick held, so restarting more bricks at
// once — as Pinpoint's silence rule does when the whole host stalls and
// every brick misses its polls — would lose sessions to cure nothing.
// A restart over budget is refused (a restart_failed event); the brick is
// judged again after its grace and restarted then if still faulty.
type brickRestarter struct {
	restart, stop func(node int) error // the testbed's RestartApp, KillApp
	limit         int
	window        time.Duration

	mu     sync.Mutex
	recent []time.Time
}

// errRestartBudget is returned for a restart over budget.
var errRestartBudget = errors.New("restart refused: restart budget spent")

// Restart kills the brick and starts it again, empty.
func (b *brickRestarter) Restart(n int) error {
	now := time.Now()
	b.mu.Lock()
	b.recent = slices.DeleteFunc(b.recent, func(t time.Time) bool { return now.Sub(t) >= b.window })
	if len(b.recent) >= b.limit {
		b.mu.Unlock()
		return fmt.Errorf("%w (%d restart(s) in the last %v; WQ−1 = %d copies may be lost between writes)", errRestartBudget, len(b.recent), b.window, b.limit)
	}
	b.recent = append(b.recent, now)
	b.mu.Unlock()
	return b.restart(n)
}

// Stop takes a brick offline: killed, and left down.
func (b *brickRestarter) Stop(n int) error { return b.stop(n) }

// ssmTarget is a running SSM cluster as faults see it: the faultnet links
// (FaultNet) and the bricks' control endpoints (SSMControl), wrapping the
// backend's cluster, whose levers fault.As finds through Unwrap.
type ssmTarget struct {
	cluster testbed.Cluster
	rig     *rig
}

// Size is the cluster's.
func (c *ssmTarget) Size() int { return c.cluster.Size() }

// Unwrap implements fault.Wrapper.
func (c *ssmTarget) Unwrap() fault.Target { return c.cluster }

// FaultNet returns the proxies between front ends and bricks.
func (c *ssmTarget) FaultNet() *faultnet.Net { return c.rig.net }

// SSMControl returns brick node's control address and the run's token;
// ErrBrickOffline when Pinpoint has taken the brick out of service.
func (c *ssmTarget) SSMControl(n int) (addr, token string, err error) {
	if !slices.Contains(c.rig.bricks, n) {
		return "", "", fmt.Errorf("node %d is not a brick (bricks: %v)", n, c.rig.bricks)
	}
	if c.rig.brickOffline(n) {
		return "", "", fmt.Errorf("brick %d: %w", n, ErrBrickOffline)
	}
	return c.rig.addrs[n], c.rig.token, nil
}

// Note adds an event to the run's timeline (once Pinpoint watches the
// run; false before, and when it does not).
func (c *ssmTarget) Note(e record.Event) bool { return c.rig.note(e) }
