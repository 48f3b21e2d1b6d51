// Package reproduce reruns a paper's experiments and sets what faultbench
// measures beside what the paper published, claim by claim — the
// `faultbench reproduce PAPER|all` command (docs/papers.md, docs/cli.md).
//
// The registry is data: one file per paper in papers/ (embedded in the
// binary), each listing
//
//   - experiments: an ID, what it runs — example scenarios, a sweep file,
//     or `faultbench model` commands on shipped inputs — its repetitions
//     and the time scale its runs use by default;
//   - claims: for each published table cell, figure reading or stated
//     number, its location in the paper, the published value, the
//     tolerance fixed before measuring (with one line of why), how the
//     measured value is obtained (which experiment and run, which key of
//     summary.json, sweep.json or the model's JSON, or which events, and
//     how repetitions are aggregated), the verdict rule, and, for where
//     it differs, the reason in one sentence taken from the docs.
//
// A claim without a measurement says why (`missing`: not measured), and a
// claim about behaviour faultbench was built to match (an emulated OS
// policy, VIA's semantics) says what was built (`basis`: by construction),
// so that it never counts as agreement.
//
// Load checks every file whole and names file:line and key for each
// problem. Plan turns a selection of papers and experiments into jobs for
// sweep.RunBatch (the sweep command's machinery: i of n, ETA, resume,
// failed runs recorded and the rest going on); Evaluate reads what a
// results directory holds and judges every claim; Write puts the verdicts
// into reproduce.json and a self-contained reproduce.html.
package reproduce
