// Package fault is faultbench's fault catalogue, fault schedules and
// injectors (docs/scenario.md).
//
// The flow is three steps, each usable alone:
//
//  1. Validate (or ValidateFault) checks a scenario's faults before anything
//     runs: known type, a backend and system that can serve it, its
//     parameters (DecodeParams), a sensible target, mode, duration and
//     recurrence law.
//  2. Expand turns the scenario's fault entries into concrete Occurrences:
//     every `every:` recurrence unrolled over the run, every `node: any` drawn.
//     All randomness comes from the *rand.Rand it is given, so the same seed
//     gives the same schedule.
//  3. A Scheduler (NewScheduler decodes each occurrence's parameters for
//     its injector) injects and clears the occurrences at their times on a
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
// the levers it needs on the Target with As, which walks the Unwrap chain
// of wrapping targets as errors.As walks wrapped errors (AppLever,
// HostLever, ProcessLever on the backend's cluster; a system's own levers
// on the wrapper its rig puts around it), and returns ErrUnsupported when
// none has them. Other packages (reference systems) add fault types with
// Register, whose Support names the levers (Lever*) the injector needs.
// Before a run, Offer.Check holds those against the levers the backend and
// the system offer, so a fault nobody can serve is an input error naming
// the fault, the lever, the backend and the system, never a failed
// injection mid-run.
//
// # Parameters
//
// A fault type's parameters are a struct with a Validate method (Params),
// decoded from the scenario's params: map by DecodeParams: fields carry a
// `param:"name"` tag, keys the struct lacks are errors that list the keys it
// has, values are parsed by the field's type. An injector declares its
// parameters by implementing ParamsInjector, most simply through WithParams,
// which also hands its function the decoded struct typed; an injector
// without it takes none. Parameters belong to the injector, not the type:
// press's slow (a comm fault with probability and count) and ssm's slow (a
// brick delay) take different ones. Decoding happens at validation, with
// file:line, and again in NewScheduler, which cannot fail after validation;
// no injector parses a map.
package fault
