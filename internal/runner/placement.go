package runner

import (
	"fmt"

	"github.com/faultbench/faultbench/internal/placement"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/testbed"
)

// CheckPlacement validates workload.cpus, the controller's CPUs (those of
// cluster.cpus are testbed.Check's: the backend pins the nodes): a CPU
// list of CPUs this machine has, with file:line.
func CheckPlacement(sc *scenario.Scenario) error {
	if sc.Workload.CPUs == "" {
		return nil
	}
	if _, err := placement.ParseCPUList(sc.Workload.CPUs); err != nil {
		return sc.Errorf([]any{"workload", "cpus"}, "%v: give CPUs of this machine as a list like \"0\" or \"0-1\"", err)
	}
	return nil
}

// place records where the run's processes run and pins the controller
// (workload.cpus) — every thread of this process: the client emulators,
// the recorder, and on the local backend the faultnet link proxies and
// Pinpoint, which run here too. The nodes are pinned by the backend as it
// starts them (cluster.cpus). host is this process's CPUs before any
// pinning. The pin lasts until teardown (unplace).
func (r *run) place(backend testbed.Backend, host []int) error {
	sc := r.sc
	r.placement = placement.Record{HostCPUs: placement.FormatCPUList(host), Mechanism: placement.MechanismNone}
	if sc.Cluster.CPUs != "" {
		cpus, err := placement.ParseCPUList(sc.Cluster.CPUs)
		if err != nil {
			return fmt.Errorf("cluster.cpus: %w", err)
		}
		r.placement.NodeCPUs = placement.FormatCPUList(cpus)
		if p, ok := backend.(testbed.CPUPinner); ok {
			r.placement.Mechanism = p.PinsCPUs()
		}
	}
	if sc.Workload.CPUs != "" {
		cpus, err := placement.ParseCPUList(sc.Workload.CPUs)
		if err != nil {
			return fmt.Errorf("workload.cpus: %w", err)
		}
		restore, err := placement.PinProcess(cpus)
		if err != nil {
			return fmt.Errorf("workload.cpus: %w", err)
		}
		r.unpin = restore
		r.placement.ControllerCPUs = placement.FormatCPUList(cpus)
		r.placement.Mechanism = placement.MechanismAffinity
	}
	return nil
}

// unplace puts the controller back on the CPUs it had before the run (a
// sweep runs its configurations one after another in this process).
func (r *run) unplace() {
	if r.unpin != nil {
		_ = r.unpin()
		r.unpin = nil
	}
}
