package analysis

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/faultbench/faultbench/internal/benchcpu"
	"github.com/faultbench/faultbench/internal/record"
)

// TestHDRCountsMatchLibrary: hdrCounts puts every value where
// hdrhistogram's RecordValue does, for both geometries analysis uses
// (nanoseconds up to an hour, and record's microsecond windows), and the
// histograms built from them answer every query alike.
func TestHDRCountsMatchLibrary(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, highest := range []int64{histHighestNS, 3600 * 1000 * 1000} {
		lib := hdrhistogram.New(1, highest, histDigits)
		if highest != histHighestNS {
			lib = record.NewLatencyHistogram()
		}
		ours := newHDRCounts(highest)
		for round := 0; round < 20; round++ {
			lib.Reset()
			ours.reset()
			values := []int64{1, 2, 1023, 1024, 2047, 2048, 2049, 4095, 4096, highest - 1, highest}
			for i := 0; i < 2000; i++ {
				// log-uniform over the whole range, plus values near powers of two
				v := int64(math.Exp(rng.Float64() * math.Log(float64(highest))))
				if i%4 == 0 {
					v = int64(1)<<rng.IntN(log2(highest)) + int64(rng.IntN(3)) - 1
				}
				values = append(values, min(max(v, 1), highest))
			}
			if round%5 == 4 {
				values = values[:1+rng.IntN(5)] // sparse: few indexes
			}
			for _, v := range values {
				if err := lib.RecordValue(v); err != nil {
					t.Fatal(err)
				}
				ours.record(v)
			}
			want := lib.Export().Counts
			if len(ours.counts) > len(want) || !slices.Equal(want[:len(ours.counts)], ours.counts) || slices.ContainsFunc(want[len(ours.counts):], func(c int64) bool { return c != 0 }) {
				t.Fatalf("highest %d round %d: counts differ from the library's", highest, round)
			}
			var got [6]int64
			ps := []float64{1e-9, 25, 50, 90, 99, 100}
			ours.percentiles(ps, got[:])
			for k, p := range ps {
				if got[k] != lib.ValueAtQuantile(p) {
					t.Fatalf("highest %d round %d: p%v = %d, library %d", highest, round, p, got[k], lib.ValueAtQuantile(p))
				}
			}
			if ours.max() != lib.Max() {
				t.Fatalf("highest %d round %d: max %d, library %d", highest, round, ours.max(), lib.Max())
			}
			for _, h := range []*hdrhistogram.Histogram{ours.histogram()} {
				if !h.Equals(lib) && !slices.Equal(h.Export().Counts, want) {
					t.Fatalf("highest %d round %d: histogram differs", highest, round)
				}
				for _, q := range []float64{0, 50, 90, 99, 99.9, 100} {
					if h.ValueAtQuantile(q) != lib.ValueAtQuantile(q) {
						t.Fatalf("highest %d round %d: q%v = %d, library %d", highest, round, q, h.ValueAtQuantile(q), lib.ValueAtQuantile(q))
					}
				}
				if h.TotalCount() != lib.TotalCount() || h.Max() != lib.Max() || !slices.Equal(h.Distribution(), lib.Distribution()) {
					t.Fatalf("highest %d round %d: total, max or distribution differ", highest, round)
				}
			}
		}
	}
}

func log2(v int64) int {
	n := 0
	for v > 1 {
		v >>= 1
		n++
	}
	return n
}

// TestHDRCountsMerge: merged counts are the counts of all the values.
func TestHDRCountsMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	all, a, b := newHDRCounts(histHighestNS), newHDRCounts(histHighestNS), newHDRCounts(histHighestNS)
	for i := 0; i < 5000; i++ {
		v := toNS(rng.ExpFloat64() / 100)
		all.record(v)
		if i%3 == 0 {
			a.record(v)
		} else {
			b.record(v)
		}
	}
	a.merge(b)
	a.merge(newHDRCounts(histHighestNS))
	if !slices.Equal(a.counts, all.counts) || a.lo != all.lo || a.hi != all.hi {
		t.Fatal("merged counts differ")
	}
}

// BenchmarkHDRRecord compares recording one latency into hdrCounts and
// into the library's histogram.
func BenchmarkHDRRecord(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	vals := make([]int64, 1<<16)
	for i := range vals {
		vals[i] = toNS(math.Exp(rng.NormFloat64()*0.8 - 5.5))
	}
	b.Run("hdrCounts", func(b *testing.B) {
		h := newHDRCounts(histHighestNS)
		b.ReportAllocs()
		defer benchcpu.PerOp(b)()
		for i := 0; i < b.N; i++ {
			h.record(vals[i&(1<<16-1)])
		}
	})
	b.Run("library", func(b *testing.B) {
		h := hdrhistogram.New(histLowestNS, histHighestNS, histDigits)
		b.ReportAllocs()
		defer benchcpu.PerOp(b)()
		for i := 0; i < b.N; i++ {
			_ = h.RecordValue(vals[i&(1<<16-1)])
		}
	})
}

// TestOutliersFromCounts: where the latency histogram decides the 3σ
// counts, they are those of comparing every latency with the limits,
// whatever the limits (on a latency, next to one, on a bucket's edge,
// 0, negative, beyond an hour, infinite, NaN).
func TestOutliersFromCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	decided, undecided := 0, 0
	for trial := range 300 {
		var lats []float64
		p := newPeriodAcc()
		for range 1 + rng.IntN(2000) {
			lat := math.Exp(rng.NormFloat64()*2 - 5)
			switch rng.IntN(8) {
			case 0:
				lat = []float64{0, 2, 8, 1e-10, 5000, 0.0005}[rng.IntN(6)]
			case 1:
				lat = math.Round(lat*1e3) / 1e3
			}
			lats = append(lats, lat)
			p.count(lat, 0, record.OK, record.NotRefused, false)
		}
		some := lats[rng.IntN(len(lats))]
		limits := []float64{some, math.Nextafter(some, 0), math.Nextafter(some, 10), float64(hdrValue(hdrIndex(toNS(some)))) / 1e9,
			rng.Float64() * 3, 0, -1, 4000, math.Inf(1), math.Inf(-1), math.NaN()}
		high, low := limits[rng.IntN(len(limits))], limits[rng.IntN(len(limits))]
		if trial%3 == 0 {
			low = -high
		}
		p.sigmaLimit, p.lowLimit = high, low
		if !p.outliersFromCounts() {
			undecided++
			if !math.IsNaN(p.sigmaLimit) && p.sigmaLimit != high || !math.IsNaN(p.lowLimit) && p.lowLimit != low || p.beyond != 0 || p.below != 0 {
				t.Fatalf("undecided, but the limits or counts changed")
			}
			continue
		}
		decided++
		var beyond, below int64
		for _, lat := range lats {
			if lat > high {
				beyond++
			} else if lat < low {
				below++
			}
		}
		if p.beyond != beyond || p.below != below || !p.noLimits() {
			t.Fatalf("limits %v, %v: beyond %d below %d from the histogram, want %d and %d", high, low, p.beyond, p.below, beyond, below)
		}
	}
	if decided == 0 || undecided == 0 {
		t.Fatalf("%d decided, %d undecided: the test needs both", decided, undecided)
	}
}
