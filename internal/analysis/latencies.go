package analysis

import "github.com/faultbench/faultbench/internal/record"

// EachLatency calls fn with the latency in seconds of every attempt (every
// outcome) recorded in the results directory dir, in record order, reading
// requests.parquet (or requests.csv) as Analyze does. A sweep's analysis
// uses it to pool the attempts of a configuration's repetitions.
func EachLatency(dir string, fn func(latencyS float64) error) error {
	return readRequests(dir, func(r *record.Request) error { return fn(r.LatencyS) })
}
