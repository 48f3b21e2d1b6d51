package runner

import (
	"os"
	"runtime/debug"
)

// loadGCPercent is the garbage collector's target while the load runs.
//
// When the load starts, the controller's heap is a few megabytes and
// young, and the run allocates at once its connections' read buffers, the
// lanes' queues and the first segment's batches. At Go's default target
// (GOGC=100) that set off two or three collections within the run's first
// 100 ms, and on a generator pinned to one core each held the processor
// for milliseconds: the first arrivals were sent up to 10–20 ms late, and
// in a run of a few seconds that start alone set the send lag's p99
// (docs/benchmarks.md, "Pacing, and the run's own stalls"). At 200 the
// heap may grow to three times what is live instead of twice, tens of
// megabytes at the rates this project reaches; the analysis after the
// load runs at the default again.
const loadGCPercent = 200

// loadGC raises the collector's target for the load and returns what
// restores it. A GOGC the user set is left alone.
func loadGC() (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	old := debug.SetGCPercent(loadGCPercent)
	return func() { debug.SetGCPercent(old) }
}
