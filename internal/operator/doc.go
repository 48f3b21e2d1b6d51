// Package operator is the simulated administrator (Broadwell 2004, §3.4; Brown and Patterson 2000,
// §2.2): it notices a fault some time after it was injected and repairs the
// failed node by a fixed policy, taking time to act.
//
// # Model
//
// For every fault injected on a node (maintenance events excepted):
//
//		inject ──detect_after──► detect ──response──► action begins ──action_time (+boot)──► action done
//
//	  - detect: at injection + DetectAfter, if the fault is still in effect
//	    (a transient fault that cleared before is never noticed, as in the
//	    paper's 30 s hang). DetectAfter 0 means the operator never notices.
//	  - response: an extra delay drawn from the Response law (fixed(D) or
//	    exponential(MEAN)) with the operator's own seeded *rand.Rand; none when
//	    no law is given.
//	  - the action's disruptive step happens when it begins, its restoring step
//	    when it is done:
//	    restart-failed: the node's application is killed / started again;
//	    restart-all: every node's application is killed / started again;
//	    reboot-node: the node's host goes down (hard) / boots, ActionTime+Boot later.
//	  - when the action is done every fault in effect on the repaired nodes is
//	    cleared (fault.Scheduler.Repaired emits fault.clear).
//
// A detection on a node already under repair (or during a restart-all) is
// recorded but starts no second action. Faults that target no single node
// (links, partitions) are noticed but only restart-all acts on them, and it
// does not clear them: a restart does not mend a cable.
//
// # Unplanned failures
//
// A node's application that exits or is killed outside the schedule (not by
// a fault injector, not by the operator, not by the run's stop) is a fault
// too, of type "unplanned" (Unplanned, fed by the cluster's ExitWatcher
// capability): a fault.inject with an ID after the schedule's, noticed
// after DetectAfter and repaired by the policy like an app-crash, and
// cleared (fault.clear) by that repair, or as soon as the node answers
// again because something else started it, or at the end of the run.
// Broadwell (2004) Fig. 9 shows why: a failure nobody injected is still a
// failure users saw, and a run must not leave it unexplained.
//
// Machine is the deterministic state machine: it advances only by
// Injected/Cleared notices and Advance(now), so tests run on simulated time.
// Operator is the thin real-time wrapper that performs the steps on the
// cluster and emits operator.detect and operator.action events.
package operator
