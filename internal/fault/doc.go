// Package fault is faultbench's fault catalogue, fault schedules and
// injectors (DESIGN §4).
//
// The flow is three steps, each usable alone:
//
//  1. Validate (or ValidateFault) checks a scenario's faults before anything
//     runs: known type, a backend and system that can inject it, a sensible
//     target, mode, duration and recurrence law.
//  2. Expand turns the scenario's fault entries into concrete Occurrences:
//     every `every:` recurrence unrolled over the run, every `node: any` drawn.
//     All randomness comes from the *rand.Rand it is given, so the same seed
//     gives the same schedule.
//  3. A Scheduler injects and clears the occurrences at their times on a
//     Target (the running cluster), emitting fault.inject and fault.clear
//     events, and reverts whatever is still in effect on RevertAll.
//
// # Semantics of an occurrence
//
// A fault is in effect from At for Duration, then cleared (its Revert runs).
// Duration 0 means "until repaired": the fault stays until an operator repair
// (Scheduler.Repaired) or the end of the run (RevertAll). That is the case for
// mode: sticky and for a fault given without duration, except node-crash and
// node-reboot, whose node comes back by itself after the cluster's boot time
// unless they are sticky. Maintenance events (restart-node, restart-all) are
// instantaneous: they have an inject event and no clear.
//
// A recurring fault (every: LAW) is a renewal process: the next occurrence
// starts a LAW-distributed gap after the previous one is cleared (after its
// injection for a fault that lasts until repaired). An occurrence whose type
// is still in effect on the same node when it comes due is skipped (event
// fault.skip), never stacked.
//
// # Injectors
//
// An Injector does one fault type (toxiproxy's Toxic is the model). It finds
// the levers it needs on the Target by type assertion (AppLever, HostLever,
// ProcessLever) and returns ErrUnsupported when the target lacks them. Other
// packages (faultnet, reference systems) add fault types with Register.
package fault
