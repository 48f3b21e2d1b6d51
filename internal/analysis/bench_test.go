package analysis

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/faultbench/faultbench/internal/benchcpu"
	"github.com/faultbench/faultbench/internal/record"
)

// BenchmarkPeriodAdd is pass 1's per-request work for one period.
func BenchmarkPeriodAdd(b *testing.B) {
	reqs := randomLatencies(rand.New(rand.NewPCG(1, 1)), 1<<16)
	acc := newPeriodAcc()
	b.ReportAllocs()
	b.ResetTimer()
	defer benchcpu.PerOp(b)()
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
	defer benchcpu.PerOp(b)()
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
	defer benchcpu.PerOp(b)()
	for i := 0; i < b.N; i++ {
		if _, err := Analyze(dir, Options{Complete: true}); err != nil {
			b.Fatal(err)
		}
	}
	_ = record.OK
}

// benchBatch is a full batch of requests of one 5 s window of a 300 s run,
// latencies log-normal, lags zero, as decoded for a scan.
func benchBatch() *requestBatch {
	rng := rand.New(rand.NewPCG(3, 4))
	b := newRequestBatch()
	b.n, b.lagZero = batchRows, true
	t := 100.0
	for i := range b.n {
		t += rng.ExpFloat64() / 1e6
		b.start[i], b.lat[i], b.out[i] = t, math.Exp(rng.NormFloat64()*0.8-5.5), record.OK
	}
	return b
}

// BenchmarkFirstPassStep is pass 1's work on a decoded batch: the local
// step (checks, phases, windows, histograms) and the ordered step
// (moments, window percentiles); ns/op is per request.
func BenchmarkFirstPassStep(b *testing.B) {
	batch := benchBatch()
	phases := []phaseSpan{{"warmup", 0, 60}, {"fault", 60, 150}, {"recovery", 150, 210}, {"post", 210, 300}}
	p := newFirstPass(5, phases, newWindowQuantiles(5, 20), 1, 1)
	b.ReportAllocs()
	b.ResetTimer()
	defer benchcpu.PerOp(b)()
	for i := 0; i < b.N; i += batchRows {
		if err := p.localStep(0, batch); err != nil {
			b.Fatal(err)
		}
		if err := p.orderedStep(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSecondPassStep is pass 2's local step on a decoded batch
// outside the failure interval: general reads every column of every
// request; uniform is a unit whose plan (from pass 1's span of start
// times) leaves only latencies to look at. ns/op is per request.
func BenchmarkSecondPassStep(b *testing.B) {
	for _, uniform := range []bool{false, true} {
		name := map[bool]string{false: "general", true: "uniform"}[uniform]
		b.Run(name, func(b *testing.B) {
			batch := benchBatch()
			phases := []phaseSpan{{"all", 0, 300}}
			overall, phase := newPeriodAcc(), newPeriodAcc()
			for _, acc := range []*periodAcc{overall, phase} {
				acc.sigmaLimit, acc.lowLimit = 0.03, -0.01
			}
			bounds := [8]float64{150, 151, 152, 153, 154, 155, 156, 157}
			p := newSecondPass(5, phases, overall, []*periodAcc{phase}, newPeriodAcc(), make([]bool, 60), []faultCase{{stageBounds: bounds}}, 1)
			p.planUnits([]unit{{}}, []startSpan{{batch.start[0], batch.start[batch.n-1]}})
			p.plans[0].uniform = uniform
			b.ReportAllocs()
			b.ResetTimer()
			defer benchcpu.PerOp(b)()
			for i := 0; i < b.N; i += batchRows {
				if err := p.localStep(0, batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
