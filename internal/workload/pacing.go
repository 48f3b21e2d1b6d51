package workload

import "time"

// paceAt is when the client loop wakes to hand on an arrival scheduled at
// offset at from the run's start: at itself when tick is 0, else the
// first whole tick at or after it.
//
// Waking costs more than sending on a virtual machine: every precise wake
// from idle programs a timer and takes its interrupt. On this project's
// 2-core test machine a 1 ms tick cut faultbench run's CPU per request at
// 16,000 keep-alive requests a second from 46.7 µs to 32.0
// (docs/benchmarks.md, "Pacing, and the run's own stalls"). With a tick
// every client's arrivals of one tick share one wake, and the ticks of
// all clients fall on the same instants, since they count from the same
// start. The price is on the record, not hidden: an arrival is up to a
// tick late, which its send_lag_s shows and its latency_s includes
// (latency runs from the scheduled time).
func paceAt(at, tick time.Duration) time.Duration {
	if tick <= 0 {
		return at
	}
	if r := at % tick; r != 0 {
		return at - r + tick
	}
	return at
}
