package local

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
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/node"
	"github.com/faultbench/faultbench/internal/placement"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/testbed"
)

// Node is one node as clients see it.
type Node = testbed.Node

// Spec says what cluster to start (testbed.Spec).
type Spec = testbed.Spec

// CommandSystem is the system of the user's own command.
const CommandSystem = testbed.CommandSystem

// ErrStopped is returned by a node operation after Stop.
var ErrStopped = testbed.ErrStopped

// Processes is a running local cluster: one process group per node, on its
// own loopback address. Create it with Start (or the registered Backend);
// end it with Stop. It implements testbed.Cluster and the levers
// fault.AppLever, fault.ProcessLever and fault.HostLever.
type Processes struct {
	spec    Spec
	plan    testbed.Plan
	emit    func(record.Event)
	spawner *spawner
	reaper  *reaper
	nodes   []*nodeProc
	exe     string
	exits   exitHook     // unplanned exits (exits.go)
	contain *containment // every process a node starts (contain.go)
	// nodeCPUs is the affinity every node process is born with: cluster.cpus,
	// or else the CPUs this process had when the cluster started, so that
	// pinning the controller afterwards (workload.cpus) never drags a node
	// restarted later onto the controller's CPUs.
	nodeCPUs []int

	stopOnce sync.Once
	stopErr  error
}

// Start plans the loopback addresses of spec's nodes (see Backend.Plan)
// and starts them: see Backend.Start.
func Start(ctx context.Context, spec Spec, emit func(record.Event)) (*Processes, error) {
	plan, err := Backend{}.Plan(spec)
	if err != nil {
		return nil, err
	}
	return start(ctx, spec, plan, emit)
}

// start starts spec.Nodes nodes and returns once every node answers its
// readiness check (each bounded by spec.ReadyTimeout). On any failure it
// stops whatever it started and returns one error naming the node and the
// cause: the address is in use, the command exited at once (with the last
// line it logged), or the readiness check did not pass in time.
//
// emit receives node.up and node.down events for the cluster's lifetime; it
// may be nil. ctx bounds only the start; the cluster lives until Stop.
func start(ctx context.Context, spec Spec, plan testbed.Plan, emit func(record.Event)) (*Processes, error) {
	if err := validate(&spec); err != nil {
		return nil, err
	}
	if len(plan.Hosts) != spec.Nodes {
		return nil, fmt.Errorf("cluster: the plan has %d hosts for %d nodes", len(plan.Hosts), spec.Nodes)
	}
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
			return nil, fmt.Errorf("cluster: find own executable: %w", err)
		}
	}
	if spec.Dir == "" {
		dir, err := os.MkdirTemp("", "faultbench-nodes-")
		if err != nil {
			return nil, err
		}
		spec.Dir = dir
	}
	c := &Processes{spec: spec, plan: plan, emit: emit, exe: exe}
	if spec.CPUs != "" {
		c.nodeCPUs, _ = placement.ParseCPUList(spec.CPUs) // validate checked it
	} else if own, err := placement.Allowed(); err == nil {
		c.nodeCPUs = own
	}
	addrs, err := c.assignAddrs()
	if err != nil {
		return nil, err
	}
	for i, addr := range addrs {
		dir := filepath.Join(spec.Dir, fmt.Sprintf("node-%d", i+1))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("node %d: %w", i+1, err)
		}
		c.nodes = append(c.nodes, &nodeProc{c: c, id: i + 1, addr: addr, dir: dir,
			log: filepath.Join(spec.Dir, fmt.Sprintf("node-%d.log", i+1))})
	}
	reaperEnv := spec.Env
	if spec.RunID != "" {
		reaperEnv = append(slices.Clip(reaperEnv), testbed.RunIDEnv+"="+spec.RunID)
	}
	if c.reaper, err = startReaper(exe, reaperEnv); err != nil {
		return nil, err
	}
	c.contain = newContainment(c.reaper)
	c.spawner = newSpawner()

	readyc := make(chan error, len(c.nodes))
	for _, n := range c.nodes {
		n.mu.Lock()
		p, err := n.spawnLocked()
		n.mu.Unlock()
		if err != nil {
			_ = c.Stop()
			return nil, fmt.Errorf("node %d: %w", n.id, err)
		}
		go func() { readyc <- n.awaitReady(ctx, p, "started") }()
	}
	var errs []error
	for range c.nodes {
		if err := <-readyc; err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		_ = c.Stop()
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// assignAddrs gives node i the plan's host at spec.Port (or a free port),
// checking first that nobody else holds it.
func (c *Processes) assignAddrs() ([]string, error) {
	addrs := make([]string, c.spec.Nodes)
	for i := range addrs {
		host := c.plan.Host(i + 1)
		addr := net.JoinHostPort(host, strconv.Itoa(c.spec.Port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			if c.spec.Port != 0 && strings.Contains(err.Error(), "address already in use") {
				return nil, fmt.Errorf("node %d: %s is already in use (another faultbench run? press and ssm clusters take 127.0.0.11 and up, port 8080 unless cluster.port says otherwise); stop what listens there or give this run another cluster.port", i+1, addr)
			}
			return nil, fmt.Errorf("node %d: cannot listen on %s: %w", i+1, addr, err)
		}
		addrs[i] = ln.Addr().String()
		_ = ln.Close()
	}
	return addrs, nil
}

// Nodes lists the nodes in order; the caller owns the slice.
func (c *Processes) Nodes() []Node {
	out := make([]Node, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = Node{ID: n.id, Addr: n.addr}
	}
	return out
}

// Host is node i's host, as planned; "" for a node the cluster lacks.
func (c *Processes) Host(i int) string { return c.plan.Host(i) }

// Size is the number of nodes.
func (c *Processes) Size() int { return len(c.nodes) }

// Boot is how long a downed host stays down before its services restart.
func (c *Processes) Boot() time.Duration { return c.spec.Boot }

// Dir is the directory holding the nodes' working directories and logs.
func (c *Processes) Dir() string { return c.spec.Dir }

// Stop ends every node (SIGTERM, then SIGKILL after StopGrace; a stopped
// node is continued first), releases every downed host's address, and ends
// the reaper. It emits no events. Safe to call twice and concurrently with
// node operations, which return ErrStopped afterwards.
func (c *Processes) Stop() error {
	c.stopOnce.Do(func() {
		var wg sync.WaitGroup
		errs := make([]error, len(c.nodes))
		for i, n := range c.nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = n.stop()
			}()
		}
		wg.Wait()
		if c.contain != nil {
			errs = append(errs, c.contain.close())
		}
		if c.spawner != nil {
			c.spawner.close()
		}
		if c.reaper != nil {
			c.reaper.close()
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

func (c *Processes) node(id int) (*nodeProc, error) {
	if id < 1 || id > len(c.nodes) {
		return nil, fmt.Errorf("no node %d (cluster has %d)", id, len(c.nodes))
	}
	return c.nodes[id-1], nil
}

// command builds the argv of node n.
func (c *Processes) command(n *nodeProc) *exec.Cmd {
	host, port, _ := net.SplitHostPort(n.addr)
	var argv []string
	if c.spec.System == CommandSystem {
		r := strings.NewReplacer("{addr}", host, "{port}", port, "{node}", strconv.Itoa(n.id), "{dir}", n.dir)
		for _, a := range c.spec.Command {
			argv = append(argv, r.Replace(a))
		}
	} else {
		peers := make([]string, len(c.nodes))
		for i, p := range c.nodes {
			peers[i] = p.addr
		}
		cfg := node.Config{Listen: n.addr, Node: n.id, Peers: peers, Dir: n.dir, Mode: c.spec.Mode,
			Pages: c.spec.Pages, PageSize: c.spec.PageSize, Options: c.nodeOptions(n.id)}
		argv = append([]string{c.exe, "node", c.spec.System}, cfg.Args()...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), c.spec.Env...)
	if c.spec.RunID != "" {
		cmd.Env = append(cmd.Env, testbed.RunIDEnv+"="+c.spec.RunID)
	}
	return cmd
}

// nodeOptions is Spec.Options with Spec.NodeOptions(id) merged over it.
func (c *Processes) nodeOptions(id int) map[string]string {
	if c.spec.NodeOptions == nil {
		return c.spec.Options
	}
	opts := maps.Clone(c.spec.Options)
	if opts == nil {
		opts = map[string]string{}
	}
	maps.Copy(opts, c.spec.NodeOptions(id))
	return opts
}

// ready reports whether the node at addr answers its readiness check once.
func (c *Processes) ready(addr string) error {
	path := c.readyPath()
	if path == "" {
		conn, err := net.DialTimeout("tcp", addr, readyTryTimeout)
		if err != nil {
			return err
		}
		return conn.Close()
	}
	client := http.Client{Timeout: readyTryTimeout}
	resp, err := client.Get("http://" + addr + path)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: GET %s: %s", errNotReady, path, resp.Status)
	}
	return nil
}
