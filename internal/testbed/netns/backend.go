package netns

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/kernelfault"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/testbed"
)

// Name is the backend's name in cluster.backend.
const Name = "netns"

func init() { testbed.RegisterBackend(Name, Backend{}) }

// defaultPort is the port every node listens on at its own address when
// the scenario names none: each node has a namespace of its own, so the
// same port is free on every node.
const defaultPort = 8080

// Backend runs every node in a network namespace of its own, wired to a
// run-private bridge; see the package doc. It needs root.
type Backend struct{}

// ErrNotRoot is returned by Plan without root privileges.
var ErrNotRoot = errors.New("backend netns needs root (it creates network namespaces, veths and cgroups): run faultbench as root, or use backend: local")

// pending holds the network Plan created for a run, until Start takes it.
var (
	pendingMu sync.Mutex
	pending   = map[string]*prepared{}
)

type prepared struct {
	net   *network
	guard *guard
}

// Plan checks the privileges and tools, picks a free /24 and gives node i
// its host .(10+i) in it. Within a run (spec.RunID set) it also creates
// the network, because a system's rig listens on the gateway (Plan.Proxy)
// before the nodes start; everything it creates is journalled and guarded
// by the warden from the first object on.
func (Backend) Plan(spec testbed.Spec) (testbed.Plan, error) {
	if err := spec.Validate(); err != nil {
		return testbed.Plan{}, err
	}
	if err := usable(); err != nil {
		return testbed.Plan{}, err
	}
	if spec.Nodes > 254-firstHost {
		return testbed.Plan{}, fmt.Errorf("cluster: %d nodes do not fit in one /24 (at most %d)", spec.Nodes, 254-firstHost)
	}
	pendingMu.Lock()
	defer pendingMu.Unlock()
	if p, ok := pending[spec.RunID]; ok && spec.RunID != "" {
		return planOf(p.net), nil
	}
	third, err := pickSubnet(spec.RunID)
	if err != nil {
		return testbed.Plan{}, err
	}
	n := newNetwork(spec.RunID, third, spec.Nodes)
	if spec.RunID == "" {
		return planOf(n), nil
	}
	p, err := prepare(spec, n)
	if err != nil {
		return testbed.Plan{}, err
	}
	pending[spec.RunID] = p
	return planOf(n), nil
}

func planOf(n *network) testbed.Plan {
	hosts := make([]string, n.nodes)
	for i := range hosts {
		hosts[i] = n.host(i + 1)
	}
	return testbed.Plan{Hosts: hosts, Proxy: n.gateway() + ":0", KernelLinks: true}
}

// usable reports why this process cannot run the backend: not root, or a
// tool missing.
func usable() error { return usableAs(os.Geteuid()) }

func usableAs(euid int) error {
	if euid != 0 {
		return ErrNotRoot
	}
	for _, bin := range []string{"ip", "nft", "tc", "nsenter"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("backend netns needs %s, which is not on PATH: install iproute2, nftables and util-linux", bin)
		}
	}
	return nil
}

// prepare starts the warden, opens the journal and creates the network;
// on error it removes what it created.
func prepare(spec testbed.Spec, n *network) (*prepared, error) {
	g, err := startGuard(spec)
	if err != nil {
		return nil, err
	}
	p := &prepared{net: n, guard: g}
	if err := n.create(g); err != nil {
		g.release()
		return nil, fmt.Errorf("create network %s: %w", n.gateway(), err)
	}
	return p, nil
}

// Start starts the nodes in their namespaces: see the package doc.
func (Backend) Start(ctx context.Context, spec testbed.Spec, plan testbed.Plan, emit func(record.Event)) (testbed.Cluster, error) {
	if spec.RunID == "" {
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		spec.RunID = hex.EncodeToString(b)
		var err error
		if plan, err = (Backend{}).Plan(spec); err != nil {
			return nil, err
		}
	}
	pendingMu.Lock()
	p, ok := pending[spec.RunID]
	delete(pending, spec.RunID)
	pendingMu.Unlock()
	if !ok {
		var err error
		if _, err = (Backend{}).Plan(spec); err != nil {
			return nil, err
		}
		pendingMu.Lock()
		p = pending[spec.RunID]
		delete(pending, spec.RunID)
		pendingMu.Unlock()
	}
	if len(plan.Hosts) != spec.Nodes || plan.Host(1) != p.net.host(1) {
		p.guard.release()
		return nil, fmt.Errorf("cluster: the plan's hosts %v are not this run's network %s/24", plan.Hosts, p.net.gateway())
	}
	return start(ctx, spec, p, emit)
}

// Levers are the process levers (through the node's cgroup) and the
// kernel levers of kernelfault.
func (Backend) Levers() []string {
	return []string{fault.LeverApp, fault.LeverProcess, fault.LeverHost,
		kernelfault.LeverNetfilter, kernelfault.LeverQdisc, kernelfault.LeverCgroup, kernelfault.LeverQueue}
}
