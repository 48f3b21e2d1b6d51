// Package analysis turns a results directory into summary.json: every metric
// of docs/metrics.md over the whole run, each phase and the failure interval; the
// baseline band and its deviations; and per-fault fault vs failure duration,
// behaviour class and stages A–G.
//
// # Use
//
// Analyze computes a Summary and Write stores it as summary.json; the runner
// calls both at the end of every run (Options.Complete false when it was
// interrupted), `faultbench analyze` calls them again on demand.
// AnalyzeDetail also returns what figures need: the window series and a
// Distribution (quantiles, CDF, box plot) of the latencies of every period.
// ParseThreshold checks a scenario threshold such as "p99 < 500ms"; the
// scenario validator calls it so a bad expression is reported before a run.
// Errors caused by the directory's content wrap ErrBadInput.
//
// A Summary carries its schema version, the record's provenance (read from
// provenance.json) and the Definitions its numbers depend on; Read and
// Decode accept summary.json of every earlier schema and derive what they
// can (run.phases from phase_order). Options.BaselineWindow takes the band
// from a stretch of the record; a record with no known fault-free period
// becomes its own baseline, which Definitions.Baseline ("self") and Notes
// say.
//
// # How
//
// Analysis streams the requests twice and holds, whatever their number, one
// histogram per period and a few numbers per window (docs/architecture.md: stream, do not accumulate):
//
//   - pass 1 aggregates each window (outcome counts, Welford moments) and
//     each phase and the whole run (counts, moments, min/max, exceedance
//     counts, a nanosecond HDR histogram);
//   - between the passes, the baseline band, deviations, the faults'
//     failure intervals, classes and stage boundaries are derived from the
//     window series and events.jsonl;
//   - pass 2 counts, exactly, the attempts beyond each period's mean + 3σ
//     (known only after pass 1), aggregates the failure interval (known only
//     after the band), and counts ok attempts per fault stage.
//
// Counts, means, standard deviations, maxima and fractions are exact; order
// statistics are within 0.05% of exact. docs/metrics.md defines every figure
// and the choices made where the contracts (docs/results.md, docs/metrics.md) are silent.
package analysis
