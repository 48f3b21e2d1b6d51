package workload

import (
	"math"
	"math/rand"
)

// Zipf draws ranks 0..N-1 with P(k) proportional to 1/(k+1)^s for any s >= 0.
// math/rand's Zipf needs s > 1; web traces (Broadwell 2004, §3.3.2) sit near s = 1,
// so this samples by inverse CDF: one table of N cumulative probabilities,
// built once and shared read-only, and one binary search a draw.
type Zipf struct {
	cdf []float64 // cdf[k] = P(rank <= k); cdf[N-1] == 1
}

// NewZipf builds the table for n >= 1 ranks and exponent s >= 0.
func NewZipf(n int, s float64) *Zipf {
	cdf := make([]float64, n)
	var sum, carry float64 // Kahan summation keeps the tail exact for large n
	for k := range cdf {
		y := math.Pow(float64(k+1), -s) - carry
		t := sum + y
		carry = (t - sum) - y
		sum = t
		cdf[k] = sum
	}
	for k := range cdf {
		cdf[k] /= sum
	}
	cdf[n-1] = 1
	return &Zipf{cdf: cdf}
}

// Draw returns one rank. It only reads the table, so many goroutines may
// draw at once, each with its own rng.
func (z *Zipf) Draw(rng *rand.Rand) int { return z.index(rng.Float64()) }

// index is the smallest k with u < cdf[k], for u in [0, 1).
func (z *Zipf) index(u float64) int {
	lo, hi := 0, len(z.cdf)-1
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if u < z.cdf[mid] {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// Prob is P(rank == k), for tests and reports.
func (z *Zipf) Prob(k int) float64 {
	if k == 0 {
		return z.cdf[0]
	}
	return z.cdf[k] - z.cdf[k-1]
}
