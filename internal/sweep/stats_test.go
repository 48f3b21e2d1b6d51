package sweep

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
)

// refOutliers is the textbook two-pass count: mean, then the unbiased σ,
// then every sample farther than 3σ on either side.
func refOutliers(x []float64) (both, high int) {
	var sum float64
	for _, v := range x {
		sum += v
	}
	mean := sum / float64(len(x))
	var ss float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	sd := math.Sqrt(ss / float64(len(x)-1))
	for _, v := range x {
		if math.Abs(v-mean) > 3*sd {
			both++
			if v > mean {
				high++
			}
		}
	}
	return both, high
}

func TestTwoSidedOutliersMatchReference(t *testing.T) {
	// Known samples: 1000 values near 10 ms, 5 spikes above, 3 dips below
	// far enough to be low outliers.
	x := make([]float64, 0, 1008)
	for i := range 1000 {
		x = append(x, 0.010+0.0001*float64(i%7))
	}
	x = append(x, 0.5, 0.6, 0.7, 0.8, 0.9)
	for range 3 {
		x = append(x, -0.2) // a metric unbounded below (e.g. a clock skew) shows the low side counts
	}
	wantBoth, wantHigh := refOutliers(x)
	if wantBoth == wantHigh {
		t.Fatalf("reference found no low outliers: the samples do not test the low side")
	}
	d := Describe(slices.Clone(x))
	if d.Outliers != wantBoth || d.OutliersHigh != wantHigh {
		t.Fatalf("outliers %d (high %d), reference %d (high %d)", d.Outliers, d.OutliersHigh, wantBoth, wantHigh)
	}
	if got, want := float64(d.OutlierFraction), float64(wantBoth)/float64(len(x)); got != want {
		t.Fatalf("fraction %v, want %v", got, want)
	}

	// Random samples of several shapes against the reference.
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		n := 2 + rng.IntN(3000)
		y := make([]float64, n)
		for i := range y {
			y[i] = rng.ExpFloat64()
			if rng.IntN(200) == 0 {
				y[i] *= 100
			}
			if trial%2 == 1 {
				y[i] = -y[i]
			}
		}
		b, h := refOutliers(y)
		d := Describe(slices.Clone(y))
		if d.Outliers != b || d.OutliersHigh != h {
			t.Fatalf("trial %d: %d/%d, reference %d/%d", trial, d.Outliers, d.OutliersHigh, b, h)
		}
	}
}

func TestHaircutTrimsTheTopOnePercent(t *testing.T) {
	// 1000 samples 1..1000 ms with the top 10 replaced by huge spikes: the
	// maximum is a spike, the 1%-trimmed maximum is 990 ms, p99 990 ms.
	x := make([]float64, 1000)
	for i := range x {
		x[i] = float64(i+1) / 1000
	}
	for i := 990; i < 1000; i++ {
		x[i] = 100 + float64(i)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	rng.Shuffle(len(x), func(i, j int) { x[i], x[j] = x[j], x[i] })
	d := Describe(x)
	if d.Max != 1099 || d.MaxTrimmed1Pct != 0.990 || d.P99 != 0.990 || d.Min != 0.001 || d.Median != 0.5 {
		t.Fatalf("max %v trimmed %v p99 %v min %v median %v", d.Max, d.MaxTrimmed1Pct, d.P99, d.Min, d.Median)
	}
	// The 99% left: mean 0.4955, no 3σ outliers.
	if math.Abs(float64(d.MeanTrimmed1Pct)-0.4955) > 1e-12 || !d.TrimmedConforms {
		t.Fatalf("trimmed mean %v conforms %v", d.MeanTrimmed1Pct, d.TrimmedConforms)
	}
}

// refBinomCDF is P(B ≤ k) for B ~ Binomial(n, 0.99): one minus the upper
// tail, summed term by term in 256-bit floats from exact binomial
// coefficients (the tail above k is short where the bounds lie).
func refBinomCDF(n, k int) float64 {
	const prec = 256
	q := new(big.Float).SetPrec(prec).Quo(big.NewFloat(99).SetPrec(prec), big.NewFloat(100).SetPrec(prec))
	p := new(big.Float).SetPrec(prec).Quo(big.NewFloat(1).SetPrec(prec), big.NewFloat(100).SetPrec(prec))
	pow := func(b *big.Float, e int) *big.Float {
		r := big.NewFloat(1).SetPrec(prec)
		for range e {
			r.Mul(r, b)
		}
		return r
	}
	sum := new(big.Float).SetPrec(prec)
	for i := k + 1; i <= n; i++ {
		c := new(big.Float).SetPrec(prec).SetInt(new(big.Int).Binomial(int64(n), int64(i)))
		c.Mul(c, pow(q, i))
		c.Mul(c, pow(p, n-i))
		sum.Add(sum, c)
	}
	f, _ := new(big.Float).SetPrec(prec).Sub(big.NewFloat(1).SetPrec(prec), sum).Float64()
	return f
}

func TestP99ConfidenceIntervalFromOrderStatistics(t *testing.T) {
	for _, n := range []int{100, 367, 368, 500} {
		lo, hi, ok := QuantileCI(n, 0.99, 0.95)
		if !ok {
			t.Fatalf("n=%d: not ok", n)
		}
		// Reference: the largest lo with P(B < lo) ≤ 2.5%, the smallest hi
		// with P(B ≥ hi) ≤ 2.5%, by exact arithmetic.
		wantLo, wantHi := 0, n+1
		for r := n - 20; r <= n; r++ { // B is rarely far below 0.99·n
			cdf := refBinomCDF(n, r-1)
			if cdf <= 0.025 {
				wantLo = r
			}
			if wantHi == n+1 && 1-cdf <= 0.025 {
				wantHi = r
			}
		}
		if refBinomCDF(n, n-21) > 0.025 {
			t.Fatalf("n=%d: the reference's window misses the lower bound", n)
		}
		if lo != wantLo || hi != wantHi {
			t.Errorf("n=%d: ranks [%d, %d], reference [%d, %d]", n, lo, hi, wantLo, wantHi)
		}
	}
	// 367 samples are too few for an upper bound; 368 are enough.
	if _, hi, _ := QuantileCI(367, 0.99, 0.95); hi != 368 {
		t.Errorf("n=367: hi %d, want none (368)", hi)
	}
	if _, hi, _ := QuantileCI(368, 0.99, 0.95); hi != 368 {
		t.Errorf("n=368: hi %d, want 368", hi)
	}
}
