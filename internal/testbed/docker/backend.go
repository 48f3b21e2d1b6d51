package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"sync"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/kernelfault"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/testbed"
)

// Name is the backend's name in cluster.backend.
const Name = "docker"

func init() { testbed.RegisterBackend(Name, &Backend{Connect: Connect}) }

// defaultPort is the port every node listens on in its container when the
// scenario names none.
const defaultPort = 8080

// firstHost is the last octet of node 1's address; node i gets .(10+i).
const firstHost = 10

// Backend runs every node in a container of its own on a run-private
// bridge network; see the package doc.
type Backend struct {
	// Connect opens the engine; tests give a fake.
	Connect func(ctx context.Context) (Engine, error)

	mu      sync.Mutex
	pending map[string]netip.Prefix // run id -> the subnet Plan chose
}

// Plan checks that an engine answers, picks a free /24 of 10.214.0.0/16
// (no docker network and no host route overlaps it) and gives node i the
// address .(10+i) in it. It creates nothing.
//
// With spec.Attach it finds the running containers instead (findAttached)
// and plans their addresses; it creates nothing either.
func (b *Backend) Plan(spec testbed.Spec) (testbed.Plan, error) {
	if err := spec.Validate(); err != nil {
		return testbed.Plan{}, err
	}
	if spec.Attach != nil {
		ctx := context.Background()
		eng, err := b.Connect(ctx)
		if err != nil {
			return testbed.Plan{}, err
		}
		att, err := findAttachedFor(ctx, eng, spec)
		if err != nil {
			return testbed.Plan{}, err
		}
		return attachedPlan(att), nil
	}
	if spec.Nodes > 254-firstHost {
		return testbed.Plan{}, fmt.Errorf("cluster: %d nodes do not fit in one /24 (at most %d)", spec.Nodes, 254-firstHost)
	}
	ctx := context.Background()
	eng, err := b.Connect(ctx)
	if err != nil {
		return testbed.Plan{}, err
	}
	if spec.System == ContainerSystem {
		if err := checkImage(ctx, eng, spec.Image); err != nil {
			return testbed.Plan{}, err
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.pending[spec.RunID]; ok && spec.RunID != "" {
		return planOf(p, spec.Nodes), nil
	}
	subnet, err := pickSubnet(ctx, eng, spec.RunID)
	if err != nil {
		return testbed.Plan{}, err
	}
	if spec.RunID != "" {
		if b.pending == nil {
			b.pending = map[string]netip.Prefix{}
		}
		b.pending[spec.RunID] = subnet
	}
	return planOf(subnet, spec.Nodes), nil
}

func planOf(subnet netip.Prefix, nodes int) testbed.Plan {
	hosts := make([]string, nodes)
	for i := range hosts {
		hosts[i] = hostAddr(subnet, i+1).String()
	}
	return testbed.Plan{Hosts: hosts, Proxy: net.JoinHostPort(subnet.Addr().Next().String(), "0"), KernelLinks: true}
}

// hostAddr is node i's address in subnet.
func hostAddr(subnet netip.Prefix, i int) netip.Addr {
	a := subnet.Addr().As4()
	a[3] = byte(firstHost + i)
	return netip.AddrFrom4(a)
}

// pickSubnet picks 10.214.X.0/24, X derived from the run id, moving on
// while a docker network or a host address overlaps it.
func pickSubnet(ctx context.Context, eng Engine, runID string) (netip.Prefix, error) {
	nets, err := eng.NetworkList(ctx, "")
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("docker: list networks: %w", err)
	}
	var taken []netip.Prefix
	for _, n := range nets {
		taken = append(taken, n.Subnets...)
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				taken = append(taken, p.Masked())
			}
		}
	}
	h := fnv.New32a()
	h.Write([]byte(runID))
	start := int(h.Sum32() % 250)
	for k := range 250 {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 214, byte(2 + (start+k)%250), 0}), 24)
		free := true
		for _, t := range taken {
			free = free && !t.Overlaps(p)
		}
		if free {
			return p, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("docker: no free /24 in 10.214.0.0/16 for the run's network: remove stale networks (faultbench cleanup)")
}

// Start creates the run's network and the nodes' containers and waits until
// every node answers its readiness check; see the package doc.
func (b *Backend) Start(ctx context.Context, spec testbed.Spec, plan testbed.Plan, emit func(record.Event)) (testbed.Cluster, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.Attach != nil {
		return b.attach(ctx, spec, plan, emit)
	}
	if spec.RunID == "" {
		buf := make([]byte, 6)
		_, _ = rand.Read(buf)
		spec.RunID = hex.EncodeToString(buf)
		var err error
		if plan, err = b.Plan(spec); err != nil {
			return nil, err
		}
	}
	b.mu.Lock()
	subnet, ok := b.pending[spec.RunID]
	delete(b.pending, spec.RunID)
	b.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("docker: run %s was never planned (call Plan first)", spec.RunID)
	}
	if len(plan.Hosts) != spec.Nodes || plan.Host(1) != hostAddr(subnet, 1).String() {
		return nil, fmt.Errorf("cluster: the plan's hosts %v are not this run's network %s", plan.Hosts, subnet)
	}
	eng, err := b.Connect(ctx)
	if err != nil {
		return nil, err
	}
	c, err := start(ctx, eng, spec, subnet, emit)
	if err != nil {
		return nil, err // never a typed nil in the interface
	}
	return c, nil
}

// Levers: the engine's (kill, pause, stop, restart) and the kernel's in
// each container's namespaces.
func (b *Backend) Levers() []string {
	return []string{fault.LeverApp, fault.LeverProcess, fault.LeverHost,
		kernelfault.LeverNetfilter, kernelfault.LeverQdisc, kernelfault.LeverCgroup, kernelfault.LeverQueue, LeverDisconnect}
}
