// Package knee finds the rate at which a system saturates, so that an
// availability benchmark can drive it just below that point (Brown &
// Patterson (2000) §3.3: "increasing the number of active connections
// per second until a knee was observed in the performance curve, then
// backing off the load").
//
// Search offers one open-loop rate after another through a Probe and judges
// each step: it passes when its goodput (ok / attempts) is at least
// Config.Goodput and its p99 latency (over every attempt, any outcome) is at
// most Config.P99. The rate grows by Config.Factor from Config.Start until a
// step fails or Config.Max passes; then Config.Refine bisection steps narrow
// the gap between the highest passing and the lowest failing rate. The knee
// is the highest rate that passed; the rate to run at is Config.Fraction ×
// knee.
//
// Search is a plain loop over the probe's answers and never sleeps itself:
// the probe owns time (the runner's probe drives the real cluster for
// Config.StepTime; the tests' probe simulates a queue in memory). The number
// of steps is bounded by MaxSteps, fixed before the first step.
package knee
