package press

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/faultbench/faultbench/internal/control"
	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/faultnet"
	"github.com/faultbench/faultbench/internal/kernelfault"
	nodeprog "github.com/faultbench/faultbench/internal/node"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/testbed"
)

// Ports of a press cluster run by `faultbench run`. Every node has its own
// loopback address, so all nodes use the same ports. They are fixed rather
// than drawn because every node must know every other node's intra-cluster
// address before any of them starts.
const (
	DefaultPort   = 8080 // client HTTP, when cluster.port is 0
	IntraOffset   = 1000 // intra-cluster listener: port + 1000
	ControlOffset = 2000 // comm-fault control endpoint: port + 2000
)

// TokenEnv is the environment variable through which the testbed hands
// every node the run's control token: the environment of a process is
// readable only by its user, its argv by everyone (ps).
const TokenEnv = "FAULTBENCH_PRESS_TOKEN"

// optionsSetPerNode are the node options the rig sets itself; a scenario
// giving them would be overridden, so it is told instead.
var optionsSetPerNode = []string{"intra", "control", "token"}

func init() {
	testbed.RegisterSystem(testbed.System{
		Name: Kind, NodeKinds: []string{Kind}, PageSet: true,
		Levers: []string{fault.LeverNetwork, fault.LeverControl},
		Check:  system{}.Check, Prepare: system{}.Prepare,
	})
}

// system adapts the testbed to press: fixed ports, a faultnet proxy on
// every intra-cluster link, and a control endpoint per node guarded by a
// per-run token.
type system struct{}

// Check validates a press cluster: at least 2 nodes, a mode, ports that
// leave room for the intra and control offsets, and options the node
// accepts (checked by building node 1's config, so a bad value is caught
// before anything starts).
func (system) Check(sc *scenario.Scenario, plan testbed.Plan) error {
	c := sc.Cluster
	var errs []error
	if c.Nodes < 2 {
		errs = append(errs, sc.Errorf([]any{"cluster", "nodes"}, "press needs at least 2 nodes, got %d: a single node has no peer to cache for", c.Nodes))
	}
	if _, err := ParseMode(c.Mode); err != nil {
		errs = append(errs, sc.Errorf([]any{"cluster", "mode"}, "press mode %q: want %s", c.Mode, modeNames))
	}
	port := c.Port
	if port == 0 {
		port = DefaultPort
	}
	if port+ControlOffset > 65535 {
		errs = append(errs, sc.Errorf([]any{"cluster", "port"}, "press uses port+%d for its intra-cluster links and port+%d for control: port must be at most %d", IntraOffset, ControlOffset, 65535-ControlOffset))
	}
	for _, k := range slices.Sorted(maps.Keys(c.Options)) {
		if slices.Contains(optionsSetPerNode, k) || strings.HasPrefix(k, "peer.") {
			errs = append(errs, sc.Errorf([]any{"cluster", "options", k}, "option %s is set by faultbench for each node (addresses follow cluster.port; the token is drawn per run)", k))
		}
	}
	if plan.KernelLinks {
		for i, f := range sc.Faults {
			if kernelfault.NeedsNetem(f.Type) {
				errs = append(errs, sc.Errorf([]any{"faults", i, "type"}, "fault %s needs the kernel's netem qdisc on backend %s (press's links are kernel links there, with no proxy to delay them), and this kernel has none: use backend local", f.Type, c.Backend))
			}
		}
	}
	if len(errs) > 0 || c.Nodes > MaxNodes {
		return errors.Join(errs...)
	}
	// Try node 1's configuration, with the planned addresses.
	peers := make([]string, c.Nodes)
	for i := range peers {
		peers[i] = net.JoinHostPort(plan.Host(i+1), strconv.Itoa(port))
	}
	opts := maps.Clone(c.Options)
	if opts == nil {
		opts = map[string]string{}
	}
	opts["events"] = "none"
	nc := nodeprog.Config{Listen: peers[0], Node: 1, Peers: peers, Mode: c.Mode, Pages: c.Pages, PageSize: c.PageSize, Options: opts}
	if _, err := ConfigFromNode(nc, io.Discard, io.Discard); err != nil {
		errs = append(errs, sc.Errorf([]any{"cluster", "options"}, "%v", err))
	}
	return errors.Join(errs...)
}

// Prepare fixes the ports, draws the run's control token, starts the
// faultnet proxies (seeded from the scenario seed) and gives node i its
// addresses: intra, control, and peer.J = the proxy of link i→J. On a
// backend with kernel links (plan.KernelLinks: netns) there is no proxy:
// peer.J is node J's own intra-cluster address.
func (system) Prepare(spec *testbed.Spec, plan testbed.Plan, seed int64) (testbed.Rig, error) {
	if spec.Port == 0 {
		spec.Port = DefaultPort
	}
	token, err := control.NewToken()
	if err != nil {
		return nil, err
	}
	addr := func(node, offset int) string {
		return net.JoinHostPort(plan.Host(node), strconv.Itoa(spec.Port+offset))
	}
	intra := map[int]string{}
	for i := 1; i <= spec.Nodes; i++ {
		intra[i] = addr(i, IntraOffset)
	}
	// On a backend with kernel links the nodes dial each other directly
	// and the kernel serves the network faults (kernelfault): never route
	// a fault through a proxy the system would not otherwise use.
	var fn *faultnet.Net
	if !plan.KernelLinks {
		if fn, err = faultnet.NewNet(intra, faultnet.NetOptions{Seed: seed, ListenAddr: func(int, int) string { return plan.Proxy }}); err != nil {
			return nil, err
		}
	}
	_, userSeed := spec.Options["seed"]
	spec.NodeOptions = func(i int) map[string]string {
		opts := map[string]string{"intra": intra[i], "control": addr(i, ControlOffset)}
		if fn != nil {
			for j, a := range fn.PeersOf(i) {
				opts["peer."+strconv.Itoa(j)] = a
			}
		} else {
			for j, a := range intra {
				if j != i {
					opts["peer."+strconv.Itoa(j)] = a
				}
			}
		}
		if !userSeed {
			// Each node draws its comm-fault randomness from its own stream.
			opts["seed"] = strconv.FormatInt(seed*1_000_003+int64(i), 10)
		}
		return opts
	}
	spec.Env = append(slices.Clip(spec.Env), TokenEnv+"="+token)
	return &rig{net: fn, spec: *spec, plan: plan, token: token}, nil
}

type rig struct {
	net   *faultnet.Net
	spec  testbed.Spec
	plan  testbed.Plan
	token string
}

func (r *rig) Target(c testbed.Cluster) fault.Target { return &pressTarget{cluster: c, rig: r} }

// Close closes every proxy, reverting any network fault still set; safe
// twice. Kernel links have no proxy: the backend removes their rules.
func (r *rig) Close() error {
	if r.net == nil {
		return nil
	}
	return r.net.Close()
}

// pressTarget is a running press cluster as faults see it: the faultnet links
// (NetLever) and the nodes' control endpoints (ControlLever), wrapping the
// backend's cluster, whose levers fault.As finds through Unwrap.
type pressTarget struct {
	cluster testbed.Cluster
	rig     *rig
}

// Size is the cluster's.
func (c *pressTarget) Size() int { return c.cluster.Size() }

// Unwrap implements fault.Wrapper.
func (c *pressTarget) Unwrap() fault.Target { return c.cluster }

// FaultNet implements NetLever; nil on kernel links (the backend's
// netfilter and qdisc levers serve the network faults there).
func (c *pressTarget) FaultNet() *faultnet.Net { return c.rig.net }

// PressControl implements ControlLever.
func (c *pressTarget) PressControl(node int) (addr, token string, err error) {
	if node < 1 || node > c.Size() {
		return "", "", fmt.Errorf("no node %d (cluster has %d)", node, c.Size())
	}
	return net.JoinHostPort(c.rig.plan.Host(node), strconv.Itoa(c.rig.spec.Port+ControlOffset)), c.rig.token, nil
}
