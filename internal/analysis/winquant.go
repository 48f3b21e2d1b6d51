package analysis

import (
	"math"

	"github.com/faultbench/faultbench/internal/record"
)

// windowQuantiles recomputes the window percentiles a record without a
// settled windows.csv lacks: each window's latency p50, p90, p99 and
// maximum and its p99 send lag, from microsecond HDR histograms. It gives
// exactly what record.WindowAggregator gives (TestWindowQuantilesMatchRecord),
// including which late attempts no longer enter a window's percentiles
// (a window is final once an attempt scheduled horizon seconds after its
// end was seen), at a fraction of the cost: it records into hdrCounts and
// keeps no per-window counts, which analysis takes from the requests.
//
// Requests must be added in record order; it is not safe for concurrent use.
type windowQuantiles struct {
	w, horizon float64
	maxIdx     int
	state      []uint8 // per window: unseen, live or final
	live       map[int]*windowHists
	free       []*windowHists
	out        []record.Window // percentiles of the final windows
	last       int             // the window of the last request, live then
	lastHists  *windowHists
}

const (
	windowUnseen = iota
	windowLive
	windowFinal
)

type windowHists struct{ lat, lag *hdrCounts }

// histHighestUS is the top of record's microsecond window histograms.
const histHighestUS = 3600 * 1000 * 1000

func newWindowQuantiles(w, horizon float64) *windowQuantiles {
	return &windowQuantiles{w: w, horizon: horizon, maxIdx: -1, live: map[int]*windowHists{}}
}

// toUS is record.RecordLatency's rounding and clamping.
func toUS(seconds float64) int64 {
	us := int64(math.Round(seconds * 1e6))
	return min(max(us, 1), histHighestUS)
}

// add counts one request: its latency when measured, its send lag when
// sent (not refused).
func (q *windowQuantiles) add(start, lat, lag float64, refused, cutShort bool) {
	i := 0
	if start >= 0 {
		i = int(start / q.w)
	}
	q.addAt(i, start, lat, lag, refused, cutShort)
}

// addAt is add of a request of window i, int(start/w), known to the caller.
func (q *windowQuantiles) addAt(i int, start, lat, lag float64, refused, cutShort bool) {
	for len(q.state) <= i {
		q.state = append(q.state, windowUnseen)
	}
	var h *windowHists
	switch q.state[i] {
	case windowFinal:
		return // too late for the window's percentiles
	case windowLive:
		if h = q.lastHists; i != q.last {
			h = q.live[i]
		}
	case windowUnseen:
		if n := len(q.free); n > 0 {
			h, q.free = q.free[n-1], q.free[:n-1]
		} else {
			h = &windowHists{lat: newHDRCounts(histHighestUS), lag: newHDRCounts(histHighestUS)}
		}
		q.live[i], q.state[i] = h, windowLive
	}
	q.last, q.lastHists = i, h // the next request is most likely in the same window
	if !refused {
		if !cutShort {
			h.lat.record(toUS(lat))
		}
		h.lag.record(toUS(lag))
	}
	if i > q.maxIdx {
		q.maxIdx = i
		t := start - q.horizon
		for j, h := range q.live {
			if float64(j+1)*q.w <= t {
				q.finalise(j, h)
			}
		}
	}
}

func (q *windowQuantiles) finalise(i int, h *windowHists) {
	for len(q.out) <= i {
		q.out = append(q.out, record.Window{StartS: float64(len(q.out)) * q.w, LatencyP50: math.NaN(), LatencyP90: math.NaN(),
			LatencyP99: math.NaN(), LatencyMax: math.NaN(), SendLagP99: math.NaN()})
	}
	win := &q.out[i]
	var p [3]int64
	if !h.lat.empty() {
		h.lat.percentiles([]float64{50, 90, 99}, p[:])
		win.LatencyP50, win.LatencyP90, win.LatencyP99 = float64(p[0])/1e6, float64(p[1])/1e6, float64(p[2])/1e6
		win.LatencyMax = float64(h.lat.max()) / 1e6
	}
	if !h.lag.empty() {
		h.lag.percentiles([]float64{99}, p[:1])
		win.SendLagP99 = lagMicros(p[0])
	}
	h.lat.reset()
	h.lag.reset()
	q.free = append(q.free, h)
	delete(q.live, i)
	q.state[i] = windowFinal
}

// lagMicros is record's reading of a send-lag histogram value: below its
// 1 µs floor, a lag is 0.
func lagMicros(us int64) float64 {
	if us <= 1 {
		return 0
	}
	return float64(us) / 1e6
}

// close finalises every window and returns the windows from 0 to the one
// holding endS: only StartS and the percentiles are set (NaN where the
// window had no attempt to measure them).
func (q *windowQuantiles) close(endS float64) []record.Window {
	for i, h := range q.live {
		q.finalise(i, h)
	}
	last := q.maxIdx
	if endS > 0 {
		last = max(last, int(math.Ceil(endS/q.w))-1)
	}
	for len(q.out) <= last {
		q.out = append(q.out, record.Window{StartS: float64(len(q.out)) * q.w, LatencyP50: math.NaN(), LatencyP90: math.NaN(),
			LatencyP99: math.NaN(), LatencyMax: math.NaN(), SendLagP99: math.NaN()})
	}
	return q.out[:last+1]
}
