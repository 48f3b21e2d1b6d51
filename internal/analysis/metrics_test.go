package analysis

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/faultbench/faultbench/internal/record"
)

// randomLatencies draws a latency sample shaped like a fault run: a
// log-normal body, clusters at the 2 s connect and 6 s response timeouts,
// and occasional far outliers.
func randomLatencies(rng *rand.Rand, n int) []record.Request {
	out := make([]record.Request, n)
	for i := range out {
		r := record.Request{StartS: float64(i) / 100, Outcome: record.OK}
		switch u := rng.Float64(); {
		case u < 0.05:
			r.LatencyS, r.Outcome = 2, record.ConnAbort
		case u < 0.08:
			r.LatencyS, r.Outcome = 6, record.Timeout
		case u < 0.09:
			r.LatencyS, r.Outcome = rng.Float64()*0.001, record.ConnError
		case u < 0.095:
			r.LatencyS = 10 + 100*rng.Float64()
		default:
			r.LatencyS = math.Exp(rng.NormFloat64()*1.2 - 4)
		}
		out[i] = r
	}
	return out
}

// reference computes M by the book: sort everything, index ranks.
type reference struct {
	n                                  int
	mean, sd, trimmed, max, trimmedMax float64
	q                                  map[float64]float64
	exceed                             []float64
	outliers                           float64
	outliersBoth                       float64 // either side of mean ± 3σ
	ok, connAbort, connError, timeoutN int
}

func newReference(reqs []record.Request) reference {
	x := make([]float64, len(reqs))
	ref := reference{n: len(reqs), q: map[float64]float64{}}
	for i, r := range reqs {
		x[i] = r.LatencyS
		switch r.Outcome {
		case record.OK:
			ref.ok++
		case record.ConnAbort:
			ref.connAbort++
		case record.ConnError:
			ref.connError++
		case record.Timeout:
			ref.timeoutN++
		}
	}
	sort.Float64s(x)
	n := len(x)
	var sum float64
	for _, v := range x {
		sum += v
	}
	ref.mean = sum / float64(n)
	var ss float64
	for _, v := range x {
		ss += (v - ref.mean) * (v - ref.mean)
	}
	ref.sd = math.Sqrt(ss / float64(n-1))
	k := int(math.Floor(0.025 * float64(n)))
	var ts float64
	for _, v := range x[k : n-k] {
		ts += v
	}
	ref.trimmed = ts / float64(n-2*k)
	ref.max = x[n-1]
	ref.trimmedMax = x[n-int(math.Floor(0.01*float64(n)))-1]
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		ref.q[q] = x[max(1, int(math.Ceil(q*float64(n))))-1]
	}
	for _, t := range ExceedThresholds {
		c := 0
		for _, v := range x {
			if v > t.Seconds {
				c++
			}
		}
		ref.exceed = append(ref.exceed, float64(c)/float64(n))
	}
	c := 0
	for _, v := range x {
		if v > ref.mean+3*ref.sd {
			c++
		}
	}
	ref.outliers = float64(c) / float64(n)
	for _, v := range x {
		if v < ref.mean-3*ref.sd {
			c++
		}
	}
	ref.outliersBoth = float64(c) / float64(n)
	return ref
}

func within(t *testing.T, what string, got Float, want, rel float64) {
	t.Helper()
	if !got.Valid() || math.Abs(float64(got)-want) > rel*math.Abs(want)+1e-9 {
		t.Errorf("%s = %v, want %v (±%g relative)", what, float64(got), want, rel)
	}
}

// TestMetricsAgainstReference checks every metric of M against the simple
// sort-everything implementation on seeded random samples.
func TestMetricsAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	weights := demeritWeights(nil)
	for iter := 0; iter < 60; iter++ {
		n := 2 + rng.IntN(20000)
		if iter%10 == 0 {
			n = 2 + rng.IntN(50)
		}
		reqs := randomLatencies(rng, n)
		acc := newPeriodAcc()
		for i := range reqs {
			acc.add(&reqs[i])
		}
		acc.setSigmaLimit()
		for _, r := range reqs {
			acc.addOutlier(&r)
		}
		const ideal, dur = 0.02, 1000.0
		m, _ := acc.metrics(0, dur, dur, ideal, weights)
		ref := newReference(reqs)

		if m.Attempts != int64(n) || m.ThroughputTotal != int64(ref.ok) {
			t.Fatalf("n=%d: attempts %d ok %d, want %d %d", n, m.Attempts, m.ThroughputTotal, n, ref.ok)
		}
		within(t, "mean", m.LatencyMeanS, ref.mean, 1e-9)
		within(t, "total", m.LatencyTotalS, ref.mean*float64(n), 1e-9)
		within(t, "stddev", m.LatencyStddevS, ref.sd, 1e-7)
		within(t, "trimmed mean", m.LatencyTrimmedMeanS, ref.trimmed, 5e-4)
		within(t, "p50", m.LatencyP50S, ref.q[0.5], 1e-3)
		within(t, "p90", m.LatencyP90S, ref.q[0.9], 1e-3)
		within(t, "p99", m.LatencyP99S, ref.q[0.99], 1e-3)
		within(t, "p99.9", m.LatencyP999S, ref.q[0.999], 1e-3)
		within(t, "max", m.LatencyMaxS, ref.max, 0)
		within(t, "1%-trimmed max", m.LatencyMaxTrimmed1pc, ref.trimmedMax, 1e-3)
		within(t, "yield", m.Yield, float64(ref.ok)/float64(n), 1e-12)
		within(t, "goodput", m.Goodput, float64(ref.ok)/float64(n), 1e-12)
		within(t, "throughput", m.ThroughputMeanPerS, float64(ref.ok)/dur, 1e-12)
		within(t, "offered", m.OfferedPerS, float64(n)/dur, 1e-12)
		within(t, "punctuality", m.Punctuality, ideal/ref.mean, 1e-9)
		for i, e := range ExceedThresholds {
			within(t, "p_exceed "+e.Key, m.PExceed[e.Key], ref.exceed[i], 0)
		}
		within(t, "3-sigma fraction", m.Outliers3SigmaFrac, ref.outliers, 0)
		within(t, "two-sided 3-sigma fraction", m.Outliers3SigmaTwoSidedFrac, ref.outliersBoth, 0)
		wantDemerits := 2*float64(ref.connAbort) + float64(ref.connError) + 8*float64(ref.timeoutN) + math.Max(0, ref.mean-ideal)
		within(t, "demerits", m.Demerits, wantDemerits, 1e-9)
	}
}

// TestMomentsMerge: Welford merged over windows equals one pass over all.
func TestMomentsMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 100; iter++ {
		var all, merged moments
		for p := 0; p < 1+rng.IntN(10); p++ {
			var part moments
			for i := 0; i < rng.IntN(100); i++ {
				v := rng.ExpFloat64()
				all.add(v)
				part.add(v)
			}
			merged.merge(part)
		}
		if all.n != merged.n || math.Abs(all.mean-merged.mean) > 1e-12 || math.Abs(all.m2-merged.m2) > 1e-9*math.Max(1, all.m2) {
			t.Fatalf("merge %+v != one pass %+v", merged, all)
		}
	}
}

func TestEmptyPeriodIsNull(t *testing.T) {
	m, d := newPeriodAcc().metrics(0, 10, 10, math.NaN(), demeritWeights(nil))
	for name, v := range map[string]Float{"mean": m.LatencyMeanS, "p99": m.LatencyP99S, "trimmed": m.LatencyTrimmedMeanS,
		"goodput": m.Goodput, "yield": m.Yield, "punctuality": m.Punctuality, "outliers": m.Outliers3SigmaFrac, "max": m.LatencyMaxS} {
		if v.Valid() {
			t.Errorf("%s of an empty period = %v, want null", name, v)
		}
	}
	if m.ThroughputMeanPerS != 0 || m.Demerits != 0 || d.Count != 0 || len(d.CDF()) != 0 {
		t.Errorf("empty period: throughput %v demerits %v", m.ThroughputMeanPerS, m.Demerits)
	}
}

func TestDistributionBoxAndCDF(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	reqs := randomLatencies(rng, 5000)
	acc := newPeriodAcc()
	for i := range reqs {
		acc.add(&reqs[i])
	}
	_, d := acc.metrics(0, 1, 1, math.NaN(), demeritWeights(nil))
	b := d.Box()
	if !(b.Min <= b.WhiskerLow && b.WhiskerLow <= b.Q1 && b.Q1 <= b.Median && b.Median <= b.Q3 && b.Q3 <= b.WhiskerHigh && b.WhiskerHigh <= b.Max) {
		t.Errorf("box out of order: %+v", b)
	}
	cdf := d.CDF()
	for i := 1; i < len(cdf); i++ {
		if cdf[i].LatencyS < cdf[i-1].LatencyS || cdf[i].Fraction <= cdf[i-1].Fraction {
			t.Fatalf("CDF not increasing at %d: %+v %+v", i, cdf[i-1], cdf[i])
		}
	}
	if last := cdf[len(cdf)-1]; last.Fraction != 1 || last.LatencyS != d.MaxS {
		t.Errorf("CDF ends at %+v, want (max, 1)", last)
	}
}
