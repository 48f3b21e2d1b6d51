package record

import (
	"errors"
	"math"
	"path/filepath"
	"sync"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Recorder records every request of a run: it appends each to
// requests.parquet and aggregates it into its window. It is safe for
// concurrent use by many client goroutines; Record does no I/O beyond an
// occasional batched columnar write.
type Recorder struct {
	mu      sync.Mutex
	pq      *ParquetWriter
	windows *WindowAggregator
	err     error
	closed  bool

	// live figures for progress display
	total    int64
	outcomes [NumOutcomes]int64
	recent   *hdrhistogram.Histogram
}

// NewRecorder creates dir/requests.parquet. window is the aggregation
// window and horizon the longest an attempt can take, both in seconds.
func NewRecorder(dir string, window, horizon float64) (*Recorder, error) {
	pq, err := CreateParquet(filepath.Join(dir, RequestsFile))
	if err != nil {
		return nil, err
	}
	return &Recorder{pq: pq, windows: NewWindowAggregator(window, horizon), recent: NewLatencyHistogram()}, nil
}

// Record stores one attempt. After Close it drops the attempt.
func (r *Recorder) Record(req Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if r.err == nil {
		r.err = r.pq.Write(req)
	}
	r.windows.Add(req)
	r.total++
	r.outcomes[req.Outcome]++
	RecordLatency(r.recent, req.LatencyS)
}

// Series records a system metric value (e.g. "redundancy") at time t seconds.
func (r *Recorder) Series(name string, t, v float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.windows.AddSeries(name, t, v)
	}
}

// Live is a snapshot for progress display.
type Live struct {
	Total     int64
	OK        int64
	RecentP99 float64 // seconds, over attempts since the previous snapshot; NaN if none
}

// Snapshot returns the counts so far and the p99 since the last snapshot.
func (r *Recorder) Snapshot() Live {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := Live{Total: r.total, OK: r.outcomes[OK], RecentP99: math.NaN()}
	if r.recent.TotalCount() > 0 {
		l.RecentP99 = float64(r.recent.ValueAtQuantile(99)) / 1e6
		r.recent.Reset()
	}
	return l
}

// Close flushes requests.parquet and returns the windows up to endS with the
// system series names. It is safe to call twice; the second call returns
// nothing.
func (r *Recorder) Close(endS float64) ([]Window, []string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, nil, nil
	}
	r.closed = true
	err := errors.Join(r.err, r.pq.Close())
	return r.windows.Close(endS), r.windows.SeriesNames(), err
}
