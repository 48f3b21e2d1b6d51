package analysis

import (
	"math"
)

// BandZ is the two-sided 99% normal quantile: the band is mean ± 2.576σ
// (Brown and Patterson 2000, §4.1 footnote 2).
const BandZ = 2.576

// band is a baseline band in requests per second.
type band struct{ mean, sd, low, high float64 }

func (b *band) inside(x float64) bool { return x >= b.low && x <= b.high }

// distance is how far x lies outside the band (0 inside), requests/s.
func (b *band) distance(x float64) float64 {
	switch {
	case x < b.low:
		return b.low - x
	case x > b.high:
		return x - b.high
	}
	return 0
}

func newBand(x []float64) *band {
	var m moments
	for _, v := range x {
		m.add(v)
	}
	sd := m.stddev()
	if math.IsNaN(sd) {
		return nil
	}
	return &band{mean: m.mean, sd: sd, low: m.mean - BandZ*sd, high: m.mean + BandZ*sd}
}

// settle returns how many leading windows of a fault-free series are warm-up.
// Rule: drop window i while it lies outside the band of the windows after
// it (mean ± 2.576σ of x[i+1:]), never dropping more than half the series
// and always keeping at least two windows.
func settle(x []float64) int {
	maxDrop := len(x) / 2
	for i := 0; i < maxDrop && len(x)-i-1 >= 2; i++ {
		b := newBand(x[i+1:])
		if b == nil || b.inside(x[i]) {
			return i
		}
	}
	return min(maxDrop, max(0, len(x)-2))
}

// deviations returns the maximal runs of windows outside the band among
// x[from:to], with window length w.
func deviations(x []float64, from, to int, w float64, b *band) []Deviation {
	var out []Deviation
	var cur *Deviation
	for i := from; i < to; i++ {
		d := b.distance(x[i])
		if d == 0 {
			cur = nil
			continue
		}
		side := "low"
		if x[i] > b.high {
			side = "high"
		}
		if cur == nil {
			out = append(out, Deviation{StartS: float64(i) * w, Side: side})
			cur = &out[len(out)-1]
		} else if cur.Side != side {
			cur.Side = "both"
		}
		cur.LengthS += w
		cur.EndS = cur.StartS + cur.LengthS
		cur.Windows++
		cur.Depth = math.Max(cur.Depth, d)
		cur.Area += d * w
	}
	return out
}

// DeviationSummary condenses the deviations as Brown and Patterson (2000) §2.3 asks: the
// distributions of their frequency, length and severity.
type DeviationSummary struct {
	Count     int     `json:"count"`
	ObservedS float64 `json:"observed_s"` // seconds of windows scanned for deviations
	PerHour   Float   `json:"per_hour"`   // Count / ObservedS × 3600
	// IntervalS is the distribution of the time between consecutive deviation starts.
	IntervalS Stats `json:"interval_s"`
	LengthS   Stats `json:"length_s"`
	Depth     Stats `json:"depth"` // requests/s outside the band
	Area      Stats `json:"area"`  // requests lost (or gained) against the band
	// LengthXDepth is mean length × mean depth, B&P's one-number distillation.
	LengthXDepth Float `json:"mean_length_x_mean_depth"`
}

// Stats describes a small sample: NaN (null) fields when it has too few values.
type Stats struct {
	N      int   `json:"n"`
	Mean   Float `json:"mean"`
	Stddev Float `json:"stddev"`
	Min    Float `json:"min"`
	Median Float `json:"median"`
	Max    Float `json:"max"`
}

func newStats(x []float64) Stats {
	s := Stats{N: len(x), Mean: NaN, Stddev: NaN, Min: NaN, Median: NaN, Max: NaN}
	if len(x) == 0 {
		return s
	}
	var m moments
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range x {
		m.add(v)
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	s.Mean, s.Stddev, s.Min, s.Max = Float(m.mean), Float(m.stddev()), Float(lo), Float(hi)
	s.Median = Float(median(x))
	return s
}

func median(x []float64) float64 {
	y := append([]float64(nil), x...)
	sortFloats(y)
	n := len(y)
	if n%2 == 1 {
		return y[n/2]
	}
	return (y[n/2-1] + y[n/2]) / 2
}

func summariseDeviations(devs []Deviation, observedS float64) *DeviationSummary {
	s := &DeviationSummary{Count: len(devs), ObservedS: observedS, PerHour: NaN, LengthXDepth: NaN}
	if observedS > 0 {
		s.PerHour = Float(float64(len(devs)) / observedS * 3600)
	}
	var lengths, depths, areas, gaps []float64
	for i, d := range devs {
		lengths = append(lengths, d.LengthS)
		depths = append(depths, d.Depth)
		areas = append(areas, d.Area)
		if i > 0 {
			gaps = append(gaps, d.StartS-devs[i-1].StartS)
		}
	}
	s.IntervalS, s.LengthS, s.Depth, s.Area = newStats(gaps), newStats(lengths), newStats(depths), newStats(areas)
	if len(devs) > 0 {
		s.LengthXDepth = s.LengthS.Mean * s.Depth.Mean
	}
	return s
}
