package docker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/kernelfault"
	"github.com/faultbench/faultbench/internal/node"
	"github.com/faultbench/faultbench/internal/provenance"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/testbed"
)

// holderKind is the node kind of a node's holder container: it only
// waits, holding the node's network namespace (and address) while the
// application container comes and goes, as a host outlives its server.
const holderKind = "holder"

func init() {
	node.Register(holderKind, func(ctx context.Context, _ node.Config) error {
		<-ctx.Done()
		return nil
	})
}

// callTimeout bounds every engine call.
const callTimeout = 30 * time.Second

// Containers is a running docker cluster. It implements testbed.Cluster,
// the process levers of the fault package (through the engine) and the
// kernel levers of kernelfault (in each node's namespaces).
type Containers struct {
	eng   Engine
	spec  testbed.Spec
	image Image
	// userImageID is system container's image id (its name is spec.Image).
	userImageID string
	subnet      netip.Prefix
	netID       string
	guard       *guard
	emit        func(record.Event)
	nodes       []*ctrNode

	stopOnce sync.Once
	stopErr  error
}

var (
	_ testbed.Cluster    = (*Containers)(nil)
	_ fault.AppLever     = (*Containers)(nil)
	_ fault.ProcessLever = (*Containers)(nil)
	_ fault.HostLever    = (*Containers)(nil)
	_ testbed.Describer  = (*Containers)(nil)

	_ kernelfault.NetfilterLever = (*Containers)(nil)
	_ kernelfault.QdiscLever     = (*Containers)(nil)
	_ kernelfault.CgroupLever    = (*Containers)(nil)
	_ kernelfault.QueueLever     = (*Containers)(nil)
)

// ctrNode is one node: a holder container owning the network namespace
// and an application container sharing it.
type ctrNode struct {
	c      *Containers
	id     int
	addr   string // ip:port
	ip     netip.Addr
	dir    string
	log    string
	holder string // container ids
	app    string

	mu        sync.Mutex
	appUp     bool
	hostUp    bool
	paused    bool
	reachable bool
	stopped   bool
	gen       int // bumped at every start, so a stale readiness wait does nothing
}

func containerName(run string, id int, role string) string {
	return fmt.Sprintf("fb-%s-n%d-%s", run, id, role)
}

func start(ctx context.Context, eng Engine, spec testbed.Spec, subnet netip.Prefix, emit func(record.Event)) (*Containers, error) {
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
			return nil, err
		}
	}
	if spec.Dir == "" {
		dir, err := os.MkdirTemp("", "faultbench-nodes-")
		if err != nil {
			return nil, err
		}
		spec.Dir = dir
	}
	dir, err := filepath.Abs(spec.Dir)
	if err != nil {
		return nil, err
	}
	spec.Dir = dir
	img, err := EnsureImage(ctx, eng, exe)
	if err != nil {
		return nil, err
	}
	userImageID := ""
	if spec.System == ContainerSystem {
		if info, err := eng.ImageInspect(ctx, spec.Image); err == nil {
			userImageID = info.ID
		}
	}
	g, err := startGuard(spec)
	if err != nil {
		return nil, err
	}
	c := &Containers{eng: eng, spec: spec, image: img, userImageID: userImageID, subnet: subnet, guard: g, emit: emit}
	g.notifyLost(func(why string) {
		emit(record.Event{TS: c.now(), Kind: record.EventWardenLost, Detail: "lease renewal failed (" + why +
			"): this run's containers are no longer guaranteed to be removed if the controller dies; the run is not to be trusted"})
	})
	if err := c.create(ctx); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	if err := c.awaitAll(ctx); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	emit(record.Event{TS: c.now(), Kind: "system.docker", Detail: c.describeLine()})
	return c, nil
}

// create makes the network and every node's containers and starts them.
func (c *Containers) create(ctx context.Context) error {
	port := c.spec.Port
	if port == 0 {
		port = defaultPort
	}
	netName := "fb-" + c.spec.RunID
	if err := c.guard.Add(KindNetwork, netName); err != nil {
		return err
	}
	id, err := c.eng.NetworkCreate(ctx, netName, c.subnet, map[string]string{LabelRun: c.spec.RunID})
	if err != nil {
		return fmt.Errorf("docker: create network %s (%s): %w", netName, c.subnet, err)
	}
	c.netID = id
	for i := 1; i <= c.spec.Nodes; i++ {
		ip := hostAddr(c.subnet, i)
		n := &ctrNode{c: c, id: i, ip: ip, addr: net.JoinHostPort(ip.String(), strconv.Itoa(port)),
			dir: filepath.Join(c.spec.Dir, fmt.Sprintf("node-%d", i)),
			log: filepath.Join(c.spec.Dir, fmt.Sprintf("node-%d.log", i))}
		c.nodes = append(c.nodes, n)
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			return err
		}
		if err := n.create(ctx, netName); err != nil {
			return fmt.Errorf("node %d: %w", i, err)
		}
	}
	return nil
}

func (n *ctrNode) create(ctx context.Context, netName string) error {
	c := n.c
	labels := func(role string) map[string]string {
		return map[string]string{LabelRun: c.spec.RunID, LabelNode: strconv.Itoa(n.id), LabelRole: role}
	}
	env := append([]string{testbed.RunIDEnv + "=" + c.spec.RunID}, c.spec.Env...)
	hname := containerName(c.spec.RunID, n.id, "net")
	if err := c.guard.Add(KindContainer, hname); err != nil {
		return err
	}
	hold := node.Config{Listen: "-", Node: n.id}
	hl := labels("holder")
	hl[LabelIP] = n.ip.String() // for the warden's restore of a disconnected holder
	id, err := c.eng.ContainerCreate(ctx, ContainerSpec{Name: hname, Image: c.image.Ref, Network: netName, IP: n.ip,
		Cmd: append([]string{"node", holderKind}, hold.Args()...), Env: env, Labels: hl})
	if err != nil {
		return fmt.Errorf("create %s: %w", hname, err)
	}
	n.holder = id
	if err := c.eng.ContainerStart(ctx, id); err != nil {
		return explainStart(hname, n.ip, err)
	}
	aname := containerName(c.spec.RunID, n.id, "app")
	if err := c.guard.Add(KindContainer, aname); err != nil {
		return err
	}
	id, err = c.eng.ContainerCreate(ctx, c.appSpec(n, env, labels("app")))
	if err != nil {
		return fmt.Errorf("create %s: %w", aname, err)
	}
	n.app = id
	n.hostUp = true
	return n.startApp(ctx)
}

// explainStart names the likely cause of a container that does not start.
func explainStart(name string, ip netip.Addr, err error) error {
	msg := err.Error()
	if strings.Contains(msg, "address already in use") || strings.Contains(msg, "Address already in use") {
		return fmt.Errorf("start %s: address %s or a port is taken: %w (remove stale runs with faultbench cleanup)", name, ip, err)
	}
	return fmt.Errorf("start %s: %w", name, err)
}

// argv is the application container's command (after the entrypoint).
func (c *Containers) argv(n *ctrNode) []string {
	peers := make([]string, c.spec.Nodes)
	for i := range peers {
		peers[i] = net.JoinHostPort(hostAddr(c.subnet, i+1).String(), portOf(n.addr))
	}
	opts := c.spec.Options
	if c.spec.NodeOptions != nil {
		opts = maps.Clone(opts)
		if opts == nil {
			opts = map[string]string{}
		}
		maps.Copy(opts, c.spec.NodeOptions(n.id))
	}
	cfg := node.Config{Listen: n.addr, Node: n.id, Peers: peers, Dir: "/data", Mode: c.spec.Mode,
		Pages: c.spec.Pages, PageSize: c.spec.PageSize, Options: opts}
	return append([]string{"node", c.spec.System}, cfg.Args()...)
}

func portOf(addr string) string { _, p, _ := net.SplitHostPort(addr); return p }

// startApp starts the application container; the caller waits for it to
// be ready.
func (n *ctrNode) startApp(ctx context.Context) error {
	if err := n.c.eng.ContainerStart(ctx, n.app); err != nil {
		return explainStart(containerName(n.c.spec.RunID, n.id, "app"), n.ip, err)
	}
	n.mu.Lock()
	n.appUp = true
	n.gen++
	n.mu.Unlock()
	return nil
}

// awaitAll waits until every node is ready.
func (c *Containers) awaitAll(ctx context.Context) error {
	errc := make(chan error, len(c.nodes))
	for _, n := range c.nodes {
		go func() { errc <- n.awaitReady(ctx, "started in container "+shortID(n.app)+" (image "+c.appImage()+")") }()
	}
	var errs []error
	for range c.nodes {
		if err := <-errc; err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func shortID(id string) string { return id[:min(12, len(id))] }

// awaitReady polls the readiness check, bounded by ReadyTimeout; a
// container that exits meanwhile fails it at once, with its log.
func (n *ctrNode) awaitReady(ctx context.Context, detail string) error {
	n.mu.Lock()
	gen := n.gen
	n.mu.Unlock()
	deadline := time.Now().Add(n.c.spec.ReadyTimeout)
	for try := 0; ; try++ {
		if ctx.Err() != nil {
			return fmt.Errorf("node %d: %w", n.id, ctx.Err())
		}
		err := n.c.ready(n.addr)
		if err == nil {
			break
		}
		if info, ierr := n.c.inspect(n.app); ierr == nil && !info.Running && !info.Paused && info.Status != "restarting" {
			n.saveLog()
			return fmt.Errorf("node %d: container %s exited (code %d) before it was ready: see %s", n.id, containerName(n.c.spec.RunID, n.id, "app"), info.ExitCode, n.log)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d: not ready at %s after %v: %v", n.id, n.addr, n.c.spec.ReadyTimeout, err)
		}
		time.Sleep(min(25*time.Millisecond*time.Duration(try+1), 200*time.Millisecond))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.gen == gen && n.appUp {
		n.setReachableLocked(!n.paused, detail)
	}
	return nil
}

func (c *Containers) ready(addr string) error {
	path := c.spec.Ready
	if path == "" && c.spec.System == ContainerSystem {
		return tcpReady(addr)
	}
	if path == "" {
		path = "/health"
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

func (c *Containers) inspect(id string) (ContainerInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	return c.eng.ContainerInspect(ctx, id)
}

// saveLog writes the application container's output to the node's log.
func (n *ctrNode) saveLog() {
	if n.app == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if b, err := n.c.eng.ContainerLogs(ctx, n.app); err == nil {
		_ = os.WriteFile(n.log, demuxLogs(b), 0o644)
	}
}

func (n *ctrNode) setReachableLocked(up bool, detail string) {
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

// Size is the number of nodes.
func (c *Containers) Size() int { return len(c.nodes) }

// Nodes lists the nodes in order.
func (c *Containers) Nodes() []testbed.Node {
	out := make([]testbed.Node, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = testbed.Node{ID: n.id, Addr: n.addr}
	}
	return out
}

// Host is node i's address.
func (c *Containers) Host(i int) string {
	if i < 1 || i > len(c.nodes) {
		return ""
	}
	return c.nodes[i-1].ip.String()
}

// Boot is how long a downed host stays down.
func (c *Containers) Boot() time.Duration { return c.spec.Boot }

// Dir holds the nodes' bind-mounted working directories and logs.
func (c *Containers) Dir() string { return c.spec.Dir }

// Image is the image every node runs.
func (c *Containers) Image() Image { return c.image }

// Container is node i's application container id.
func (c *Containers) Container(i int) string { return c.nodes[i-1].app }

// Describe says, for the console, provenance.json and the report, which
// backend, images and containers run the nodes.
func (c *Containers) Describe() provenance.Testbed {
	tb := provenance.Testbed{Backend: Name, Detail: fmt.Sprintf("(API %s), network fb-%s %s, holder image %s (%s)",
		c.eng.Version(), c.spec.RunID, c.subnet, c.image.Ref, shortID(strings.TrimPrefix(c.image.ID, "sha256:")))}
	appID := c.image.ID
	if c.spec.System == ContainerSystem {
		appID = c.userImageID
	}
	for _, n := range c.nodes {
		tb.Nodes = append(tb.Nodes, provenance.TestbedNode{Node: n.id, Addr: n.addr, Container: containerName(c.spec.RunID, n.id, "app"),
			ContainerID: n.app, Image: c.appImage(), ImageID: appID, RestartPolicy: "no"})
	}
	return tb
}

// describeLine is the system.docker event's detail: which backend, image
// and containers run the nodes.
func (c *Containers) describeLine() string {
	parts := []string{fmt.Sprintf("backend docker (API %s), app image %s, holder image %s %s, network fb-%s %s", c.eng.Version(), c.appImage(),
		c.image.Ref, shortID(strings.TrimPrefix(c.image.ID, "sha256:")), c.spec.RunID, c.subnet)}
	for _, n := range c.nodes {
		parts = append(parts, fmt.Sprintf("node %d: container %s (%s) at %s", n.id, containerName(c.spec.RunID, n.id, "app"), shortID(n.app), n.addr))
	}
	return strings.Join(parts, "; ")
}

// appImage is the image the nodes' application containers run.
func (c *Containers) appImage() string {
	if c.spec.System == ContainerSystem {
		return c.spec.Image
	}
	return c.image.Ref
}

// WardenPid is the warden's pid, for tests.
func (c *Containers) WardenPid() int { return c.guard.Pid() }

// Stop saves every node's log, removes its containers (unpausing is not
// needed: removal kills a paused container), then the network, and ends
// the warden.
func (c *Containers) Stop() error {
	c.stopOnce.Do(func() {
		var wg sync.WaitGroup
		errs := make([]error, len(c.nodes)+2)
		for i, n := range c.nodes {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = n.remove() }()
		}
		wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		if c.netID != "" {
			if err := c.eng.NetworkRemove(ctx, c.netID); err != nil && !IsNotFound(err) {
				errs[len(c.nodes)] = fmt.Errorf("docker: remove network fb-%s: %w", c.spec.RunID, err)
			}
		}
		if c.guard != nil {
			errs[len(c.nodes)+1] = c.guard.release()
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

func (n *ctrNode) remove() error {
	n.mu.Lock()
	n.stopped = true
	n.mu.Unlock()
	n.saveLog()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	var errs []error
	for _, id := range []string{n.app, n.holder} {
		if id == "" {
			continue
		}
		if err := n.c.eng.ContainerRemove(ctx, id); err != nil && !IsNotFound(err) {
			errs = append(errs, fmt.Errorf("docker: remove container %s: %w", shortID(id), err))
		}
	}
	return errors.Join(errs...)
}

func (c *Containers) now() float64 { return c.spec.Clock.Now().Seconds() }

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }
