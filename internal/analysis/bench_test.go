package analysis

import (
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/record"
)

// BenchmarkPeriodAdd is pass 1's per-request work for one period.
func BenchmarkPeriodAdd(b *testing.B) {
	reqs := randomLatencies(rand.New(rand.NewPCG(1, 1)), 1<<16)
	acc := newPeriodAcc()
	b.ReportAllocs()
	b.ResetTimer()
	defer cpuPerOp(b)()
	for i := 0; i < b.N; i++ {
		acc.add(&reqs[i&(1<<16-1)])
	}
}

// BenchmarkWindowAdd is pass 1's per-request window bookkeeping.
func BenchmarkWindowAdd(b *testing.B) {
	reqs := randomLatencies(rand.New(rand.NewPCG(1, 1)), 1<<16)
	var d runData
	b.ReportAllocs()
	b.ResetTimer()
	defer cpuPerOp(b)()
	for i := 0; i < b.N; i++ {
		d.addWindow(&reqs[i&(1<<16-1)], 5)
	}
}

// BenchmarkAnalyzeDir analyses a results dir named by FAULTBENCH_BENCH_DIR
// (e.g. one made by bench/analysis), to profile the whole pipeline.
func BenchmarkAnalyzeDir(b *testing.B) {
	dir := os.Getenv("FAULTBENCH_BENCH_DIR")
	if dir == "" {
		b.Skip("set FAULTBENCH_BENCH_DIR to a results directory")
	}
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for i := 0; i < b.N; i++ {
		if _, err := Analyze(dir, Options{Complete: true}); err != nil {
			b.Fatal(err)
		}
	}
	_ = record.OK
}

// cpuPerOp reports the CPU time of the process per operation (cpu-ns/op)
// when the returned function is called at the end of a benchmark: on a
// shared machine ns/op counts the other jobs' time too, CPU time much less
// so. Call it after the benchmark's setup.
func cpuPerOp(b *testing.B) func() {
	start := processCPU()
	return func() { b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op") }
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
