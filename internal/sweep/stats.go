package sweep

import (
	"math"
	"sort"
)

// Dist describes one configuration's latency samples the way Dumitras and
// Narasimhan (2005) §2.1 do: mean, median, σ, min, max, the 99th
// percentile with a confidence interval, a box plot, and the 3σ outliers.
// Values a sample cannot define are NaN (null in JSON).
type Dist struct {
	N      int   `json:"samples"`
	Mean   Float `json:"mean_s"`
	Median Float `json:"median_s"`
	Stddev Float `json:"stddev_s"` // unbiased (n − 1)
	Min    Float `json:"min_s"`
	Max    Float `json:"max_s"`
	P99    Float `json:"p99_s"`
	// P99Low and P99High bound the true 99th percentile with at least 95%
	// confidence whatever the distribution: order statistics chosen from
	// the binomial law of how many samples fall below it. Null when there
	// are too few samples for that side (the upper bound needs 368).
	P99Low  Float `json:"p99_ci95_low_s"`
	P99High Float `json:"p99_ci95_high_s"`
	Q1      Float `json:"q1_s"`
	Q3      Float `json:"q3_s"`
	// Outliers are the samples farther than 3σ from the mean on either
	// side (the paper's test); OutliersHigh only those above.
	Outliers         int   `json:"outliers_3sigma"`
	OutliersHigh     int   `json:"outliers_3sigma_high"`
	OutlierFraction  Float `json:"outliers_3sigma_two_sided_fraction"`
	MaxTrimmed1Pct   Float `json:"latency_max_trimmed_1pct_s"` // the maximum once the top 1% is dropped
	OutliersTrimmed  int   `json:"outliers_3sigma_after_trim"` // two-sided outliers left among the rest
	TrimmedConforms  bool  `json:"trimmed_conforms_3sigma"`    // the 99% that remain pass the 3σ test
	MeanTrimmed1Pct  Float `json:"mean_trimmed_1pct_s"`
	StddevTrimmed1Pc Float `json:"stddev_trimmed_1pct_s"`
}

// Float is a float64 written as null in JSON when it is NaN or infinite.
type Float float64

// MarshalJSON writes null for NaN and ±Inf.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return []byte(formatFloat(v)), nil
}

// Describe computes Dist from samples, which it sorts in place.
func Describe(x []float64) Dist {
	sort.Float64s(x)
	n := len(x)
	nan := Float(math.NaN())
	d := Dist{N: n, Mean: nan, Median: nan, Stddev: nan, Min: nan, Max: nan, P99: nan, P99Low: nan, P99High: nan,
		Q1: nan, Q3: nan, OutlierFraction: nan, MaxTrimmed1Pct: nan, MeanTrimmed1Pct: nan, StddevTrimmed1Pc: nan}
	if n == 0 {
		return d
	}
	mean, sd := meanStddev(x)
	d.Mean, d.Stddev = Float(mean), Float(sd)
	d.Min, d.Max = Float(x[0]), Float(x[n-1])
	d.Median, d.Q1, d.Q3 = Float(Quantile(x, 0.5)), Float(Quantile(x, 0.25)), Float(Quantile(x, 0.75))
	d.P99 = Float(Quantile(x, 0.99))
	if lo, hi, ok := QuantileCI(n, 0.99, 0.95); ok {
		if lo >= 1 {
			d.P99Low = Float(x[lo-1])
		}
		if hi <= n {
			d.P99High = Float(x[hi-1])
		}
	}
	d.Outliers, d.OutliersHigh = outliers(x, mean, sd)
	d.OutlierFraction = Float(float64(d.Outliers) / float64(n))
	kept := x[:n-n/100] // the top 1% (rounded down) dropped
	d.MaxTrimmed1Pct = Float(kept[len(kept)-1])
	tm, tsd := meanStddev(kept)
	d.MeanTrimmed1Pct, d.StddevTrimmed1Pc = Float(tm), Float(tsd)
	d.OutliersTrimmed, _ = outliers(kept, tm, tsd)
	d.TrimmedConforms = d.OutliersTrimmed == 0
	return d
}

// meanStddev is the mean and the unbiased standard deviation (NaN for
// fewer than two samples), by Welford's update.
func meanStddev(x []float64) (float64, float64) {
	var mean, m2 float64
	for i, v := range x {
		delta := v - mean
		mean += delta / float64(i+1)
		m2 += delta * (v - mean)
	}
	if len(x) < 2 {
		return mean, math.NaN()
	}
	return mean, math.Sqrt(m2 / float64(len(x)-1))
}

// outliers counts the samples farther than 3σ from the mean, on both sides
// and above. A NaN σ (one sample) has none.
func outliers(x []float64, mean, sd float64) (both, high int) {
	if math.IsNaN(sd) {
		return 0, 0
	}
	lo, hi := mean-3*sd, mean+3*sd
	for _, v := range x {
		if v > hi {
			both++
			high++
		} else if v < lo {
			both++
		}
	}
	return both, high
}

// Quantile of sorted samples: the order statistic of rank ⌈q·n⌉ (the
// inverse of the empirical distribution function; no interpolation, so a
// percentile is always a measured value).
func Quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	r := int(math.Ceil(q * float64(n)))
	r = max(1, min(n, r))
	return sorted[r-1]
}

// QuantileCI gives the ranks (from 1) of the order statistics that bound
// the q-quantile with confidence at least conf, for n samples of any
// continuous distribution: the number of samples below the true quantile
// is Binomial(n, q), so P(X(lo) ≤ ξq < X(hi)) = P(lo ≤ B < hi). lo is the
// largest rank with P(B < lo) ≤ α/2 and hi the smallest with
// P(B ≥ hi) ≤ α/2. lo is 0 and hi is n+1 when n is too small for that side;
// ok is false for n = 0.
func QuantileCI(n int, q, conf float64) (lo, hi int, ok bool) {
	if n <= 0 {
		return 0, 0, false
	}
	tail := (1 - conf) / 2
	// cdf[k] = P(B ≤ k), from the pmf in log space (n up to millions).
	lq, lp := math.Log(q), math.Log1p(-q)
	lgN, _ := math.Lgamma(float64(n + 1))
	cdf := 0.0
	lo, hi = 0, n+1
	for k := 0; k <= n; k++ {
		lgK, _ := math.Lgamma(float64(k + 1))
		lgNK, _ := math.Lgamma(float64(n - k + 1))
		cdf += math.Exp(lgN - lgK - lgNK + float64(k)*lq + float64(n-k)*lp)
		// P(B < k+1) = cdf: rank k+1 is a valid lower bound while it stays ≤ tail.
		if cdf <= tail {
			lo = k + 1
		}
		// P(B ≥ k+1) = 1 − cdf: rank k+1 is the upper bound once that is ≤ tail.
		if hi == n+1 && 1-cdf <= tail {
			hi = k + 1
			break
		}
	}
	return lo, hi, true
}
