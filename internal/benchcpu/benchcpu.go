// Package benchcpu reports the CPU time a Go benchmark spends per
// operation. On a shared machine ns/op counts the other jobs' time too;
// the process's own CPU time (user and system, every goroutine, the
// benchmark's in-process servers included) much less so. It is for
// benchmarks only and imports nothing of faultbench.
package benchcpu

import (
	"syscall"
	"testing"
	"time"
)

// Process is the CPU time the process has used so far (user and system).
func Process() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// PerOp starts counting; the function it returns, called at the end of the
// benchmark (after its setup, e.g. deferred after ResetTimer), reports the
// CPU time per operation as "cpu-ns/op".
func PerOp(b *testing.B) func() {
	start := Process()
	return func() { b.ReportMetric(float64(Process()-start)/float64(b.N), "cpu-ns/op") }
}
