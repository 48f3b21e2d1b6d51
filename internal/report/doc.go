// Package report turns one or more results directories into a
// self-contained HTML report (inline SVG and CSS, no script, no external
// asset) and writes every figure beside it as PNG and SVG for papers.
//
// Write (WriteText, WriteWith with Options) is the whole API. It reads each directory's summary.json,
// scenario.yaml, windows.csv and events.jsonl, and streams its request log
// once into one HDR latency histogram per period (phase, failure interval,
// whole run), so a report of millions of requests needs little memory.
// Anything missing is said in the report and computed from what is there:
// without summary.json the tables hold what the request log defines and
// "–" for the rest; without windows.csv the windows are rebuilt.
//
// Runs set side by side must be comparable: WriteWith refuses runs whose
// summaries were computed under different schema versions
// (ErrMixedSchemas, unless Options.AllowMixedSchemas) and warns, in the
// report and on Options.Warn, about every other definition they differ in
// (window, timeouts, demerit weights, baseline, record schema). Summaries
// of every earlier schema are read (analysis.Decode).
//
// The output is deterministic (stable order, no timestamps) so tests can
// compare it with golden files.
package report
