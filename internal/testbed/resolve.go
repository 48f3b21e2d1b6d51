package testbed

import (
	"github.com/faultbench/faultbench/internal/placement"
	"github.com/faultbench/faultbench/internal/scenario"
)

// Resolve fills in what the scenario's system descriptor defaults, after
// scenario.Load and before the scenario is checked, printed or run: the
// system itself when the scenario names none (DefaultSystem); for a
// system serving the synthetic page set (PageSet), cluster.pages and
// page_size (scenario.DefaultPages, DefaultPageSize), the ready path
// /health and the trace zipf:PAGES:1.0; then the system's own Defaults;
// then cluster.cpus and workload.cpus in canonical form. It is idempotent. An unknown system is left as it is for Check to
// report; a scenario that still has no trace is an error with file:line.
func Resolve(sc *scenario.Scenario) error {
	if sc.Cluster.System == "" {
		sc.Cluster.System = DefaultSystem
		if sc.Cluster.Attach != nil {
			// Someone's own running containers: a black box, the system
			// the docker backend registers for users' images.
			sc.Cluster.System = AttachSystem
		}
	}
	sys, err := LookupSystem(sc.Cluster.System)
	if err != nil {
		return nil // Check names the systems this build runs
	}
	c := &sc.Cluster
	if sys.PageSet {
		if c.Pages == 0 {
			c.Pages = scenario.DefaultPages
		}
		if c.PageSize == 0 {
			c.PageSize = scenario.DefaultPageSize
		}
		if c.Ready == "" {
			c.Ready = "/health"
		}
	}
	if sys.Defaults != nil {
		sys.Defaults(c)
	}
	// The CPU lists as resolved (canonical: "0,1" is "0-1"), so that the
	// scenario.yaml a run keeps says exactly where it was pinned; a bad
	// list is Check's to report.
	for _, list := range []*string{&c.CPUs, &sc.Workload.CPUs} {
		if *list == "" {
			continue
		}
		if cpus, err := placement.ParseCPUList(*list); err == nil {
			*list = placement.FormatCPUList(cpus)
		}
	}
	sc.DefaultTrace()
	return sc.CheckTrace()
}
