package analysis

import (
	"math"

	"github.com/faultbench/faultbench/internal/record"
)

// ExceedThresholds are the p_exceed thresholds of docs/metrics.md, in seconds, and
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

func toNS(seconds float64) int64 {
	return min(max(int64(math.Round(seconds*1e9)), histLowestNS), histHighestNS)
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

// periodCounts are the figures of a period that do not depend on the
// order of its attempts: any goroutine may count any part of the record
// into its own periodCounts, and merge adds them up exactly.
type periodCounts struct {
	// The generator's own figures (record.Request.Measured is false for
	// refused and cut-short attempts): kept apart from the service's.
	refused  [record.NumRefusals]int64
	cutShort int64
	lag      *hdrCounts // send lag of every attempt sent, ns
	lagMax   float64    // NaN when no attempt was sent
	// zeroLags are attempts sent with a lag of +0 counted by countZeroLag
	// and not yet in lag (flushZeroLags).
	zeroLags int64

	outcomes [record.NumOutcomes]int64
	min, max float64
	exceed   [5]int64
	lat      *hdrCounts // ns
	// beyond and below count, in pass 2, the measured attempts with a
	// latency above mean + 3σ and under mean − 3σ of the period (its
	// sigmaLimit and lowLimit), both sides as Dumitras and Narasimhan
	// (2005) count them.
	beyond, below int64
}

func newPeriodCounts() *periodCounts {
	return &periodCounts{lat: newHDRCounts(histHighestNS), lag: newHDRCounts(histHighestNS), lagMax: math.NaN(), min: math.Inf(1), max: math.Inf(-1)}
}

// count counts one attempt: a measured one into the service's figures, a
// refused or cut-short one only into the generator's. It reports whether
// the attempt was measured.
func (c *periodCounts) count(lat, lag float64, out record.Outcome, refused record.Refusal, cutShort bool) bool {
	if refused != record.NotRefused {
		c.refused[refused]++
		return false
	}
	c.lag.record(toNS(lag))
	if !(lag <= c.lagMax) {
		c.lagMax = lag
	}
	if cutShort {
		c.cutShort++
		return false
	}
	c.countMeasured(lat, out)
	return true
}

// countZeroLag is count of an attempt whose send lag is +0, the common
// case, without recording the lag: the attempts sent are counted, and
// flushZeroLags records them all at once, the same counts as count's.
func (c *periodCounts) countZeroLag(lat float64, out record.Outcome, refused record.Refusal, cutShort bool) bool {
	if refused != record.NotRefused {
		c.refused[refused]++
		return false
	}
	c.zeroLags++
	if cutShort {
		c.cutShort++
		return false
	}
	c.countMeasured(lat, out)
	return true
}

// flushZeroLags records the lags countZeroLag counted: toNS(0) each, and
// the largest lag is 0 if there was none yet, as count would have set it.
func (c *periodCounts) flushZeroLags() {
	if c.zeroLags == 0 {
		return
	}
	c.lag.recordN(toNS(0), c.zeroLags)
	if !(0 <= c.lagMax) {
		c.lagMax = 0
	}
	c.zeroLags = 0
}

// countMeasured counts a measured attempt's outcome and latency.
func (c *periodCounts) countMeasured(lat float64, out record.Outcome) {
	c.outcomes[out]++
	if lat < c.min {
		c.min = lat
	}
	if lat > c.max {
		c.max = lat
	}
	for i := range ExceedThresholds {
		if lat > ExceedThresholds[i].Seconds {
			c.exceed[i]++
		} else {
			break // thresholds ascend
		}
	}
	c.lat.record(toNS(lat))
}

// outlier counts a measured attempt's latency in pass 2 if it lies beyond
// [low, high].
func (c *periodCounts) outlier(lat, high, low float64) {
	if lat > high {
		c.beyond++
	} else if lat < low {
		c.below++
	}
}

// merge adds o to c.
func (c *periodCounts) merge(o *periodCounts) {
	for i := range c.refused {
		c.refused[i] += o.refused[i]
	}
	c.cutShort += o.cutShort
	c.lag.merge(o.lag)
	if !math.IsNaN(o.lagMax) && !(o.lagMax <= c.lagMax) {
		c.lagMax = o.lagMax
	}
	for i := range c.outcomes {
		c.outcomes[i] += o.outcomes[i]
	}
	if o.min < c.min {
		c.min = o.min
	}
	if o.max > c.max {
		c.max = o.max
	}
	for i := range c.exceed {
		c.exceed[i] += o.exceed[i]
	}
	c.lat.merge(o.lat)
	c.beyond += o.beyond
	c.below += o.below
}

// periodAcc aggregates the attempts of one period. Pass 1 calls add for
// every attempt of the period; between passes the caller sets sigmaLimit
// (mean + 3σ); pass 2 calls addOutlier for every attempt again. It holds
// two histograms whatever the number of attempts. Its periodCounts may be
// counted apart and merged; mom and checks depend on the order of the
// attempts, so they are counted in record order.
type periodAcc struct {
	periodCounts
	invalidWindows int              // windows of the period that do not measure the service
	checks         map[string]int64 // failed expectations by name (record check column)
	mom            moments
	sigmaLimit     float64
	lowLimit       float64 // mean − 3σ
}

func newPeriodAcc() *periodAcc {
	return &periodAcc{periodCounts: *newPeriodCounts(), sigmaLimit: math.Inf(1), lowLimit: math.Inf(-1)}
}

// add counts r: a measured attempt into the service's figures; a refused
// or cut-short one only into the generator's.
func (p *periodAcc) add(r *record.Request) {
	if !p.count(r.LatencyS, r.SendLagS, r.Outcome, r.Refused, r.CutShort) {
		return
	}
	if r.Check != "" {
		p.countCheck(r.Check)
	}
	p.mom.add(r.LatencyS)
}

// addOutlier counts r in pass 2 when its latency is beyond the 3σ limit;
// only measured attempts count, as in add.
func (p *periodAcc) addOutlier(r *record.Request) {
	if r.Measured() {
		p.outlier(r.LatencyS, p.sigmaLimit, p.lowLimit)
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
	p.lowLimit = p.mom.mean - 3*sd
}

// outliersFromCounts counts the 3σ outliers (beyond, below) from pass
// 1's latency histogram where it decides them, and then sets the limits
// to ±Inf, so that pass 2 counts nothing more and need not read the
// period's latencies: it reports whether it did. The histogram decides
// when no latency shares its bucket with a limit, since a latency in a
// higher bucket than a limit's is greater (toNS and hdrIndex never
// decrease), in a lower one smaller. A 3σ limit lies far out in the
// tail, where buckets are usually empty.
func (p *periodAcc) outliersFromCounts() bool {
	if p.sigmaLimit < p.lowLimit {
		return false // never from moments; pass 2 would count a latency beyond both once
	}
	beyond, okHigh := countBeyond(p.lat, p.sigmaLimit)
	below, okLow := countBelow(p.lat, p.lowLimit)
	if !okHigh || !okLow {
		return false
	}
	p.beyond, p.below = beyond, below
	p.sigmaLimit, p.lowLimit = math.Inf(1), math.Inf(-1)
	return true
}

// noLimits reports whether pass 2 has no 3σ outliers left to count.
func (p *periodAcc) noLimits() bool {
	return math.IsInf(p.sigmaLimit, 1) && math.IsInf(p.lowLimit, -1)
}

// countBeyond is the number of latencies h counts (as toNS) that are
// greater than limit, and whether h decides it.
func countBeyond(h *hdrCounts, limit float64) (int64, bool) {
	switch {
	case math.IsNaN(limit) || math.IsInf(limit, 1):
		return 0, true // no latency is greater
	case limit < 0:
		return h.total(0, len(h.counts)), true // every latency (≥ 0) is greater
	}
	i := hdrIndex(toNS(limit))
	if h.counts[i] != 0 {
		return 0, false
	}
	return h.total(i+1, len(h.counts)), true
}

// countBelow is the number of latencies h counts that are less than
// limit, and whether h decides it.
func countBelow(h *hdrCounts, limit float64) (int64, bool) {
	switch {
	case math.IsNaN(limit) || limit <= 0:
		return 0, true // no latency (≥ 0) is less
	case math.IsInf(limit, 1):
		return h.total(0, len(h.counts)), true
	}
	i := hdrIndex(toNS(limit))
	if h.counts[i] != 0 {
		return 0, false
	}
	return h.total(0, i), true
}

// lagQuantile is the q-th percentile of send-lag counts in seconds; a lag
// under the histogram's 1 ns floor is 0.
func lagQuantile(h *hdrCounts, q float64) float64 {
	var ns [1]int64
	h.percentiles([]float64{q}, ns[:])
	if ns[0] <= histLowestNS {
		return 0
	}
	return float64(ns[0]) / 1e9 // within 0.1% (three significant digits)
}

// maxCheckNames bounds the distinct check names a period counts; the
// rest are counted under otherChecks (names are per request and check,
// so only a file not written by faultbench has more).
const (
	maxCheckNames = 1000
	otherChecks   = "(other checks)"
)

func (p *periodAcc) countCheck(name string) {
	if p.checks == nil {
		p.checks = map[string]int64{}
	}
	if _, ok := p.checks[name]; !ok && len(p.checks) >= maxCheckNames {
		name = otherChecks
	}
	p.checks[name]++
}
