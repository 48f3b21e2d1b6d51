// Package fake is a testbed backend without processes, for tests of the
// runner, the fault plumbing and the seam itself, as memberlist ships a
// mock transport: its nodes are entries in memory, nothing runs and nothing
// listens. Every Start, lever call and Stop is written to a Log, so a test
// can check what a run did to the cluster and in which order it tore
// things down. Its hosts are in TEST-NET-1 (192.0.2.0/24, RFC 5737), which
// is never routed: pair it with workload driver null, which sends nothing.
//
// A test registers a Backend under a name of its own
// (testbed.RegisterBackend) once, e.g. in an init function of a _test.go
// file; a production build never links this package.
package fake

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/testbed"
)

// AllLevers are the levers of a local cluster; a Backend offers them
// unless told otherwise.
var AllLevers = []string{fault.LeverApp, fault.LeverProcess, fault.LeverHost}

// Backend is a testbed.Backend whose clusters live in memory. The zero
// value offers AllLevers and logs nowhere. Safe for concurrent use once
// set up.
type Backend struct {
	// Offered are the levers its clusters offer; nil: AllLevers. A
	// cluster without fault.LeverApp, LeverProcess or LeverHost does not
	// implement that lever's interface, so fault.As does not find it.
	Offered []string
	// Log receives every Start, lever call and Stop; nil: none kept.
	Log *Log
	// StartErr, when set, makes Start fail with it (after logging "start").
	StartErr error
}

// Plan gives node i the host 192.0.2.i.
func (b *Backend) Plan(spec testbed.Spec) (testbed.Plan, error) {
	if err := spec.Validate(); err != nil {
		return testbed.Plan{}, err
	}
	if spec.Nodes > 254 {
		return testbed.Plan{}, fmt.Errorf("fake: at most 254 nodes, got %d", spec.Nodes)
	}
	hosts := make([]string, spec.Nodes)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("192.0.2.%d", i+1)
	}
	return testbed.Plan{Hosts: hosts, Proxy: net.JoinHostPort(hosts[0], "0")}, nil
}

// Start "starts" the nodes: each is up at once (a node.up event each).
func (b *Backend) Start(_ context.Context, spec testbed.Spec, plan testbed.Plan, emit func(record.Event)) (testbed.Cluster, error) {
	b.Log.Add("start")
	if b.StartErr != nil {
		return nil, b.StartErr
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if len(plan.Hosts) != spec.Nodes {
		return nil, fmt.Errorf("fake: the plan has %d hosts for %d nodes", len(plan.Hosts), spec.Nodes)
	}
	if emit == nil {
		emit = func(record.Event) {}
	}
	port := spec.Port
	if port == 0 {
		port = 80
	}
	n := &Nodes{log: b.Log, boot: spec.Boot, dir: spec.Dir, hosts: plan.Hosts, up: make([]bool, spec.Nodes)}
	for i := range n.up {
		n.up[i] = true
		n.addrs = append(n.addrs, net.JoinHostPort(plan.Hosts[i], strconv.Itoa(port)))
		emit(record.Event{Kind: "node.up", Node: i + 1, Detail: "started"})
	}
	offered := b.Levers()
	switch {
	case slices.Contains(offered, fault.LeverApp) && slices.Contains(offered, fault.LeverProcess) && slices.Contains(offered, fault.LeverHost):
		return n, nil
	case len(offered) == 0:
		return bare{n}, nil
	}
	return nil, fmt.Errorf("fake: offer all of %v or none, not %v", AllLevers, offered)
}

// Levers are Offered, or AllLevers.
func (b *Backend) Levers() []string {
	if b.Offered == nil {
		return AllLevers
	}
	return b.Offered
}

// Nodes is a running fake cluster with every lever: each call is logged
// ("kill 1", "pause 2", ...) and flips the node's state.
type Nodes struct {
	log   *Log
	boot  time.Duration
	dir   string
	hosts []string
	addrs []string

	mu      sync.Mutex
	up      []bool
	stopped bool
}

// Size is the number of nodes.
func (n *Nodes) Size() int { return len(n.addrs) }

// Nodes lists the nodes; the caller owns the slice.
func (n *Nodes) Nodes() []testbed.Node {
	out := make([]testbed.Node, len(n.addrs))
	for i, a := range n.addrs {
		out[i] = testbed.Node{ID: i + 1, Addr: a}
	}
	return out
}

// Host is node i's planned host.
func (n *Nodes) Host(i int) string { return testbed.Plan{Hosts: n.hosts}.Host(i) }

// Boot is the spec's boot time.
func (n *Nodes) Boot() time.Duration { return n.boot }

// Dir is the spec's directory.
func (n *Nodes) Dir() string { return n.dir }

// Up reports whether node i's application runs.
func (n *Nodes) Up(i int) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return i >= 1 && i <= len(n.up) && n.up[i-1]
}

// Stop logs "stop" once; later lever calls return testbed.ErrStopped.
func (n *Nodes) Stop() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.stopped {
		n.stopped = true
		n.log.Add("stop")
	}
	return nil
}

// lever logs "what node" and sets the node's state to up (unless nil).
func (n *Nodes) lever(what string, node int, up *bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return testbed.ErrStopped
	}
	if node < 1 || node > len(n.up) {
		return fmt.Errorf("no node %d (cluster has %d)", node, len(n.up))
	}
	n.log.Add(what + " " + strconv.Itoa(node))
	if up != nil {
		n.up[node-1] = *up
	}
	return nil
}

var yes, no = true, false

// KillApp implements fault.AppLever.
func (n *Nodes) KillApp(i int) error { return n.lever("kill", i, &no) }

// StartApp implements fault.AppLever.
func (n *Nodes) StartApp(i int) error { return n.lever("start", i, &yes) }

// RestartApp implements fault.AppLever.
func (n *Nodes) RestartApp(i int) error { return n.lever("restart", i, &yes) }

// Pause implements fault.ProcessLever.
func (n *Nodes) Pause(i int) error { return n.lever("pause", i, nil) }

// Resume implements fault.ProcessLever.
func (n *Nodes) Resume(i int) error { return n.lever("resume", i, nil) }

// HostDown implements fault.HostLever.
func (n *Nodes) HostDown(i int, graceful bool) error {
	what := "crash"
	if graceful {
		what = "reboot"
	}
	return n.lever(what, i, &no)
}

// bare is a fake cluster with no lever at all: it holds its Nodes in a
// field, not embedded, so none of their lever methods is promoted.
type bare struct{ n *Nodes }

func (b bare) Size() int             { return b.n.Size() }
func (b bare) Nodes() []testbed.Node { return b.n.Nodes() }
func (b bare) Host(i int) string     { return b.n.Host(i) }
func (b bare) Boot() time.Duration   { return b.n.Boot() }
func (b bare) Dir() string           { return b.n.Dir() }
func (b bare) Stop() error           { return b.n.Stop() }

// Log is an ordered record of what was done to fake clusters and rigs.
// A nil *Log keeps nothing. Safe for concurrent use.
type Log struct {
	mu    sync.Mutex
	calls []string
}

// Add appends one entry.
func (l *Log) Add(entry string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, entry)
}

// Entries returns a copy of the log.
func (l *Log) Entries() []string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// ErrStartFailed is a ready StartErr.
var ErrStartFailed = errors.New("fake: start failed")

var (
	_ testbed.Backend    = (*Backend)(nil)
	_ testbed.Cluster    = (*Nodes)(nil)
	_ testbed.Cluster    = bare{}
	_ fault.AppLever     = (*Nodes)(nil)
	_ fault.ProcessLever = (*Nodes)(nil)
	_ fault.HostLever    = (*Nodes)(nil)
)
