// Package kernelfault injects faults into any service through the kernel:
// nftables rules in a node's network namespace (link-down, partition,
// switch-down, loss), a token-bucket qdisc on its interface (bandwidth),
// and processes in its cgroup (cpu-hog burners, mem-pressure balloons).
// Node freeze and crash go through the process levers of the fault package
// (fault.ProcessLever, fault.HostLever), which the netns backend implements
// with the cgroup freezer and by killing the cgroup.
//
// The injectors find the levers defined here with fault.As; the netns
// backend's cluster implements them. Every lever call proves its effect
// before it returns: it emits a fault.effective event (and, on revert,
// fault.reverted) whose detail holds the evidence and the time from
// command to effect, and it fails when the effect cannot be confirmed, so
// that a fault never silently does nothing.
//
// The engine (Fault, Apply, Revert) is the mechanism itself: one typed
// fault on a Target (a network namespace by name or /proc/PID/ns/net, and
// cgroup directories), applied and proved: an nft rule, a tbf, a freeze,
// an NFQUEUE queue with its delayer (Queueing), or a helper process
// (Helper: the burner and balloon node kinds, helpers.go). The last two
// keep something running in the process that applied them until Revert;
// a process that did not apply a fault (cleanup of a dead run) reverts it
// by name. The warden calls the engine for the controller; a backend may
// call it directly. This package imports nothing of the warden.
//
// Packet delay and flaky links would take netem, which a kernel may lack
// (this project's CI kernel does): they go through an NFQUEUE rule and a
// userspace Delayer that holds or drops each packet's verdict
// (delay.go, the nfqueue lever), with a minimal nfnetlink_queue client
// (nfqueue.go).
package kernelfault
