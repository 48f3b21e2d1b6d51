package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/kernelfault"
	"github.com/faultbench/faultbench/internal/provenance"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/testbed"
)

// Attached is a running stack a run attached to (cluster.attach): its
// containers are the nodes, but the run started none of them and stops
// none. It implements testbed.Cluster, the process levers through the
// engine and the host's kill(2), the kernel levers in each container's
// namespace, testbed.Entry (the users' entry point), testbed.Describer,
// and the operator's ExitWatcher and RestartWatcher: a watch loop notices
// what the engine does by itself (a restart by the container's restart
// policy, an exit nobody caused).
//
// Every attached container is journalled with the run's warden before the
// first fault, and restored (unpaused, started, the run's nft tables and
// qdisc deleted) by the same code whether the run ends, fails, is
// interrupted, or its controller is killed (the warden) — see
// restoreAttached. A container is never stopped or removed at teardown.
type Attached struct {
	eng   Engine
	spec  testbed.Spec
	att   attachment
	guard *guard
	emit  func(record.Event)
	nodes []*attNode

	mu       sync.Mutex
	exits    testbed.ExitObserver
	restarts testbed.RestartObserver

	stopWatch chan struct{}
	watchDone chan struct{}
	stopOnce  sync.Once
	stopErr   error
}

var (
	_ testbed.Cluster                                     = (*Attached)(nil)
	_ testbed.Entry                                       = (*Attached)(nil)
	_ testbed.Describer                                   = (*Attached)(nil)
	_ fault.AppLever                                      = (*Attached)(nil)
	_ fault.ProcessLever                                  = (*Attached)(nil)
	_ fault.HostLever                                     = (*Attached)(nil)
	_ kernelfault.NetfilterLever                          = (*Attached)(nil)
	_ kernelfault.QdiscLever                              = (*Attached)(nil)
	_ interface{ WatchRestarts(testbed.RestartObserver) } = (*Attached)(nil)
)

// attNode is one attached container and what the run knows of it. The
// fields after mu are what the run last saw or made: the watch loop
// compares the engine's state with them, so a change the run did not make
// is the engine's (or someone else's).
type attNode struct {
	c  *Attached
	id int
	attachedNode

	mu        sync.Mutex
	running   bool
	paused    bool
	restarts  int  // the engine's restart count as last seen
	hostDown  bool // killed through the engine (node-crash): the engine will not restart it
	reachable bool
	stopped   bool
	gen       int // bumped at every start, so a stale readiness wait does nothing
}

// KindAttached is the journal record of an attached container (Name:
// RUN/CONTAINER-ID); the warden restores it rather than removing it.
const KindAttached = "docker-attached"

// runTable is the prefix of the nft tables a run creates in a container's
// namespace (its own or an attached one), so the warden deletes the run's
// and no one else's.
func runTable(run string) string { return "fb" + run + "t" }

// attach journals every node with the run's warden, waits until each
// answers, and starts the watch loop.
func attach(ctx context.Context, eng Engine, spec testbed.Spec, att attachment, emit func(record.Event)) (*Attached, error) {
	if emit == nil {
		emit = func(record.Event) {}
	}
	if spec.Clock == nil {
		spec.Clock = testbed.Since(time.Now())
	}
	if spec.Dir == "" {
		dir, err := os.MkdirTemp("", "faultbench-nodes-")
		if err != nil {
			return nil, err
		}
		spec.Dir = dir
	}
	g, err := startGuard(spec)
	if err != nil {
		return nil, err
	}
	a := &Attached{eng: eng, spec: spec, att: att, guard: g, emit: emit,
		stopWatch: make(chan struct{}), watchDone: make(chan struct{})}
	g.notifyLost(func(why string) {
		emit(record.Event{TS: a.now(), Kind: record.EventWardenLost, Detail: "lease renewal failed (" + why +
			"): the attached containers are no longer guaranteed to be restored if the controller dies; the run is not to be trusted"})
	})
	fail := func(err error) (*Attached, error) {
		close(a.watchDone) // the watch loop never started
		return nil, errors.Join(err, a.Stop())
	}
	for i, an := range att.nodes {
		n := &attNode{c: a, id: i + 1, attachedNode: an, running: true}
		a.nodes = append(a.nodes, n)
		if err := g.Add(KindAttached, spec.RunID+"/"+an.ID); err != nil {
			return fail(fmt.Errorf("node %d: journal container %s: %w", n.id, an.Name, err))
		}
		info, err := a.inspect(an.ID)
		if err != nil {
			return fail(fmt.Errorf("node %d: container %s: %w", n.id, an.Name, err))
		}
		n.restarts = info.RestartCount
	}
	if err := a.awaitAll(ctx); err != nil {
		return fail(err)
	}
	emit(record.Event{TS: a.now(), Kind: "system.docker", Detail: a.describeLine()})
	go a.watch()
	return a, nil
}

func (a *Attached) now() float64 { return a.spec.Clock.Now().Seconds() }

func (a *Attached) inspect(id string) (ContainerInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	return a.eng.ContainerInspect(ctx, id)
}

func (a *Attached) awaitAll(ctx context.Context) error {
	errc := make(chan error, len(a.nodes))
	for _, n := range a.nodes {
		go func() {
			errc <- n.awaitReady(ctx, fmt.Sprintf("attached: container %s (%s), image %s, restart policy %s", n.Name, shortID(n.ID), n.ImageRef, n.Restart))
		}()
	}
	var errs []error
	for range a.nodes {
		if err := <-errc; err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// awaitReady polls the node's readiness check, bounded by ReadyTimeout,
// and marks it reachable (node.up) unless something started or stopped it
// meanwhile.
func (n *attNode) awaitReady(ctx context.Context, detail string) error {
	n.mu.Lock()
	gen := n.gen
	n.mu.Unlock()
	deadline := time.Now().Add(n.c.spec.ReadyTimeout)
	for try := 0; ; try++ {
		if ctx.Err() != nil {
			return fmt.Errorf("node %d: %w", n.id, ctx.Err())
		}
		err := readyCheck(n.c.spec, n.Addr)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d: container %s does not answer at %s after %v: %v (is cluster.port or cluster.ready right?)", n.id, n.Name, n.Addr, n.c.spec.ReadyTimeout, err)
		}
		time.Sleep(min(25*time.Millisecond*time.Duration(try+1), 200*time.Millisecond))
	}
	n.mu.Lock()
	if n.gen == gen && n.running && !n.paused && !n.stopped {
		n.setReachableLocked(true, detail)
	}
	n.mu.Unlock()
	if obs := n.c.exitObserver(); obs != nil {
		n.mu.Lock()
		obs.Ready(n.id)
		n.mu.Unlock()
	}
	return nil
}

// readyCheck is a node's readiness check: GET spec.Ready (for a node kind
// of this binary /health by default) until 200, else a TCP connect.
func readyCheck(spec testbed.Spec, addr string) error {
	if spec.Ready == "" && (spec.System == ContainerSystem || spec.System == testbed.CommandSystem) {
		return tcpReady(addr)
	}
	c := &Containers{spec: spec}
	return c.ready(addr)
}

func (n *attNode) setReachableLocked(up bool, detail string) {
	if up == n.reachable {
		return
	}
	n.reachable = up
	kind := "node.down"
	if up {
		kind = "node.up"
	}
	n.c.emit(record.Event{TS: n.c.now(), Kind: kind, Node: n.id, Detail: detail})
}

func (n *attNode) event(kind, detail string) {
	n.c.emit(record.Event{TS: n.c.now(), Kind: kind, Node: n.id, Detail: detail})
}

// WatchExits implements the operator's ExitWatcher: an attached container
// that exits when the run did not end it is an unplanned fault.
func (a *Attached) WatchExits(obs testbed.ExitObserver) {
	a.mu.Lock()
	a.exits = obs
	a.mu.Unlock()
}

// WatchRestarts implements the operator's RestartWatcher: a restart by the
// engine's restart policy is the recovery of the crash it follows.
func (a *Attached) WatchRestarts(obs testbed.RestartObserver) {
	a.mu.Lock()
	a.restarts = obs
	a.mu.Unlock()
}

func (a *Attached) exitObserver() testbed.ExitObserver {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.exits
}

func (a *Attached) restartObserver() testbed.RestartObserver {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.restarts
}

// Size is the number of nodes.
func (a *Attached) Size() int { return len(a.nodes) }

// Nodes lists the nodes in order, at the addresses their clients use.
func (a *Attached) Nodes() []testbed.Node {
	out := make([]testbed.Node, len(a.nodes))
	for i, n := range a.nodes {
		out[i] = testbed.Node{ID: n.id, Addr: n.Addr}
	}
	return out
}

// Host is node i's address on its network.
func (a *Attached) Host(i int) string {
	if i < 1 || i > len(a.nodes) {
		return ""
	}
	return a.nodes[i-1].IP.String()
}

// Boot is how long a node-crashed container stays down.
func (a *Attached) Boot() time.Duration { return a.spec.Boot }

// Dir holds the run's files (the warden's log).
func (a *Attached) Dir() string { return a.spec.Dir }

// Entry is where the users' clients send: attach.target's addresses, or
// nil (every node).
func (a *Attached) Entry() []string { return a.att.entryAddrs() }

// Container is node i's container id.
func (a *Attached) Container(i int) string { return a.nodes[i-1].ID }

// WardenPid is the warden's pid, for tests.
func (a *Attached) WardenPid() int { return a.guard.Pid() }

// Describe says what runs the nodes, for the console, provenance.json and
// the report.
func (a *Attached) Describe() provenance.Testbed {
	tb := provenance.Testbed{Backend: Name, Detail: fmt.Sprintf("(API %s), attached to %s", a.eng.Version(), a.what())}
	for _, n := range a.nodes {
		tb.Nodes = append(tb.Nodes, provenance.TestbedNode{Node: n.id, Addr: n.Addr, Container: n.Name, ContainerID: n.ID,
			Image: n.ImageRef, ImageID: n.ImageID, RestartPolicy: n.Restart})
	}
	return tb
}

func (a *Attached) what() string {
	what := "containers"
	if a.att.project != "" {
		what = "compose project " + a.att.project
	}
	if e := a.att.entryAddrs(); len(e) > 0 {
		what += ", clients to " + strings.Join(e, ",")
	}
	return what
}

// describeLine is the system.docker event's detail.
func (a *Attached) describeLine() string {
	parts := []string{fmt.Sprintf("backend docker (API %s), attached to %s", a.eng.Version(), a.what())}
	for _, n := range a.nodes {
		parts = append(parts, fmt.Sprintf("node %d: container %s (%s) image %s %s, restart policy %s, at %s",
			n.id, n.Name, shortID(n.ID), n.ImageRef, shortID(strings.TrimPrefix(n.ImageID, "sha256:")), n.Restart, n.Addr))
	}
	return strings.Join(parts, "; ")
}

// Stop ends the watch loop and restores every attached container through
// the warden's journal (restoreAttached: unpaused, started if down, the
// run's rules deleted), then ends the warden. It stops and removes
// nothing.
func (a *Attached) Stop() error {
	a.stopOnce.Do(func() {
		close(a.stopWatch)
		<-a.watchDone
		for _, n := range a.nodes {
			n.mu.Lock()
			n.stopped = true
			n.mu.Unlock()
		}
		a.stopErr = a.guard.release()
	})
	return a.stopErr
}
