package testbed

// ExitObserver hears of node applications that end although nobody asked
// them to: not a fault injector, not the operator, not Stop. Such an exit is
// a failure the scenario did not plan (Broadwell (2004) shows the same kind
// of "spontaneous hiccup" in Fig. 9), and the operator model treats it as a
// fault of its own.
//
// Both methods are called from the goroutine that watched the process, with
// the node's lock held: they must not block or call back into the Cluster.
type ExitObserver interface {
	// Exited says node's application ended on its own; cause is what the
	// kernel reported ("signal: killed", "exit status 1").
	Exited(node int, cause string)
	// Ready says node's application answers its readiness check (after any
	// start, whoever started it).
	Ready(node int)
}
