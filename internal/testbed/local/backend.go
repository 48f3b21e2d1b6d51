package local

import (
	"context"
	"fmt"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/placement"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/testbed"
)

// Name is the backend's name in cluster.backend.
const Name = "local"

func init() { testbed.RegisterBackend(Name, Backend{}) }

// defaultFirstHost is the last octet of node 1's address: node i is
// 127.0.0.(10+i).
const defaultFirstHost = 11

// Backend runs every node as a process group of this controller on its
// own loopback address 127.0.0.(FirstHost+i-1). It needs no privileges.
type Backend struct{}

// Plan gives node i the host 127.0.0.(FirstHost+i-1) (FirstHost default
// 11) and faultnet proxies 127.0.0.1.
func (Backend) Plan(spec Spec) (testbed.Plan, error) {
	if err := validate(&spec); err != nil {
		return testbed.Plan{}, err
	}
	hosts := make([]string, spec.Nodes)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("127.0.0.%d", spec.FirstHost+i)
	}
	return testbed.Plan{Hosts: hosts, Proxy: "127.0.0.1:0"}, nil
}

// Start starts the nodes on plan's hosts: see the package doc.
func (Backend) Start(ctx context.Context, spec Spec, plan testbed.Plan, emit func(record.Event)) (testbed.Cluster, error) {
	c, err := start(ctx, spec, plan, emit)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// PinsCPUs implements testbed.CPUPinner: every node process is born with
// the CPU affinity of cluster.cpus (Spec.CPUs), as taskset would start it.
func (Backend) PinsCPUs() string { return placement.MechanismAffinity }

// Levers are the levers of a Processes cluster.
func (Backend) Levers() []string {
	return []string{fault.LeverApp, fault.LeverProcess, fault.LeverHost}
}

// validate fills spec's defaults and checks that its addresses fit in
// 127.0.0.0/24.
func validate(spec *Spec) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	if spec.FirstHost == 0 {
		spec.FirstHost = defaultFirstHost
	}
	if spec.FirstHost < 2 || spec.FirstHost+spec.Nodes-1 > 254 {
		return fmt.Errorf("cluster: addresses 127.0.0.%d.. do not fit in 127.0.0.0/24", spec.FirstHost)
	}
	if spec.CPUs != "" {
		if _, err := placement.ParseCPUList(spec.CPUs); err != nil {
			return fmt.Errorf("cluster.cpus: %w", err)
		}
	}
	return nil
}

// A Processes cluster is a testbed.Cluster with the three process levers.
var (
	_ testbed.Cluster    = (*Processes)(nil)
	_ fault.AppLever     = (*Processes)(nil)
	_ fault.ProcessLever = (*Processes)(nil)
	_ fault.HostLever    = (*Processes)(nil)
)
