// Package warden keeps what a netns run creates in the kernel from
// outliving it.
//
// Every kernel object a run creates (network namespaces, the host-side
// veth, cgroups) is first written to the run's journal,
// /run/faultbench/RUN_ID.journal (Dir), one JSON record a line, before it
// is created: the controller asks the warden to record it over the run's
// Unix socket (Server: typed requests only, the peer checked with
// SO_PEERCRED, sequence numbers against replay, Decode fuzzed).
//
// The controller's kernel faults go through the warden too: an inject
// request carries a typed kernelfault.Fault (a target of namespaces and
// cgroup, and exactly one of rule, shape, freeze, queue, proc; never a
// command), which the warden checks belongs to its run, applies and
// proves with the kernelfault engine, and journals; a revert request
// names the fault's id. The warden so holds everything a fault applies,
// the NFQUEUE delayer and the burner and balloon processes included (it
// runs them itself). When the lease lapses it reverts every fault it
// applied and refuses all later requests, so a starved controller comes
// back to a run marked lost; while it works on an inject or a revert the
// lease counts as renewed.
//
// The warden is a process the controller starts in the host namespace
// (node kind "warden", `faultbench agent`) with oom_score_adj -1000, so
// that a node's memory pressure or crash never takes it down. It receives
// the controller's lease renewals on the socket (one a second; by hand,
// lines on stdin); when its stdin pipe closes (the controller exited or was killed with SIGKILL) or no
// renewal arrives within the lease (default 5 s; a starved or stopped
// controller), it reverts the faults; when the pipe closes it also
// replays the journal and removes everything in it.
// `faultbench cleanup` does the same for the journals of runs whose
// controller is gone.
package warden
