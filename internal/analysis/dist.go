package analysis

import (
	"math"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Distribution is the latency distribution of one period, for figures (box
// plots, CDFs) and for the order statistics of Metrics. It is immutable and
// safe for concurrent reads.
//
// Count, MinS, MaxS and MeanS are exact. Order statistics come from a
// nanosecond HDR histogram: the value returned for a rank is the midpoint of
// the bucket that holds the exact order statistic, clamped into
// [MinS, MaxS], so it is within 0.05% (+1 ns) of the exact value.
type Distribution struct {
	Count int64
	MinS  float64
	MaxS  float64
	MeanS float64
	bars  []bar // non-empty buckets, ascending
}

type bar struct{ lo, hi, n int64 } // nanoseconds, inclusive bounds

func newDistribution(h *hdrhistogram.Histogram, mom moments, min, max float64) *Distribution {
	d := &Distribution{Count: mom.n, MinS: math.NaN(), MaxS: math.NaN(), MeanS: math.NaN()}
	if mom.n == 0 {
		return d
	}
	d.MinS, d.MaxS, d.MeanS = min, max, mom.mean
	for _, b := range h.Distribution() {
		if b.Count > 0 {
			d.bars = append(d.bars, bar{b.From, b.To, b.Count})
		}
	}
	return d
}

// valueAt returns the representative of the bucket holding the r-th
// smallest latency (1-based), in seconds.
func (d *Distribution) valueAt(r int64) float64 {
	if d.Count == 0 {
		return math.NaN()
	}
	if r <= 1 {
		return d.MinS
	}
	if r >= d.Count {
		return d.MaxS
	}
	var cum int64
	for _, b := range d.bars {
		cum += b.n
		if cum >= r {
			return d.clamp(b)
		}
	}
	return d.MaxS
}

func (d *Distribution) clamp(b bar) float64 {
	v := float64(b.lo+b.hi) / 2 / 1e9
	return math.Min(math.Max(v, d.MinS), d.MaxS)
}

// Quantile returns the nearest-rank q-quantile (0 ≤ q ≤ 1) in seconds: the
// ⌈q·n⌉-th smallest latency. NaN for an empty period.
func (d *Distribution) Quantile(q float64) float64 {
	return d.valueAt(int64(math.Ceil(q * float64(d.Count))))
}

// TrimmedMean is the mean of the latencies left after dropping ⌊frac·n⌋
// from each end (frac 0.025 gives the 95% trimmed mean of docs/metrics.md).
func (d *Distribution) TrimmedMean(frac float64) float64 {
	k := int64(math.Floor(frac * float64(d.Count)))
	lo, hi := k+1, d.Count-k // ranks kept, inclusive
	if hi < lo {
		return math.NaN()
	}
	if k == 0 {
		return d.MeanS
	}
	var cum int64
	var sum float64
	for _, b := range d.bars {
		first, last := cum+1, cum+b.n
		cum = last
		if last < lo {
			continue
		}
		if first > hi {
			break
		}
		n := min(last, hi) - max(first, lo) + 1
		sum += float64(n) * d.clamp(b)
	}
	return sum / float64(hi-lo+1)
}

// MaxTrimmed is the largest latency left after dropping the ⌊frac·n⌋
// largest (frac 0.01: the maximum after the "magical 1%" haircut).
func (d *Distribution) MaxTrimmed(frac float64) float64 {
	return d.valueAt(d.Count - int64(math.Floor(frac*float64(d.Count))))
}

// CDFPoint is one step of an empirical CDF: Fraction of latencies ≤ LatencyS.
type CDFPoint struct {
	LatencyS float64
	Fraction float64
}

// CDF returns one point per non-empty histogram bucket (at the bucket's
// upper bound, the last at MaxS), ascending. Empty for an empty period.
func (d *Distribution) CDF() []CDFPoint {
	out := make([]CDFPoint, 0, len(d.bars))
	var cum int64
	for i, b := range d.bars {
		cum += b.n
		v := float64(b.hi) / 1e9
		if i == len(d.bars)-1 || v > d.MaxS {
			v = d.MaxS
		}
		out = append(out, CDFPoint{v, float64(cum) / float64(d.Count)})
	}
	return out
}

// Box holds the figures of a box-and-whiskers plot (Broadwell 2004, Fig. 17):
// quartiles, whiskers at the most extreme latencies within 1.5 IQR of the
// box, the mean, and the 1%-trimmed maximum.
type Box struct {
	Min, Q1, Median, Q3, Max  float64
	WhiskerLow, WhiskerHigh   float64
	Mean, P99, MaxTrimmed1Pct float64
}

// Box returns the box-plot figures; every field is NaN for an empty period.
func (d *Distribution) Box() Box {
	b := Box{Min: d.MinS, Max: d.MaxS, Mean: d.MeanS, Q1: d.Quantile(0.25), Median: d.Quantile(0.5), Q3: d.Quantile(0.75),
		P99: d.Quantile(0.99), MaxTrimmed1Pct: d.MaxTrimmed(0.01)}
	b.WhiskerLow, b.WhiskerHigh = math.NaN(), math.NaN()
	if d.Count == 0 {
		return b
	}
	iqr := b.Q3 - b.Q1
	lowFence, highFence := b.Q1-1.5*iqr, b.Q3+1.5*iqr
	b.WhiskerLow, b.WhiskerHigh = b.Q1, b.Q3
	for _, x := range d.bars {
		v := d.clamp(x)
		if v >= lowFence && v < b.WhiskerLow {
			b.WhiskerLow = v
		}
		if v <= highFence && v > b.WhiskerHigh {
			b.WhiskerHigh = v
		}
	}
	return b
}
