package netns

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/kernelfault"
	"github.com/faultbench/faultbench/internal/node"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/testbed"
	"github.com/faultbench/faultbench/internal/warden"
)

// Cluster is a running netns cluster. It implements testbed.Cluster, the
// process levers of the fault package and the kernel levers of
// kernelfault.
type Namespaces struct {
	spec  testbed.Spec
	net   *network
	guard *guard
	emit  func(record.Event)
	exe   string
	nodes []*nsNode
	// direct: the controller applies kernel faults itself instead of
	// through the warden (SetDirect; benchmarks compare the two).
	direct bool

	stopOnce sync.Once
	stopErr  error
}

var (
	_ testbed.Cluster            = (*Namespaces)(nil)
	_ fault.AppLever             = (*Namespaces)(nil)
	_ fault.ProcessLever         = (*Namespaces)(nil)
	_ fault.HostLever            = (*Namespaces)(nil)
	_ kernelfault.NetfilterLever = (*Namespaces)(nil)
	_ kernelfault.QdiscLever     = (*Namespaces)(nil)
	_ kernelfault.CgroupLever    = (*Namespaces)(nil)
)

type nodeState uint8

const (
	appRunning nodeState = iota
	appDown
	hostDown
	stopped
)

// nsNode is one node: its namespace, its cgroup, its service process.
type nsNode struct {
	c    *Namespaces
	id   int
	ns   string
	addr string
	dir  string
	log  string
	cg   cgroup

	mu        sync.Mutex
	state     nodeState
	proc      *exec.Cmd
	done      chan struct{} // closed when proc exits
	expected  bool          // proc's exit was asked for
	frozen    bool
	freeze    *kernelfault.Fault // the warden's freeze of this node
	blackhole *kernelfault.Fault // the warden's black hole of a downed host
	reachable bool
}

func start(ctx context.Context, spec testbed.Spec, p *prepared, emit func(record.Event)) (*Namespaces, error) {
	if emit == nil {
		emit = func(record.Event) {}
	}
	if spec.Clock == nil {
		spec.Clock = testbed.Since(time.Now())
	}
	exe := spec.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			_ = p.guard.release()
			return nil, err
		}
	}
	if spec.Dir == "" {
		dir, err := os.MkdirTemp("", "faultbench-nodes-")
		if err != nil {
			_ = p.guard.release()
			return nil, err
		}
		spec.Dir = dir
	}
	port := spec.Port
	if port == 0 {
		port = defaultPort
	}
	c := &Namespaces{spec: spec, net: p.net, guard: p.guard, emit: emit, exe: exe}
	p.guard.notifyLost(func(why string) {
		emit(record.Event{TS: c.now(), Kind: record.EventWardenLost, Detail: "lease renewal failed (" + why +
			"): this run's kernel faults are no longer guaranteed to be reverted if the controller dies; the run is not to be trusted"})
	})
	for i := 1; i <= spec.Nodes; i++ {
		cg, err := cgroupPaths(cgroupRoot, filepath.Join("faultbench", spec.RunID, fmt.Sprintf("node-%d", i)))
		if err == nil {
			for _, d := range cg.dirs {
				if err = c.guard.Add(warden.KindCgroup, d); err != nil {
					break
				}
			}
		}
		if err == nil {
			err = cg.create()
		}
		dir := filepath.Join(spec.Dir, fmt.Sprintf("node-%d", i))
		if err == nil {
			err = os.MkdirAll(dir, 0o755)
		}
		if err != nil {
			_ = c.Stop()
			return nil, fmt.Errorf("node %d: %w", i, err)
		}
		c.nodes = append(c.nodes, &nsNode{c: c, id: i, ns: p.net.ns(i), cg: cg, dir: dir,
			addr: net.JoinHostPort(p.net.host(i), strconv.Itoa(port)),
			log:  filepath.Join(spec.Dir, fmt.Sprintf("node-%d.log", i))})
	}
	errc := make(chan error, len(c.nodes))
	for _, n := range c.nodes {
		n.mu.Lock()
		done, err := n.spawnLocked()
		n.mu.Unlock()
		if err != nil {
			_ = c.Stop()
			return nil, fmt.Errorf("node %d: %w", n.id, err)
		}
		go func() { errc <- n.awaitReady(ctx, done, "started") }()
	}
	var errs []error
	for range c.nodes {
		if err := <-errc; err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		_ = c.Stop()
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// Size is the number of nodes.
func (c *Namespaces) Size() int { return len(c.nodes) }

// Nodes lists the nodes in order.
func (c *Namespaces) Nodes() []testbed.Node {
	out := make([]testbed.Node, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = testbed.Node{ID: n.id, Addr: n.addr}
	}
	return out
}

// Host is node i's address.
func (c *Namespaces) Host(i int) string {
	if i < 1 || i > len(c.nodes) {
		return ""
	}
	return c.net.host(i)
}

// Boot is how long a downed host stays down.
func (c *Namespaces) Boot() time.Duration { return c.spec.Boot }

// Dir holds the nodes' working directories and logs.
func (c *Namespaces) Dir() string { return c.spec.Dir }

// Namespace is node i's network namespace name (ip netns), for tests and
// diagnostics.
func (c *Namespaces) Namespace(i int) string { return c.net.ns(i) }

// Cgroup is node i's cgroup directories.
func (c *Namespaces) Cgroup(i int) []string { return c.nodes[i-1].cg.dirs }

// SetDirect makes the controller apply kernel faults itself rather than
// through the warden (for benchmarks: on a real run the warden applies
// them, so that it can revert them when the controller's lease lapses).
func (c *Namespaces) SetDirect(on bool) { c.direct = on }

// WardenPid is the warden's pid, for tests.
func (c *Namespaces) WardenPid() int { return c.guard.Pid() }

// WardenLost reports whether the warden is gone while the cluster runs.
func (c *Namespaces) WardenLost() bool { return c.guard.Lost() }

// Stop ends every node (SIGTERM to its service, SIGKILL to whatever is
// left in its cgroup after StopGrace), then removes every namespace, veth,
// cgroup and the journal, and ends the warden.
func (c *Namespaces) Stop() error {
	c.stopOnce.Do(func() {
		var wg sync.WaitGroup
		errs := make([]error, len(c.nodes))
		for i, n := range c.nodes {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = n.stop() }()
		}
		wg.Wait()
		if c.guard.Lost() {
			errs = append(errs, errors.New("the warden was lost during the run (lease renewal failed): had this controller died, its faults would not have been reverted"))
		}
		c.stopErr = errors.Join(append(errs, c.guard.release())...)
	})
	return c.stopErr
}

func (c *Namespaces) now() float64 { return c.spec.Clock.Now().Seconds() }

func (c *Namespaces) node(id int) (*nsNode, error) {
	if id < 1 || id > len(c.nodes) {
		return nil, fmt.Errorf("no node %d (cluster has %d)", id, len(c.nodes))
	}
	return c.nodes[id-1], nil
}

// do runs op on node id under its lock, refusing after Stop.
func (c *Namespaces) do(id int, op func(n *nsNode) error) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.state == stopped {
		return testbed.ErrStopped
	}
	if err := op(n); err != nil {
		return fmt.Errorf("node %d: %w", id, err)
	}
	return nil
}

// argv is node n's service command.
func (c *Namespaces) argv(n *nsNode) []string {
	host, port, _ := net.SplitHostPort(n.addr)
	if c.spec.System == testbed.CommandSystem {
		r := strings.NewReplacer("{addr}", host, "{port}", port, "{node}", strconv.Itoa(n.id), "{dir}", n.dir)
		out := make([]string, len(c.spec.Command))
		for i, a := range c.spec.Command {
			out[i] = r.Replace(a)
		}
		return out
	}
	peers := make([]string, len(c.nodes))
	for i, p := range c.nodes {
		peers[i] = p.addr
	}
	opts := c.spec.Options
	if c.spec.NodeOptions != nil {
		opts = maps.Clone(opts)
		if opts == nil {
			opts = map[string]string{}
		}
		maps.Copy(opts, c.spec.NodeOptions(n.id))
	}
	cfg := node.Config{Listen: n.addr, Node: n.id, Peers: peers, Dir: n.dir, Mode: c.spec.Mode,
		Pages: c.spec.Pages, PageSize: c.spec.PageSize, Options: opts}
	return append([]string{c.exe, "node", c.spec.System}, cfg.Args()...)
}

// joinScript moves the shell into the cgroup (every cgroup.procs file in
// $FB_CGROUP_PROCS, colon-separated) before it execs the command, so that
// no process of the node ever runs outside its cgroup. The command comes
// as arguments, never through the script.
const joinScript = `IFS=:; for f in $FB_CGROUP_PROCS; do echo $$ > "$f" || exit 125; done; unset FB_CGROUP_PROCS; exec "$@"`

// command wraps argv so that it runs in n's cgroup and network namespace.
func (n *nsNode) command(argv []string) *exec.Cmd {
	full := append([]string{"-c", joinScript, "faultbench-node", "nsenter", "--net=/run/netns/" + n.ns, "--"}, argv...)
	cmd := exec.Command("/bin/sh", full...)
	cmd.Dir = n.dir
	cmd.Env = append(append(os.Environ(), n.c.spec.Env...),
		testbed.RunIDEnv+"="+n.c.spec.RunID,
		"FB_CGROUP_PROCS="+strings.Join(n.cg.procsFiles(), ":"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

func (n *nsNode) setReachableLocked(up bool, detail string) {
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

// spawnLocked starts the service; the host must be up.
func (n *nsNode) spawnLocked() (chan struct{}, error) {
	if n.state == stopped {
		return nil, testbed.ErrStopped
	}
	logf, err := os.OpenFile(n.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := n.command(n.c.argv(n))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Args, err)
	}
	done := make(chan struct{})
	n.proc, n.done, n.expected, n.state = cmd, done, false, appRunning
	go n.watch(cmd, done)
	return done, nil
}

// watch reaps cmd and records an exit nobody asked for as the node going down.
func (n *nsNode) watch(cmd *exec.Cmd, done chan struct{}) {
	err := cmd.Wait()
	close(done)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == cmd && !n.expected {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		n.proc, n.state = nil, appDown
		n.setReachableLocked(false, fmt.Sprintf("exited: %v", err))
	}
}

// awaitReady polls the readiness check (bounded by ReadyTimeout).
func (n *nsNode) awaitReady(ctx context.Context, done chan struct{}, detail string) error {
	deadline := time.Now().Add(n.c.spec.ReadyTimeout)
	for try := 0; ; try++ {
		select {
		case <-done:
			return fmt.Errorf("node %d: its service exited before it was ready: see %s", n.id, n.log)
		case <-ctx.Done():
			return fmt.Errorf("node %d: %w", n.id, ctx.Err())
		default:
		}
		err := n.c.ready(n.addr)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d: not ready at %s after %v: %v", n.id, n.addr, n.c.spec.ReadyTimeout, err)
		}
		time.Sleep(min(25*time.Millisecond*time.Duration(try+1), 200*time.Millisecond))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done == done {
		n.setReachableLocked(!n.frozen, detail)
	}
	return nil
}

func (c *Namespaces) ready(addr string) error {
	path := c.spec.Ready
	if path == "" && c.spec.System != testbed.CommandSystem {
		path = "/health"
	}
	if path == "" {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		return conn.Close()
	}
	client := http.Client{Timeout: time.Second}
	resp, err := client.Get("http://" + addr + path)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return nil
}

// endLocked ends the service: SIGTERM to its group, SIGKILL after grace.
func (n *nsNode) endLocked(grace time.Duration) {
	if n.proc == nil {
		return
	}
	if n.frozen {
		_ = n.thawLocked()
	}
	n.expected = true
	pid := n.proc.Process.Pid
	if grace > 0 {
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		select {
		case <-n.done:
		case <-time.After(grace):
		}
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-n.done:
	case <-time.After(5 * time.Second):
	}
	n.proc = nil
	if n.state == appRunning {
		n.state = appDown
	}
}

func (n *nsNode) stop() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.endLocked(n.c.spec.StopGrace)
	n.state = stopped
	return n.cg.kill() // burners and balloons the warden runs in it too
}

// KillApp kills node id's service (its process group) with SIGKILL; the
// host stays up.
func (c *Namespaces) KillApp(id int) error {
	return c.do(id, func(n *nsNode) error {
		if n.state != appRunning {
			return nil
		}
		n.endLocked(0)
		n.setReachableLocked(false, "application killed")
		return nil
	})
}

// StartApp starts node id's service, booting a downed host first (its
// black hole removed).
func (c *Namespaces) StartApp(id int) error {
	return c.do(id, func(n *nsNode) error {
		if n.state == appRunning {
			return nil
		}
		detail := "application started"
		var bootErr error
		if n.state == hostDown {
			detail = "booted"
			t0 := time.Now()
			ev, err := n.unblackholeLocked()
			if err != nil && !errors.Is(err, errRevertedDirectly) {
				return fmt.Errorf("boot: %w", err)
			}
			bootErr = err // the warden failed, the black hole is gone: boot
			n.c.emit(record.Event{TS: n.c.now(), Kind: "fault.reverted", Node: id,
				Detail: fmt.Sprintf("host booting: black hole removed after %s%s: %s; services starting", ms(time.Since(t0)), n.c.via(), ev)})
		}
		if err := n.startLocked(detail); err != nil {
			return errors.Join(bootErr, err)
		}
		if bootErr != nil {
			return fmt.Errorf("boot: %w", bootErr)
		}
		return nil
	})
}

func (n *nsNode) startLocked(detail string) error {
	done, err := n.spawnLocked()
	if err != nil {
		return err
	}
	go func() {
		if err := n.awaitReady(context.Background(), done, detail); err != nil {
			n.mu.Lock()
			if !n.expected && n.state != stopped {
				n.c.emit(record.Event{TS: n.c.now(), Kind: "node.down", Node: n.id, Detail: err.Error()})
			}
			n.mu.Unlock()
		}
	}()
	return nil
}

// RestartApp ends node id's service gracefully and starts it again.
func (c *Namespaces) RestartApp(id int) error {
	return c.do(id, func(n *nsNode) error {
		n.endLocked(n.c.spec.StopGrace)
		n.setReachableLocked(false, "restarting")
		var bootErr error
		if n.state == hostDown {
			if _, bootErr = n.unblackholeLocked(); bootErr != nil && !errors.Is(bootErr, errRevertedDirectly) {
				return fmt.Errorf("boot: %w", bootErr)
			}
		}
		return errors.Join(bootErr, n.startLocked("restarted"))
	})
}

// Pause has the warden freeze every process of node id's cgroup (the
// cgroup freezer) and emits fault.effective with the processes' states.
func (c *Namespaces) Pause(id int) error {
	return c.do(id, func(n *nsNode) error {
		if n.frozen {
			return nil
		}
		t0 := time.Now()
		f := kernelfault.Fault{ID: faultID(kernelfault.Label{Fault: "node-freeze"}, id), Target: kernelfault.Target{Cgroup: n.cg.dirs}, Freeze: true}
		ev, err := c.inject(f)
		if err != nil {
			return fmt.Errorf("node-freeze on node %d: %w", id, err)
		}
		n.frozen, n.freeze = true, &f
		n.c.emit(record.Event{TS: n.c.now(), Kind: "fault.effective", Node: id,
			Detail: fmt.Sprintf("cgroup %s frozen after %s%s: %s; %s", n.cg.dirs[0], ms(time.Since(t0)), c.via(), ev, procStates(n.cg))})
		n.setReachableLocked(false, "processes frozen (cgroup freezer)")
		return nil
	})
}

// Resume has the warden thaw node id's cgroup.
func (c *Namespaces) Resume(id int) error {
	return c.do(id, func(n *nsNode) error {
		if !n.frozen {
			return nil
		}
		t0 := time.Now()
		err := n.thawLocked()
		if err != nil && !errors.Is(err, errRevertedDirectly) {
			return fmt.Errorf("thaw node %d: %w", id, err)
		}
		n.c.emit(record.Event{TS: n.c.now(), Kind: "fault.reverted", Node: id,
			Detail: fmt.Sprintf("cgroup thawed after %s%s: %s", ms(time.Since(t0)), c.via(), procStates(n.cg))})
		if n.proc != nil {
			n.setReachableLocked(true, "processes thawed")
		}
		if err != nil {
			return fmt.Errorf("thaw node %d: %w", id, err)
		}
		return nil
	})
}

// thawLocked reverts the node's freeze through the warden (directly when
// the warden fails, which is then the error).
func (n *nsNode) thawLocked() error {
	n.frozen = false
	if n.freeze == nil {
		return n.cg.setFrozen(false)
	}
	f := *n.freeze
	n.freeze = nil
	_, err := n.c.revert(f)
	return err
}

// HostDown kills every process of node id's cgroup (SIGTERM first when
// graceful) and has the warden black-hole its address until StartApp
// boots it: an nft table in the node's namespace dropping every packet on
// its interface, which the warden lifts if the controller's lease lapses.
func (c *Namespaces) HostDown(id int, graceful bool) error {
	return c.do(id, func(n *nsNode) error {
		if n.state == hostDown {
			return nil
		}
		t0 := time.Now()
		grace := time.Duration(0)
		if graceful {
			grace = n.c.spec.StopGrace
		}
		n.endLocked(grace)
		if err := n.cg.kill(); err != nil { // burners and balloons too
			return fmt.Errorf("node-crash: %w", err)
		}
		n.state = hostDown
		n.setReachableLocked(false, "host down")
		// The black hole makes the address silent, as a powered-off
		// machine's: every packet on the interface dropped.
		f := kernelfault.Fault{ID: faultID(kernelfault.Label{Fault: "host-down"}, id), Target: n.target(),
			Rule: &kernelfault.Rule{Table: "fbdown", All: true, Probe: []string{c.net.gateway()}}}
		ev, err := c.inject(f)
		if err != nil {
			return fmt.Errorf("node-crash: black-hole the address: %w", err)
		}
		n.blackhole = &f
		pids, _ := n.cg.pids()
		n.c.emit(record.Event{TS: n.c.now(), Kind: "fault.effective", Node: id,
			Detail: fmt.Sprintf("host down after %s%s: %d processes left in cgroup, address black-holed: %s", ms(time.Since(t0)), c.via(), len(pids), ev)})
		return nil
	})
}

// unblackholeLocked lifts the black hole of a downed host (through the
// warden; errRevertedDirectly when the warden failed and the controller
// lifted it itself) and returns the evidence.
func (n *nsNode) unblackholeLocked() (string, error) {
	if n.blackhole == nil {
		return "no black hole", nil
	}
	f := *n.blackhole
	n.blackhole = nil
	return n.c.revert(f)
}

// procStates summarises the kernel states of a cgroup's processes
// (/proc/PID/stat), e.g. "3 processes: D=3".
func procStates(cg cgroup) string {
	pids, err := cg.pids()
	if err != nil {
		return err.Error()
	}
	count := map[byte]int{}
	for _, p := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
			count[b[i+2]]++
		}
	}
	var parts []string
	for _, s := range []byte("RSDTtZ") {
		if count[s] > 0 {
			parts = append(parts, fmt.Sprintf("%c=%d", s, count[s]))
		}
	}
	return fmt.Sprintf("%d processes in state %s", len(pids), strings.Join(parts, " "))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }
