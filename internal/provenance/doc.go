// Package provenance says what made a results directory: the results schema
// version, the faultbench version and commit, the run id, the wall-clock
// instant (UTC) at which the run clock read 0, the host, its cores and load
// average at the start, and the command line.
//
// # Use
//
// The runner calls Collect once, at the instant the run clock starts, and
// hands the Info to both places that keep it: Write stores it as
// provenance.json (written before the first request, so a run killed at any
// later moment still says what made it), and Meta gives the same fields as
// key/value pairs for the Parquet file's metadata. Analysis reads
// provenance.json back (Read) into summary.json's "provenance" key.
//
// SchemaVersion numbers the results contract: the files, their columns and
// the metric definitions. Every change that makes old and new results mean
// different things bumps it and adds a line to "Schema versions" in
// docs/metrics.md. Results without provenance.json are schema 1.
package provenance
