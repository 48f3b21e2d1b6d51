// Package control is both ends of a node's control endpoint: the per-run
// secret that guards it (NewToken, Authorized) and the HTTP client the
// controller calls it with (Client).
//
// A reference system's node (a press server, an ssm brick, a raid node)
// serves an HTTP control endpoint through which faultbench injects the
// faults that live inside the node: comm faults, memory bit flips, disk
// faults, maintenance events. The controller draws one token per run with
// NewToken and hands it to every node through the environment, where other
// users of the machine cannot read it; every request carries it as
// "Authorization: Bearer TOKEN", which the node checks with Authorized in
// constant time. The token never enters the event log or the results.
//
// What each endpoint accepts (paths, request and answer bodies) belongs to
// its system; this package only moves JSON and reports, as *StatusError,
// an answer that is not 2xx, and, wrapping ErrNoAnswer, a request that got
// no answer at all (the node is down, restarting or stopped).
package control
