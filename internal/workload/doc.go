// Package workload emulates the users of a clustered service (Broadwell 2004, §3.3):
// open-loop client emulators that send requests on a schedule fixed in
// advance, spread them round-robin over the nodes, and classify every attempt
// into exactly one of the six outcomes of docs/results.md.
//
// # Open loop
//
// Each client emulator draws its arrival times (Poisson by default, or
// constant, or the timing of an access log) and its request targets from its
// own *rand.Rand, derived from the scenario seed, so the same seed gives the
// same arrivals and the same paths. An attempt is charged from its *scheduled*
// time: if the generator sends it late, the delay counts as latency, and a
// slow server never slows the offered load (no coordinated omission).
//
// # Pacing
//
// A client's scheduling goroutine waits for each arrival's instant on a
// Linux timerfd (sleep_linux.go): Go's own timers wake an idle process up
// to a millisecond late, which would show as send lag at low rates. Two
// cases do without it. With PacingTick, arrivals are handed on at whole
// ticks, so one wake serves every arrival of a tick. And when the
// arrival's lane (keep-alive with MaxConns, attemptWorkers) already holds
// arrivals waiting for a connection, and its instant is less than
// coarseWaitMax away, a Go timer is enough: the arrival cannot be sent
// before an answer frees a connection, and the runtime checks its timers
// when that answer wakes the process. So an overloaded run falls behind at
// the cost of a hand-on, not of a hardware timer per arrival, and its
// record shows the wait in the lane as send lag.
//
// # Outcomes (Fig. 7 of Broadwell 2004)
//
// The user's patience runs from the moment the request is scheduled:
//
//   - not connected by scheduled+ConnectTimeout: conn_abort, latency exactly
//     ConnectTimeout;
//   - connection refused or reset, or closed before any response byte:
//     conn_error;
//   - connected, but the response (status, headers and whole body) not in by
//     connected+ResponseTimeout: timeout, latency = connect time +
//     ResponseTimeout;
//   - a status other than 2xx: http_error;
//   - a 2xx whose body is truncated, whose framing is broken, or which the
//     verifier rejects: data_error;
//   - otherwise ok.
//
// # The generator accounts for itself
//
// An arrival that finds MaxInFlight attempts of its client still
// outstanding is not sent, so memory stays bounded however slow the service
// gets; nor is one that finds every user of a session client busy, or no
// connection of a MaxConns-capped client free before connect_timeout. Such
// an attempt is recorded with record.Request.Refused saying why: it
// measures the generator, not the service, and analysis keeps it out of
// the six outcomes. Every attempt also records its send lag, from its
// scheduled time to the moment it was handed to its connection, so a
// generator falling behind its schedule shows in the record.
//
// # No attempt left out
//
// Every arrival scheduled before the run ends is recorded exactly once.
// When the run is cut (its context ends, or Stop), no new attempt starts,
// arrivals already due that were not yet sent are recorded as cut short,
// and the attempts in flight are awaited: their own deadlines bound the
// wait. Abandon (or the drain bound) ends the wait; every attempt still
// unfinished is then recorded as cut short, with the time it had waited
// so far: not a timeout, whose meaning stays "no answer within
// response_timeout".
//
// # Load spikes
//
// The fault type load-spike acts on the generator (spike.go): the runner
// wraps the fault target with Generator.Target, so the scheduler's
// injector finds the generator as a Spiker with fault.As, on every
// backend. A spike adds extra open-loop clients (or closed-loop users)
// from its inject to its revert, recorded like every other attempt, and
// reports the offered rate it measured in its fault.effective and
// fault.reverted events.
//
// # Safety
//
// New resolves every target before anything is sent and refuses addresses
// that are neither loopback nor one of the run's own hosts unless AllowRemote
// is set (docs/architecture.md). Requests are sent to the resolved address, so a name
// cannot re-resolve elsewhere during the run.
package workload
