package testbed

import (
	"github.com/faultbench/faultbench/internal/provenance"
	"github.com/faultbench/faultbench/internal/scenario"
)

// Optional capabilities of a Backend or a Cluster, found by type assertion.
// A backend that lacks one behaves as the local backend does.

// ScenarioChecker is an optional Backend capability: checks of the
// scenario that need the backend's world before anything runs (docker's
// attach looks its containers up in the engine). Errors name file:line
// and key (sc.Errorf); notes are what the user should know before the run
// (an attached container's restart policy), one line each, without a
// trailing newline. Check calls it before Plan; when it fails, Plan is not
// called.
type ScenarioChecker interface {
	CheckScenario(sc *scenario.Scenario) (notes []string, err error)
}

// Entry is an optional Cluster capability: the addresses (host:port) the
// users' clients send to when they are not the nodes themselves (the load
// balancer in front of an attached stack). The runner sends every request
// to these instead of to the nodes, and records them with node 0.
type Entry interface {
	Entry() []string
}

// Describer is an optional Cluster capability: what runs the nodes (the
// backend, its images and each node's container), for the console's
// start line, provenance.json and the report's run table.
type Describer interface {
	Describe() provenance.Testbed
}

// RestartObserver hears of node applications that something outside the
// run started again after they ended: a container engine restarting a
// crashed container by its restart policy. Such a restart is the
// recovery of the fault that ended the application, and the record must
// say who made it (the operator model did not).
//
// Restarted is called from the goroutine that watched the node, without
// the node's lock held; it must not block or call back into the Cluster.
type RestartObserver interface {
	// Restarted says node's application, which had ended, runs again,
	// started by who (e.g. "the engine (restart policy always)").
	Restarted(node int, who string)
}
