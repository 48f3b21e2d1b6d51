// Package netns is the backend "netns": every node a host of its own, so
// that any service, a black box included, can be faulted through the
// kernel (docs/netns.md).
//
// Plan (as root only: ErrNotRoot otherwise) picks a /24 of 10.213.0.0/16
// that no address or route of the host overlaps and gives node i the host
// .(10+i); within a run it also creates the network, because a system's
// rig may listen on the gateway .1 (Plan.Proxy; press does not, since
// Plan.KernelLinks lets its nodes dial each other) before the nodes start:
// a bridge in a namespace of its own (fb-RUN-br), a veth from the host
// namespace (fbRUN8, holding the gateway) into it, and per node a
// namespace (fb-RUN-ni) whose eth0 is a veth into the bridge. Start puts
// each node's processes in a cgroup of their own (faultbench/RUN/node-i;
// v1 freezer, memory and pids, or v2) through a fixed shell line that
// joins the cgroup, then nsenter into the namespace, then execs the
// command, and waits until every node answers its readiness check from
// the controller, over the bridge.
//
// Namespaces (the running cluster) implements the process levers of the fault package through
// the cgroup (Pause/Resume: the freezer; HostDown: kill the cgroup and
// black-hole the address with an nftables table) and the kernel levers of
// kernelfault (Filter: nftables; Shape: htb and tbf; Burn and Balloon:
// helper processes, node kinds burner and balloon, in the node's cgroup).
// Every lever call proves its effect (and its revert) with a
// fault.effective (fault.reverted) event or fails.
//
// Every object is journalled through the run's warden (package warden)
// before it is created; Stop removes everything and the warden removes it
// if the controller dies or its lease lapses.
package netns
