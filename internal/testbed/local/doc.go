// Package local is the testbed backend that runs every node as a child
// process of this same binary (`faultbench node KIND`), or as the user's
// own command, each on its own loopback address 127.0.0.(10+i), so the
// cluster looks like separate hosts without privileges. It registers
// itself as cluster.backend "local".
//
// # No orphans
//
// Every process a node starts, daemons included, ends with the node (when a
// fault or the operator kills it, or it dies by itself) and with the run,
// even when the controller is killed with SIGKILL. Five layers see to it:
//
//   - every node runs in its own process group (Setpgid), so a signal reaches
//     everything the node started, including a user command's children;
//   - every node has Pdeathsig = SIGKILL. Pdeathsig fires when the *thread*
//     that forked the child exits, and Go threads come and go, so all nodes are
//     forked from one goroutine locked to its OS thread for the cluster's
//     lifetime (spawner); that thread ends only after Stop;
//   - every node process carries the environment entry
//     FAULTBENCH_NODE_TAG=<cluster>/<node>/ (TagEnv), which its children
//     inherit: a daemon that left the process group and session with setsid
//     is still found in /proc and killed when its node ends;
//   - as root, every start of a node runs in a fresh cgroup of its own under
//     faultbench-<cluster>/node-<i>/, beneath this process's own cgroup.
//     With a cgroup2 mount (/sys/fs/cgroup on a unified host,
//     /sys/fs/cgroup/unified on a hybrid one) the child is cloned straight
//     into it (clone3 CLONE_INTO_CGROUP) and ending the node writes
//     cgroup.kill; on a cgroup v1 host the pids hierarchy is used: the
//     spawner's thread enters the cgroup, forks and leaves (v1 moves single
//     threads), and ending the node SIGKILLs what cgroup.procs lists until
//     it is empty. Either way the child is inside before it runs, and the
//     kill reaches every process whatever it did to its group, session or
//     environment; Stop removes the cgroups;
//   - a reaper process (`faultbench node reaper`, its own process group, no
//     Pdeathsig) is told every node's process group, the cluster's tag and
//     its cgroup on a pipe; when the pipe closes because the controller
//     died, it SIGKILLs the groups, the tagged processes and the cgroup.
//     SIGKILL also ends a process that a fault left stopped (SIGSTOP).
//
// The controller is not a child subreaper (PR_SET_CHILD_SUBREAPER): the tag
// and the cgroup find a node's processes wherever they were reparented, and
// they keep working in the reaper after the controller died, when a
// subreaper's claim on its orphans would be gone with it.
//
// Every process carries the run's id in its environment (FAULTBENCH_RUN_ID).
//
// # Unplanned exits
//
// A node's application that exits or is killed when nobody asked (not a
// fault, not the operator, not Stop) emits node.down with the exit status
// and is told to the ExitObserver set with WatchExits; the operator turns
// it into an "unplanned" fault that it repairs by its policy. What the
// application left behind in its group, tag and cgroup is killed at once,
// as a crashed host would lose it.
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
// own.
//
// # Limits
//
// Without root or without a cgroup mount, a node's daemon that both leaves
// its session (setsid) and clears its environment (env -i) escapes the tag:
// only the cgroup reaches it. Pause and Resume (app-hang, node-freeze) signal
// the process group and reach the daemons that left it: with a cgroup v2
// cgroup they freeze and thaw the node's cgroup (cgroup.freeze); with cgroup
// v1 (whose cgroups here are the pids hierarchy's, not the freezer's) or
// none, they send SIGSTOP and SIGCONT to every process with the node's tag,
// so only a daemon that also cleared its environment keeps running there. A ready check that never passes ends the start with one line
// naming the node, the request and address, the time waited and what the
// last try got (refused, no answer within 1s, a status).
//
// # Concurrency
//
// Every Processes method is safe for concurrent use. The operations return once
// the change is in effect (a killed process has exited); a start returns once
// the process runs, and the node.up event follows when it answers its
// readiness check. Events are passed to the emit function from any goroutine,
// never concurrently for the same node; emit must not block or call back
// into the cluster.
package local
