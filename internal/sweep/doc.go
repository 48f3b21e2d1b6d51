// Package sweep runs a grid of configurations of one scenario, each
// repeated, and gathers the runs into one table and one analysis — the
// empirical method of Dumitras and Narasimhan (2005), who measured every
// combination of a replicated service's knobs to find which of them bound
// its latency.
//
// A sweep file names a base scenario, a grid (scenario key path → list of
// values, in the file's order; the first key varies slowest), optional
// exclude rules and a number of repetitions. Load checks everything before
// anything runs: every grid key must exist in the scenario schema, every
// value must make a valid scenario, and the grid must not be empty.
//
// Each configuration × repetition is an ordinary scenario, named
// <sweep>-cfg-NNNN-rR, seeded base seed + R − 1 (so configurations share
// their random numbers and repetitions differ), carrying its parameters in
// its `sweep:` key. Run executes them in order into DIR/cfg-NNNN-rR/;
// Plan writes them as standalone files for any batch engine; Collect turns
// run directories, wherever they were produced, into sweep.csv,
// sweep.parquet and sweep.json (the analysis of analysis.go).
package sweep
