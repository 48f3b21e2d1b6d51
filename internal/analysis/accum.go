package analysis

import (
	"math"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/faultbench/faultbench/internal/record"
)

// ExceedThresholds are the p_exceed thresholds of DESIGN §5, in seconds, and
// their summary.json keys: Nielsen's 0.1 s / 1 s / 10 s limits plus the
// 2 s connect and 8 s response-timeout marks of Broadwell's clients.
var ExceedThresholds = []struct {
	Key     string
	Seconds float64
}{{"0.1", 0.1}, {"1", 1}, {"2", 2}, {"8", 8}, {"10", 10}}

// Latency histogram geometry: nanoseconds from 1 ns to one hour with three
// significant digits. A bucket is at most 1/1024 of its values wide, so a
// bucket's midpoint is within 0.05% (plus 1 ns of rounding; sub-nanosecond latencies count as 1 ns) of every
// latency in it. Latencies above an hour are counted at one hour in the
// histogram; the exact maximum is kept apart.
const (
	histLowestNS  = 1
	histHighestNS = 3600 * 1e9
	histDigits    = 3
)

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowestNS, histHighestNS, histDigits)
}

func toNS(seconds float64) int64 {
	ns := int64(math.Round(seconds * 1e9))
	if ns < histLowestNS {
		ns = histLowestNS
	}
	if ns > histHighestNS {
		ns = histHighestNS
	}
	return ns
}

// moments are Welford's running count, mean and sum of squared deviations:
// numerically stable over ten million latencies, and mergeable (Chan et al.)
// so windows can be combined into any union of windows.
type moments struct {
	n    int64
	mean float64
	m2   float64
	sum  float64
}

func (m *moments) add(x float64) {
	m.n++
	d := x - m.mean
	m.mean += d / float64(m.n)
	m.m2 += d * (x - m.mean)
	m.sum += x
}

func (m *moments) merge(o moments) {
	if o.n == 0 {
		return
	}
	if m.n == 0 {
		*m = o
		return
	}
	n := m.n + o.n
	d := o.mean - m.mean
	m.mean += d * float64(o.n) / float64(n)
	m.m2 += o.m2 + d*d*float64(m.n)*float64(o.n)/float64(n)
	m.sum += o.sum
	m.n = n
}

// stddev is the sample (n−1) standard deviation; NaN below two samples.
func (m moments) stddev() float64 {
	if m.n < 2 {
		return math.NaN()
	}
	return math.Sqrt(m.m2 / float64(m.n-1))
}

// periodAcc aggregates the attempts of one period. Pass 1 calls add for
// every attempt of the period; between passes the caller sets sigmaLimit
// (mean + 3σ); pass 2 calls addOutlier for every attempt again. It holds
// one histogram whatever the number of attempts.
type periodAcc struct {
	outcomes   [record.NumOutcomes]int64
	mom        moments
	min, max   float64
	exceed     [5]int64
	hist       *hdrhistogram.Histogram
	sigmaLimit float64
	beyond     int64 // attempts with latency > sigmaLimit (pass 2)
}

func newPeriodAcc() *periodAcc {
	return &periodAcc{hist: newHist(), min: math.Inf(1), max: math.Inf(-1), sigmaLimit: math.Inf(1)}
}

func (p *periodAcc) add(r *record.Request) {
	lat := r.LatencyS
	p.outcomes[r.Outcome]++
	p.mom.add(lat)
	if lat < p.min {
		p.min = lat
	}
	if lat > p.max {
		p.max = lat
	}
	for i := range ExceedThresholds {
		if lat > ExceedThresholds[i].Seconds {
			p.exceed[i]++
		} else {
			break // thresholds ascend
		}
	}
	_ = p.hist.RecordValue(toNS(lat)) // cannot fail: toNS clamps into range
}

func (p *periodAcc) addOutlier(lat float64) {
	if lat > p.sigmaLimit {
		p.beyond++
	}
}

// setSigmaLimit fixes the 3-sigma threshold from pass 1's moments.
func (p *periodAcc) setSigmaLimit() {
	sd := p.mom.stddev()
	if math.IsNaN(sd) {
		p.sigmaLimit = math.Inf(1)
		return
	}
	p.sigmaLimit = p.mom.mean + 3*sd
}
