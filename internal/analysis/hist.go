package analysis

import (
	"math/bits"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// hdrCounts is the counts array of an HDR histogram whose lowest
// discernible value is 1 and which keeps three significant digits: the
// geometry of the latency histograms (nanoseconds, histLowestNS and
// histDigits) and of record's window histograms (microseconds). Recording
// a value is an index computation and an increment, several times cheaper
// than hdrhistogram's RecordValue with its checks, and two hdrCounts add
// up exactly; histogram turns the counts into the library's Histogram for
// the queries (quantiles, Distribution), which see exactly what recording
// each value into it would have given (TestHDRCountsMatchLibrary).
//
// It is not safe for concurrent use.
type hdrCounts struct {
	counts []int64
	// lo and hi bound the indexes recorded since the last reset (lo > hi:
	// none), so that a sparse histogram is read and cleared in a few
	// cache lines instead of all of counts.
	lo, hi  int
	highest int64
}

// The geometry for lowest value 1 and three significant digits: 2048
// sub-buckets (the smallest power of two above 2·10³), half of them per
// bucket after the first.
const (
	hdrSubHalfMag = 10
	hdrSubMask    = 1<<(hdrSubHalfMag+1) - 1
)

// newHDRCounts returns empty counts for values 1..highest.
func newHDRCounts(highest int64) *hdrCounts {
	return &hdrCounts{counts: make([]int64, hdrIndex(highest)+1), lo: 1 << 62, hi: -1, highest: highest}
}

// hdrIndex is the counts index of v ≥ 1, hdrhistogram's countsIndexFor.
func hdrIndex(v int64) int {
	bucket := 64 - bits.LeadingZeros64(uint64(v)|hdrSubMask) - (hdrSubHalfMag + 1)
	sub := int(v >> uint(bucket))
	return (bucket+1)<<hdrSubHalfMag + sub - 1<<hdrSubHalfMag
}

// hdrValue is the lowest value counted at index i: hdrIndex(hdrValue(i)) == i.
func hdrValue(i int) int64 {
	if i < 2<<hdrSubHalfMag {
		return int64(i)
	}
	bucket := i>>hdrSubHalfMag - 1
	sub := i&(1<<hdrSubHalfMag-1) + 1<<hdrSubHalfMag
	return int64(sub) << uint(bucket)
}

// record counts v, which the caller has clamped into 1..highest.
func (h *hdrCounts) record(v int64) {
	i := hdrIndex(v)
	h.counts[i]++
	if i < h.lo {
		h.lo = i
	}
	if i > h.hi {
		h.hi = i
	}
}

// recordN counts v n times (n > 0).
func (h *hdrCounts) recordN(v int64, n int64) {
	i := hdrIndex(v)
	h.counts[i] += n
	if i < h.lo {
		h.lo = i
	}
	if i > h.hi {
		h.hi = i
	}
}

// total is the sum of the counts at indexes [from, to).
func (h *hdrCounts) total(from, to int) int64 {
	var n int64
	for i := max(from, h.lo); i < min(to, h.hi+1); i++ {
		n += h.counts[i]
	}
	return n
}

// empty reports whether nothing was recorded since the last reset.
func (h *hdrCounts) empty() bool { return h.hi < h.lo }

// merge adds o's counts to h's; both have the same highest value.
func (h *hdrCounts) merge(o *hdrCounts) {
	for i := o.lo; i <= o.hi; i++ {
		h.counts[i] += o.counts[i]
	}
	if !o.empty() {
		h.lo, h.hi = min(h.lo, o.lo), max(h.hi, o.hi)
	}
}

// reset empties h.
func (h *hdrCounts) reset() {
	if !h.empty() {
		clear(h.counts[h.lo : h.hi+1])
	}
	h.lo, h.hi = 1<<62, -1
}

// histogram returns a new library Histogram holding h's counts.
func (h *hdrCounts) histogram() *hdrhistogram.Histogram {
	return hdrhistogram.Import(&hdrhistogram.Snapshot{LowestTrackableValue: 1, HighestTrackableValue: h.highest, SignificantFigures: histDigits, Counts: h.counts})
}

// highestEquivalent is the highest value counted at index i.
func highestEquivalent(i int) int64 {
	bucket := max(i>>hdrSubHalfMag-1, 0)
	return hdrValue(i) + 1<<uint(bucket) - 1
}

// max is hdrhistogram's Max: the highest value equivalent to the largest
// recorded; 0 when empty.
func (h *hdrCounts) max() int64 {
	if h.empty() {
		return 0
	}
	return highestEquivalent(h.hi)
}

// percentiles sets dst[k] to hdrhistogram's ValueAtPercentile(ps[k]) (the
// highest value equivalent to the one of rank ⌊p·n/100 + ½⌋, clamped to
// 1..n) for ascending percentiles above 0, in one scan of the recorded
// indexes; zeros when empty.
func (h *hdrCounts) percentiles(ps []float64, dst []int64) {
	clear(dst)
	var total int64
	for i := h.lo; i <= h.hi; i++ {
		total += h.counts[i]
	}
	if total == 0 || len(ps) == 0 {
		return
	}
	k := 0
	next := percentileRank(ps[0], total)
	var cum int64
	for i := h.lo; i <= h.hi; i++ {
		cum += h.counts[i]
		for cum >= next {
			dst[k] = highestEquivalent(i)
			if k++; k == len(ps) {
				return
			}
			next = percentileRank(ps[k], total)
		}
	}
}

// percentileRank is hdrhistogram's rank of percentile p among total values.
func percentileRank(p float64, total int64) int64 {
	rank := min(p, 100)/100*float64(total) + 0.5
	if !(rank >= 1) {
		return 1
	}
	if rank >= float64(total) {
		return total
	}
	return int64(rank)
}
