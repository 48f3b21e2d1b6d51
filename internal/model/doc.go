// Package model turns what fault-injection runs measure into what a year of
// faults costs, and solves the Markov models the papers use for the same
// question. It is independent of the testbed: its inputs are YAML files and
// summary.json, its outputs plain structs with JSON keys that are a contract
// (docs/cli.md, docs/models.md).
//
// Phase 2 (Nagaraja et al. 2002, §2.2). A FaultLoad gives the normal throughput and, for
// each fault, a rate (1/MTTF, or a share of a group's rate) and up to seven
// stages A..G with a duration and a mean throughput, taken from a run's
// summary.json or given by hand. EffectiveStages applies the repair rules
// (stages cut short at the MTTR, until_repair), and Evaluate computes the
// average throughput, availability, unavailability, performability and
// each fault's share. Sweep and FindCrossover vary rates; the figures are
// written by WriteSweepFigure and WriteCrossoverFigure.
//
// Markov reward models. A Chain is states, an initial distribution,
// transition rates, optional rewards, absorbing states and transient
// times; Solve returns its steady state, mean time to absorption and
// transient probabilities and accumulated reward. The direct solver is the
// Grassmann–Taksar–Heyman elimination inside a band found by reverse
// Cuthill–McKee, so stiff chains keep their accuracy and 10,000-state
// sparse chains need megabytes, not the 800 MB of a dense LU; chains with
// no narrow band fall back to Gauss–Seidel. KofN and RAID5 generate the
// common chains; BridgeChain turns a FaultLoad into a chain whose steady
// reward is phase 2's average throughput (denominator mttf+mttr).
//
// SSM (Ling, Kiciman and Fox 2004, §3.7). PLoss, EvaluateSessionLoss and RhoForNines give the
// probability that a session object loses all its WQ copies between writes.
//
// Errors caused by the input match ErrBadInput (errors.Is) and, for files,
// are *InputError values naming the file, line and key; everything else is
// a failure of the computation (ErrNotConverged). Nothing in
// the package keeps state between calls, and every function may be called
// from any goroutine.
package model
