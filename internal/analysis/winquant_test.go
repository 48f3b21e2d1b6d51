package analysis

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/faultbench/faultbench/internal/benchcpu"
	"github.com/faultbench/faultbench/internal/record"
)

// TestWindowQuantilesMatchRecord: windowQuantiles gives every window the
// percentiles record.WindowAggregator gives it, on seeded random records
// whose order is shuffled enough that some attempts come after their window
// was final, with refused and cut-short attempts, gaps and an end beyond
// the last attempt.
func TestWindowQuantilesMatchRecord(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for iter := 0; iter < 200; iter++ {
		w := []float64{1, 5, 0.5}[iter%3]
		horizon := w * float64(1+rng.IntN(6))
		agg := record.NewWindowAggregator(w, horizon)
		q := newWindowQuantiles(w, horizon)
		n := rng.IntN(3000)
		t0 := 0.0
		for i := 0; i < n; i++ {
			t0 += rng.ExpFloat64() / 50
			if rng.IntN(200) == 0 {
				t0 += 20 * w // a gap of windows without attempts
			}
			start := t0
			switch rng.IntN(50) {
			case 0:
				start = math.Max(0, t0-horizon*3*rng.Float64()) // late, perhaps past its window's end
			case 1:
				start = -rng.Float64() // before the start, counted in window 0
			}
			r := record.Request{StartS: start, LatencyS: math.Exp(rng.NormFloat64() - 5), SendLagS: rng.ExpFloat64() / 1e4, Outcome: record.Outcome(rng.IntN(record.NumOutcomes))}
			switch rng.IntN(30) {
			case 0:
				r.Refused = record.RefusedNoConn
			case 1:
				r.CutShort = true
			case 2:
				r.SendLagS, r.LatencyS = 0, 1e-9 // below the histograms' floor
			}
			agg.Add(r)
			q.add(r.StartS, r.LatencyS, r.SendLagS, r.Refused != record.NotRefused, r.CutShort)
		}
		end := t0 + w*float64(rng.IntN(4))
		want, got := agg.Close(end), q.close(end)
		if len(got) != len(want) {
			t.Fatalf("iter %d: %d windows, record has %d", iter, len(got), len(want))
		}
		same := func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
		for i := range want {
			a, b := want[i], got[i]
			if !same(a.LatencyP50, b.LatencyP50) || !same(a.LatencyP90, b.LatencyP90) || !same(a.LatencyP99, b.LatencyP99) ||
				!same(a.LatencyMax, b.LatencyMax) || !same(a.SendLagP99, b.SendLagP99) || a.StartS != b.StartS {
				t.Fatalf("iter %d window %d: got %+v\nrecord has %+v", iter, i, b, a)
			}
		}
	}
}

// BenchmarkWindowQuantilesAdd is one request into its window's percentiles
// (pass 1 when windows.csv is missing or unsettled), beside record's aggregator.
func BenchmarkWindowQuantilesAdd(b *testing.B) {
	reqs := randomLatencies(rand.New(rand.NewPCG(1, 1)), 1<<16)
	for i := range reqs {
		reqs[i].StartS = float64(i) / 1000
	}
	b.Run("windowQuantiles", func(b *testing.B) {
		q := newWindowQuantiles(5, 20)
		b.ReportAllocs()
		defer benchcpu.PerOp(b)()
		for i := 0; i < b.N; i++ {
			r := &reqs[i&(1<<16-1)]
			q.add(float64(i)/1000, r.LatencyS, r.SendLagS, false, false)
		}
	})
	b.Run("record.WindowAggregator", func(b *testing.B) {
		agg := record.NewWindowAggregator(5, 20)
		b.ReportAllocs()
		defer benchcpu.PerOp(b)()
		for i := 0; i < b.N; i++ {
			r := reqs[i&(1<<16-1)]
			r.StartS = float64(i) / 1000
			agg.Add(r)
		}
	})
}
