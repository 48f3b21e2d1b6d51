// Package testbed starts, watches and stops the cluster under test, and gives
// the fault injectors and the operator their levers on it: kill or start a
// node's application, stop and continue its processes, take its host down.
//
// The local backend (StartLocal) runs every node as a child process of this
// same binary (`faultbench node KIND`), or as the user's own command, each on
// its own loopback address 127.0.0.(10+i), so the cluster looks like separate
// hosts without privileges.
//
// # No orphans
//
// Three layers make sure no node process outlives the controller, even when
// the controller is killed with SIGKILL:
//
//   - every node runs in its own process group (Setpgid), so a signal reaches
//     everything the node started, including a user command's children;
//   - every node has Pdeathsig = SIGKILL. Pdeathsig fires when the *thread*
//     that forked the child exits, and Go threads come and go, so all nodes are
//     forked from one goroutine locked to its OS thread for the cluster's
//     lifetime (spawner); that thread ends only after Stop;
//   - a reaper process (`faultbench node reaper`, its own process group, no
//     Pdeathsig) is told every node's process group on a pipe; when the pipe
//     closes because the controller died, it SIGKILLs the groups still listed.
//     SIGKILL also ends a process that a fault left stopped (SIGSTOP).
//
// # Reachability
//
// A killed application leaves its host up, so clients see connection refused
// (conn_error). A host that is down (node-crash, node-reboot) is emulated by a
// listener that the controller holds on the node's address with an accept
// backlog of zero and never accepts from: the kernel drops further SYNs, so
// clients' connects time out (conn_abort), as with a host that is off.
// Every port the node's processes listened on is held so, not only the
// service port (press's intra-cluster port too; found with netlink
// sock_diag). A stopped (frozen or hung) node still completes TCP handshakes
// in the kernel, so clients connect and then time out (timeout).
//
// Limits of processes standing in for hosts: when a node's processes are
// killed (crash, reboot, or a repair of a frozen node) the kernel resets
// their open connections, so requests in flight end as conn_error at once
// where a real crashed host would leave them to time out; and app-hang and
// node-freeze stop the same processes, since a local node has no OS of its
// own. The netns and docker backends can do better.
//
// # Concurrency
//
// Every Cluster method is safe for concurrent use. The operations return once
// the change is in effect (a killed process has exited); a start returns once
// the process runs, and the node.up event follows when it answers its
// readiness check. Events are passed to the emit function from any goroutine,
// never concurrently for the same node; emit must not block or call back
// into the Cluster.
package testbed
