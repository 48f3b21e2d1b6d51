// Package workload emulates the users of a clustered service (seed 000 §3.3):
// open-loop client emulators that send requests on a schedule fixed in
// advance, spread them round-robin over the nodes, and classify every attempt
// into exactly one of the six outcomes of DESIGN §3.
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
// # Outcomes (Fig. 7 of seed 000)
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
// An arrival that finds MaxInFlight attempts of its client still outstanding
// is recorded as conn_error with zero latency and is not sent, so memory stays
// bounded however slow the service gets.
//
// # Safety
//
// New resolves every target before anything is sent and refuses addresses
// that are neither loopback nor one of the run's own hosts unless AllowRemote
// is set (DESIGN §7). Requests are sent to the resolved address, so a name
// cannot re-resolve elsewhere during the run.
package workload
