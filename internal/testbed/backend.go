package testbed

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/record"
)

// Node is one node as clients see it.
type Node struct {
	ID   int    // 1-based
	Addr string // host:port of its service
}

// Plan is where a backend will put a cluster's nodes, decided before any
// starts: a system whose nodes must know each other's addresses (press's
// intra-cluster mesh, ssm's bricks) builds them from it.
type Plan struct {
	// Hosts[i-1] is node i's host (an IP address, without port).
	Hosts []string
	// Proxy is the address on which the controller listens for a
	// userspace link proxy between nodes (faultnet), with port 0.
	Proxy string
	// KernelLinks says the nodes are hosts of their own whose links the
	// kernel can fault (the netns backend's netfilter and qdisc levers):
	// a system's rig then lets its nodes dial each other directly, with
	// no proxy in their path, and its network faults go through the
	// kernel.
	KernelLinks bool
}

// Host is node i's host; "" for a node the plan does not hold.
func (p Plan) Host(i int) string {
	if i < 1 || i > len(p.Hosts) {
		return ""
	}
	return p.Hosts[i-1]
}

// Cluster is a running cluster as the runner, the rigs, the faults and the
// operator see it. Its levers (fault.AppLever, fault.ProcessLever,
// fault.HostLever, ...) are not part of the interface: they are found with
// fault.As, so a wrapper that adds levers never hides the ones it wraps.
// Every method is safe for concurrent use.
type Cluster interface {
	fault.Target
	// Nodes lists the nodes in order; the caller owns the slice.
	Nodes() []Node
	// Host is node i's host, as in the backend's Plan.
	Host(node int) string
	// Boot is how long a downed host stays down before its services restart.
	Boot() time.Duration
	// Dir holds the nodes' working directories and logs.
	Dir() string
	// Stop ends every node and releases what the backend holds. It emits
	// no events; it is safe to call twice and concurrently with lever
	// calls, which return ErrStopped afterwards.
	Stop() error
}

// Backend starts clusters somewhere: processes on loopback addresses
// (local), network namespaces, containers. A backend registers itself
// once with RegisterBackend; the runner and validate ask the registry.
type Backend interface {
	// Plan validates spec (Spec.Validate plus the backend's own limits)
	// and decides every node's host. It starts nothing.
	Plan(spec Spec) (Plan, error)
	// Start starts spec's nodes on plan's hosts and returns once every node
	// answers its readiness check; on error nothing is left running. emit
	// receives node.up and node.down events for the cluster's lifetime (it
	// may be nil, must not block nor call back into the Cluster). ctx
	// bounds only the start; the cluster lives until its Stop.
	Start(ctx context.Context, spec Spec, plan Plan, emit func(record.Event)) (Cluster, error)
	// Levers names the fault levers (fault.Lever*) its clusters offer.
	Levers() []string
}

// CPUPinner is a Backend that can pin every node process to the CPUs of
// Spec.CPUs (cluster.cpus). PinsCPUs names the mechanism, for the run's
// record (placement.Mechanism*). A backend that is not one refuses
// cluster.cpus at validation (Check).
type CPUPinner interface {
	PinsCPUs() string
}

// DefaultBackend is the backend of a scenario that names none.
const DefaultBackend = "local"

var (
	backendsMu sync.Mutex
	backends   = map[string]Backend{}
)

// RegisterBackend makes b the backend of cluster.backend name. It panics on
// a duplicate, like http.Handle.
func RegisterBackend(name string, b Backend) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if _, dup := backends[name]; dup {
		panic("testbed: backend registered twice: " + name)
	}
	backends[name] = b
}

// LookupBackend returns the backend registered as name ("" is
// DefaultBackend), or an error naming the backends this build has.
func LookupBackend(name string) (Backend, error) {
	if name == "" {
		name = DefaultBackend
	}
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if b, ok := backends[name]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("backend %s is not available in this build (available: %s)", name, strings.Join(slices.Sorted(maps.Keys(backends)), ", "))
}
