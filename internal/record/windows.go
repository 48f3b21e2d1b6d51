package record

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Window is one row of windows.csv: what happened to the attempts scheduled
// in [StartS, StartS+length).
//
// Offered counts every arrival of the window; Outcomes and the latency
// figures only the measured ones (Request.Measured), so Offered = the sum of
// Outcomes + GenRefused + CutShort.
type Window struct {
	StartS       float64
	Offered      int64
	Outcomes     [NumOutcomes]int64
	GenRefused   int64   // arrivals the generator refused (max_in_flight, no user, no connection)
	CutShort     int64   // attempts still unfinished when the run was cut
	SendLagP99   float64 // seconds; NaN when no attempt of the window was sent
	SendLagMax   float64 // seconds; NaN when no attempt of the window was sent
	Valid        bool    // a valid measurement of the service; see Judge
	ThroughputOK float64 // ok per second
	LatencyMean  float64 // seconds; NaN when the window had no attempts
	LatencyP50   float64
	LatencyP90   float64
	LatencyP99   float64
	LatencyMax   float64
	// Series holds system metric values (e.g. "redundancy"), the last value
	// reported during the window; NaN where none was.
	Series map[string]float64
}

// Histogram bounds for latencies, in microseconds: 1 µs to one hour with
// three significant digits, so percentiles are within 0.1% of exact.
const (
	histLowestUS  = 1
	histHighestUS = 3600 * 1000 * 1000
	histDigits    = 3
)

// NewLatencyHistogram returns an empty HDR histogram with the recorder's bounds.
func NewLatencyHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowestUS, histHighestUS, histDigits)
}

// RecordLatency adds a latency in seconds to h, clamping it into h's range.
func RecordLatency(h *hdrhistogram.Histogram, seconds float64) {
	us := int64(math.Round(seconds * 1e6))
	if us < histLowestUS {
		us = histLowestUS
	}
	if us > histHighestUS {
		us = histHighestUS
	}
	_ = h.RecordValue(us) // cannot fail: us is within range
}

// WindowAggregator accumulates requests into fixed windows by scheduled start
// time. Windows are finalised once no request can still arrive for them
// (horizon seconds after their end), so memory stays bounded over long runs.
// It is not safe for concurrent use.
type WindowAggregator struct {
	length  float64
	horizon float64
	live    map[int]*windowAcc
	done    map[int]Window
	free    []*windowAcc
	maxIdx  int
	series  map[string]map[int]float64
	// settled is the time before which every window is final: no attempt
	// scheduled before it can still be recorded.
	settled float64
}

type windowAcc struct {
	outcomes [NumOutcomes]int64
	refused  int64
	cutShort int64
	sumLat   float64
	hist     *hdrhistogram.Histogram
	lagHist  *hdrhistogram.Histogram // send lag of the attempts sent
}

// SendLagBound is the send lag, in seconds, beyond which a window of
// windowS seconds does not measure the service: 10% of the window, at most
// 100 ms. A generator that late no longer offers the scheduled load at the
// scheduled moments (the open loop has bent toward a closed one).
func SendLagBound(windowS float64) float64 { return math.Min(0.1, 0.1*windowS) }

// Judge sets w.Valid for a window of windowS seconds: a window is a valid
// measurement of the service unless the generator refused an attempt in
// it, cut one short, or sent its attempts late — its p99 send lag above
// SendLagBound. (The p99, not the maximum: one late attempt, a garbage
// collection say, is charged to latency like any other and does not bend
// the load; a late 1% does.)
func (w *Window) Judge(windowS float64) {
	w.Valid = w.GenRefused == 0 && w.CutShort == 0 && !(w.SendLagP99 > SendLagBound(windowS))
}

// count adds r to acc: measured attempts to the outcomes and latencies,
// the generator's refusals and cut-short attempts apart.
func (a *WindowAggregator) count(acc *windowAcc, r *Request) {
	switch {
	case r.Refused != NotRefused:
		acc.refused++
		return
	case r.CutShort:
		acc.cutShort++
	default:
		acc.outcomes[r.Outcome]++
		acc.sumLat += r.LatencyS
		RecordLatency(acc.hist, r.LatencyS)
	}
	RecordLatency(acc.lagHist, r.SendLagS)
}

// NewWindowAggregator returns an aggregator of windows of length seconds;
// horizon is the longest a request can take to be recorded after its
// scheduled start (connect + response timeout, plus slack).
func NewWindowAggregator(length, horizon float64) *WindowAggregator {
	return &WindowAggregator{length: length, horizon: horizon, live: map[int]*windowAcc{}, done: map[int]Window{}, maxIdx: -1, series: map[string]map[int]float64{}}
}

func (a *WindowAggregator) index(t float64) int {
	if t < 0 {
		return 0
	}
	return int(t / a.length)
}

// Add counts one request into its window.
func (a *WindowAggregator) Add(r Request) {
	i := a.index(r.StartS)
	acc := a.live[i]
	if acc == nil {
		if w, ok := a.done[i]; ok {
			// A straggler for a finalised window: count it, even though its
			// latency can no longer enter that window's percentiles.
			w.Offered++
			switch {
			case r.Refused != NotRefused:
				w.GenRefused++
			case r.CutShort:
				w.CutShort++
			default:
				w.Outcomes[r.Outcome]++
			}
			w.ThroughputOK = float64(w.Outcomes[OK]) / a.length
			w.Judge(a.length)
			a.done[i] = w
			return
		}
		acc = a.acquire()
		a.live[i] = acc
	}
	a.count(acc, &r)
	if i > a.maxIdx {
		a.maxIdx = i
		a.finaliseBefore(r.StartS - a.horizon)
	}
}

// AddSeries records a system metric value at time t (seconds since start).
func (a *WindowAggregator) AddSeries(name string, t, v float64) {
	m := a.series[name]
	if m == nil {
		m = map[int]float64{}
		a.series[name] = m
	}
	m[a.index(t)] = v
}

func (a *WindowAggregator) acquire() *windowAcc {
	if n := len(a.free); n > 0 {
		acc := a.free[n-1]
		a.free = a.free[:n-1]
		return acc
	}
	return &windowAcc{hist: NewLatencyHistogram(), lagHist: NewLatencyHistogram()}
}

func (a *WindowAggregator) finaliseBefore(t float64) {
	a.settled = max(a.settled, t)
	for i, acc := range a.live {
		if float64(i+1)*a.length <= t {
			a.finalise(i, acc)
		}
	}
}

func (a *WindowAggregator) finalise(i int, acc *windowAcc) {
	w := Window{StartS: float64(i) * a.length, GenRefused: acc.refused, CutShort: acc.cutShort}
	w.Outcomes = acc.outcomes
	var measured int64
	for _, n := range acc.outcomes {
		measured += n
	}
	w.Offered = measured + acc.refused + acc.cutShort
	w.ThroughputOK = float64(acc.outcomes[OK]) / a.length
	w.LatencyMean, w.LatencyP50, w.LatencyP90, w.LatencyP99, w.LatencyMax = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
	w.SendLagP99, w.SendLagMax = math.NaN(), math.NaN()
	if measured > 0 {
		w.LatencyMean = acc.sumLat / float64(measured)
		q := acc.hist.ValueAtPercentiles([]float64{50, 90, 99})
		w.LatencyP50 = float64(q[50]) / 1e6
		w.LatencyP90 = float64(q[90]) / 1e6
		w.LatencyP99 = float64(q[99]) / 1e6
		w.LatencyMax = float64(acc.hist.Max()) / 1e6
	}
	if acc.lagHist.TotalCount() > 0 {
		w.SendLagP99 = lagSeconds(acc.lagHist.ValueAtQuantile(99))
		w.SendLagMax = lagSeconds(acc.lagHist.Max())
	}
	w.Judge(a.length)
	a.done[i] = w
	delete(a.live, i)
	acc.outcomes = [NumOutcomes]int64{}
	acc.refused, acc.cutShort = 0, 0
	acc.sumLat = 0
	acc.hist.Reset()
	acc.lagHist.Reset()
	a.free = append(a.free, acc)
}

// Close finalises every window and returns all windows from 0 up to the
// window holding endS (so windows without attempts appear with zero counts).
func (a *WindowAggregator) Close(endS float64) []Window {
	for i, acc := range a.live {
		a.finalise(i, acc)
	}
	last := a.maxIdx
	if endS > 0 {
		if n := int(math.Ceil(endS/a.length)) - 1; n > last {
			last = n
		}
	}
	return a.rows(last)
}

// Settled returns the windows from 0 that are final already: those ending
// at least horizon seconds before the latest scheduled start seen. It
// finalises nothing and may be called at any time; Close returns the same
// windows (plus stragglers' counts) and the rest.
func (a *WindowAggregator) Settled() []Window {
	last := int(math.Floor(a.settled/a.length+1e-9)) - 1
	for i := range a.live {
		if i <= last {
			last = i - 1 // not finalised yet: stop before it
		}
	}
	return a.rows(last)
}

// rows returns windows 0..last: finalised ones as they are, missing ones
// with zero counts, each with its system series values.
func (a *WindowAggregator) rows(last int) []Window {
	names := a.SeriesNames()
	out := make([]Window, 0, max(last+1, 0))
	for i := 0; i <= last; i++ {
		w, ok := a.done[i]
		if !ok {
			w = Window{StartS: float64(i) * a.length, LatencyMean: math.NaN(), LatencyP50: math.NaN(), LatencyP90: math.NaN(), LatencyP99: math.NaN(), LatencyMax: math.NaN(),
				SendLagP99: math.NaN(), SendLagMax: math.NaN(), Valid: true}
		}
		if len(names) > 0 {
			w.Series = map[string]float64{}
			for _, n := range names {
				v, ok := a.series[n][i]
				if !ok {
					v = math.NaN()
				}
				w.Series[n] = v
			}
		}
		out = append(out, w)
	}
	return out
}

// SeriesNames lists the system metric series seen, sorted.
func (a *WindowAggregator) SeriesNames() []string {
	names := make([]string, 0, len(a.series))
	for n := range a.series {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// lagSeconds turns a send-lag histogram value back into seconds. The
// histogram clamps below 1 µs; a lag that small is reported as 0.
func lagSeconds(us int64) float64 {
	if us <= histLowestUS {
		return 0
	}
	return float64(us) / 1e6
}

func fmtFloat(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// WriteWindows writes windows.csv: the fixed columns, then one column per
// system metric series in series order. Undefined values are empty cells.
// The file is replaced at once (written beside it, then renamed), so a
// reader, or a killed writer, never leaves half a file.
func WriteWindows(path string, windows []Window, series []string) error {
	tmp := path + ".tmp"
	if err := writeWindows(tmp, windows, series); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

func writeWindows(path string, windows []Window, series []string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	cw := csv.NewWriter(bw)
	_ = cw.Write(append(append(append([]string{}, WindowColumns...), WindowGeneratorColumns...), series...))
	for _, w := range windows {
		row := []string{fmtFloat(w.StartS), strconv.FormatInt(w.Offered, 10)}
		for _, n := range w.Outcomes {
			row = append(row, strconv.FormatInt(n, 10))
		}
		row = append(row, fmtFloat(w.ThroughputOK), fmtFloat(w.LatencyMean), fmtFloat(w.LatencyP50), fmtFloat(w.LatencyP90), fmtFloat(w.LatencyP99), fmtFloat(w.LatencyMax))
		valid := "0"
		if w.Valid {
			valid = "1"
		}
		row = append(row, strconv.FormatInt(w.GenRefused, 10), strconv.FormatInt(w.CutShort, 10), fmtFloat(w.SendLagP99), fmtFloat(w.SendLagMax), valid)
		for _, s := range series {
			v, ok := w.Series[s]
			if !ok {
				v = math.NaN()
			}
			row = append(row, fmtFloat(v))
		}
		_ = cw.Write(row)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadWindows reads windows.csv. It returns the windows and the names of the
// system metric series that follow the fixed columns.
func ReadWindows(path string) ([]Window, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return DecodeWindows(f, path)
}

// DecodeWindows reads windows.csv content from r; name is used in errors.
func DecodeWindows(r io.Reader, name string) ([]Window, []string, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: no header row: %v", name, err)
	}
	if len(header) < len(WindowColumns) {
		return nil, nil, fmt.Errorf("%s:1: header has %d columns, want at least %v", name, len(header), WindowColumns)
	}
	for i, c := range WindowColumns {
		if header[i] != c {
			return nil, nil, fmt.Errorf("%s:1: column %d is %q, want %q", name, i+1, header[i], c)
		}
	}
	// The generator's columns, where present, are known by name; every
	// other trailing column is a system series.
	genCol := map[string]int{}
	var series []string
	var seriesCol []int
	for j := len(WindowColumns); j < len(header); j++ {
		known := false
		for _, c := range WindowGeneratorColumns {
			if header[j] == c {
				genCol[c], known = j, true
			}
		}
		if !known {
			series = append(series, header[j])
			seriesCol = append(seriesCol, j)
		}
	}
	var out []Window
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, series, nil
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(rec) != len(header) {
			return nil, nil, fmt.Errorf("%s:%d: %d fields, want %d", name, line, len(rec), len(header))
		}
		num := func(i int) (float64, error) {
			if rec[i] == "" {
				return math.NaN(), nil
			}
			v, err := strconv.ParseFloat(rec[i], 64)
			if err != nil {
				return 0, fmt.Errorf("%s:%d: column %q: %q is not a number", name, line, header[i], rec[i])
			}
			return v, nil
		}
		vals := make([]float64, len(rec))
		for i := range rec {
			if vals[i], err = num(i); err != nil {
				return nil, nil, err
			}
		}
		w := Window{StartS: vals[0], Offered: int64(vals[1]), ThroughputOK: vals[8], LatencyMean: vals[9], LatencyP50: vals[10], LatencyP90: vals[11], LatencyP99: vals[12], LatencyMax: vals[13]}
		for k := 0; k < NumOutcomes; k++ {
			w.Outcomes[k] = int64(vals[2+k])
		}
		gen := func(c string, missing float64) float64 {
			if j, ok := genCol[c]; ok {
				return vals[j]
			}
			return missing
		}
		w.GenRefused, w.CutShort = int64(gen("gen_refused", 0)), int64(gen("cut_short", 0))
		w.SendLagP99, w.SendLagMax = gen("send_lag_p99_s", math.NaN()), gen("send_lag_max_s", math.NaN())
		// Windows written before the generator accounted for itself are
		// taken as valid: nothing says otherwise.
		w.Valid = gen("valid", 1) != 0
		if len(series) > 0 {
			w.Series = map[string]float64{}
			for k, s := range series {
				w.Series[s] = vals[seriesCol[k]]
			}
		}
		out = append(out, w)
	}
}
