// Package testbed is the seam between a run and where its cluster runs. It
// holds three registries and the interfaces between them:
//
//   - Backend (RegisterBackend, LookupBackend): where nodes run. A backend
//     plans every node's host before anything starts (Plan), starts the
//     nodes (Start) and returns a running Cluster, which Stop ends. The
//     local backend (package testbed/local) runs every node as a process
//     group of this controller on its own loopback address.
//   - System (RegisterSystem, LookupSystem): what runs on the nodes. One
//     descriptor per system says its node kinds, the fault levers its rig
//     adds, whether it serves the synthetic page set, the workload drivers
//     it takes, its defaults, and how to check a scenario for it and
//     prepare a run (a Rig beside the cluster). Resolve applies its
//     defaults to a loaded scenario.
//   - Levers: a Cluster offers its levers (fault.AppLever, ProcessLever,
//     HostLever) by implementing them; a Rig's target wraps the cluster and
//     adds its own (a system's links, its control endpoints), reaching the
//     cluster through Unwrap. Injectors and the operator find them with
//     fault.As, never through embedding.
//
// Check validates a scenario against the registries before a run: the
// backend and system exist, the workload driver is one the system takes,
// the system's own Check passes with the
// backend's planned addresses, and every fault's levers (its registration's
// fault.Support) are offered by the backend or the system; an error names
// the fault, the lever, the backend and the system, with file:line.
//
// Every process a run starts carries the run's id in RunIDEnv.
//
// Package testbed/fake is a backend without processes for tests.
//
// ExitObserver is how a backend tells the operator of a node application
// that exited when nobody asked (see operator.Unplanned).
package testbed
