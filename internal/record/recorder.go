package record

import (
	"errors"
	"math"
	"path/filepath"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Recorder records every request of a run: it appends each to the request
// record and aggregates it into its window. It is safe for concurrent use
// by many client goroutines; Record does no I/O and no encoding: it copies
// the row into the open segment's batch, which a goroutine of the
// segment's own encodes when full (ParquetWriter).
//
// The record survives a killed controller (SIGKILL, power aside): a
// background goroutine seals the open Parquet segment every
// Options.SegmentEvery (see SegmentDir) and rewrites windows.csv with the
// windows that are final, so what a kill loses is at most the last
// SegmentEvery of requests. Close merges the segments into
// requests.parquet.
type Recorder struct {
	mu      sync.Mutex
	seg     *segmentWriter // nil in single-file mode
	single  *ParquetWriter // Options.SingleFile only
	windows *WindowAggregator
	err     error
	closed  bool
	opt     Options
	dir     string

	// written counts the settled windows last written to windows.csv.
	written int
	// follow and delivered: the follower (Follow) and how many windows it
	// has been given (guarded by sealMu).
	follow    Follower
	delivered int
	lent      Request // the request lent to follow.Request (under mu)

	sealMu sync.Mutex // serialises sealing, so segments are sealed in order
	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}

	// live figures for progress display
	total    int64
	outcomes [NumOutcomes]int64
	recent   *hdrhistogram.Histogram
}

// Follower follows a recording as it goes: live views, the Prometheus
// endpoint, the steady-state guard. Either function may be nil.
type Follower struct {
	// Request is called with every attempt Record stores, on the caller's
	// goroutine and under the recorder's lock: it must be quick (a few
	// atomic adds), must not block and must not call the Recorder. The
	// Request is only lent for the call.
	Request func(*Request)
	// Windows is called with each window once, in order from window 0, as
	// it becomes final: from the goroutine that seals segments (every
	// SegmentEvery), the rest from Close. series names the system series
	// the windows carry. The callee owns the slice; it must not call the
	// Recorder, and should return soon (the next seal waits for it).
	Windows func(ws []Window, series []string)
}

// Follow sets the recording's follower. Call it before the first Record.
func (r *Recorder) Follow(f Follower) {
	r.mu.Lock()
	r.follow = f
	r.mu.Unlock()
}

// deliver hands the windows after those already delivered to the
// follower. The caller holds sealMu.
func (r *Recorder) deliver(windows []Window, series []string) {
	if r.follow.Windows == nil || len(windows) <= r.delivered {
		return
	}
	fresh := windows[r.delivered:]
	r.delivered = len(windows)
	r.follow.Windows(fresh, series)
}

// Options configure a Recorder.
type Options struct {
	// WindowS is the aggregation window and HorizonS the longest an attempt
	// can take to be recorded after its scheduled start, both in seconds.
	WindowS, HorizonS float64
	// SegmentEvery is how often the open segment is sealed and windows.csv
	// rewritten (default DefaultSegmentEvery); it bounds what a kill loses.
	SegmentEvery time.Duration
	// SegmentRows seals a segment early once it holds this many rows
	// (default DefaultSegmentRows), bounding the memory a segment holds.
	SegmentRows int64
	// Meta is written into the footer key/value metadata of every segment
	// and of the merged requests.parquet (provenance: versions, run id...).
	// The Recorder does not modify it.
	Meta map[string]string
	// SingleFile writes one requests.parquet, readable only after Close,
	// and windows.csv not at all: the recording before segments, kept to
	// measure what crash safety costs (bench/recording). Not for runs.
	SingleFile bool
}

// Defaults of Options.
const (
	DefaultSegmentEvery = 2 * time.Second
	DefaultSegmentRows  = 1 << 18
)

// NewRecorder records into dir with default Options; window is the
// aggregation window and horizon the longest an attempt can take, both in
// seconds.
func NewRecorder(dir string, window, horizon float64) (*Recorder, error) {
	return NewRecorderWith(dir, Options{WindowS: window, HorizonS: horizon})
}

// NewRecorderWith records into dir: segments in dir/requests/, windows in
// dir/windows.csv. It opens the first segment (segmentWriter.open) and
// starts the goroutine that seals segments; Close stops it.
func NewRecorderWith(dir string, opt Options) (*Recorder, error) {
	if opt.SegmentEvery <= 0 {
		opt.SegmentEvery = DefaultSegmentEvery
	}
	if opt.SegmentRows <= 0 {
		opt.SegmentRows = DefaultSegmentRows
	}
	r := &Recorder{windows: NewWindowAggregator(opt.WindowS, opt.HorizonS), recent: NewLatencyHistogram(), opt: opt, dir: dir}
	if opt.SingleFile {
		pq, err := CreateParquet(filepath.Join(dir, RequestsFile), opt.Meta)
		if err != nil {
			return nil, err
		}
		r.single = pq
		return r, nil
	}
	seg, err := newSegmentWriter(dir, opt.Meta)
	if err != nil {
		return nil, err
	}
	if err := seg.open(); err != nil {
		return nil, err
	}
	r.seg = seg
	r.kick = make(chan struct{}, 1)
	r.stop = make(chan struct{})
	r.done = make(chan struct{})
	go r.sealLoop()
	return r, nil
}

// Record stores one attempt. After Close it drops the attempt.
func (r *Recorder) Record(req Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if r.err == nil {
		if r.single != nil {
			r.err = r.single.Write(req)
		} else {
			r.err = r.seg.Write(req)
			if r.seg.rows() >= r.opt.SegmentRows {
				select {
				case r.kick <- struct{}{}:
				default:
				}
			}
		}
	}
	r.windows.Add(req)
	if r.follow.Request != nil {
		// Lent from a field, not &req: a pointer to the parameter would
		// move every request to the heap.
		r.lent = req
		r.follow.Request(&r.lent)
	}
	r.total++
	r.outcomes[req.Outcome]++
	RecordLatency(r.recent, req.LatencyS)
}

// sealLoop seals the open segment and rewrites windows.csv every
// SegmentEvery, or at once when a segment is full, until Close.
func (r *Recorder) sealLoop() {
	defer close(r.done)
	t := time.NewTicker(r.opt.SegmentEvery)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		case <-r.kick:
		}
		r.keepErr(r.checkpoint())
	}
}

func (r *Recorder) keepErr(err error) {
	if err == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

// checkpoint seals the open segment and, when more windows are final than
// last time, rewrites windows.csv. The file work runs outside r.mu, so
// clients recording meanwhile wait only for the swap.
func (r *Recorder) checkpoint() error {
	r.sealMu.Lock()
	defer r.sealMu.Unlock()
	r.mu.Lock()
	seg := r.seg.cut()
	var windows []Window
	var series []string
	if settled := r.windows.Settled(); len(settled) > r.written {
		windows, series = settled, r.windows.SeriesNames()
		r.written = len(settled)
	}
	r.mu.Unlock()
	var err error
	if seg != nil {
		err = seg.seal()
	}
	if windows != nil {
		err = errors.Join(err, WriteWindows(filepath.Join(r.dir, WindowsFile), windows, series))
		r.deliver(windows, series)
	}
	return err
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

// Close seals the last segment, merges the segments into requests.parquet,
// writes windows.csv with every window up to endS, and returns those
// windows with the system series names. It is safe to call twice; the
// second call returns nothing.
func (r *Recorder) Close(endS float64) ([]Window, []string, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, nil, nil
	}
	r.closed = true
	r.mu.Unlock()
	if r.single != nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		err := errors.Join(r.err, r.single.Close())
		windows, series := r.windows.Close(endS), r.windows.SeriesNames()
		r.sealMu.Lock()
		r.deliver(windows, series)
		r.sealMu.Unlock()
		return windows, series, err
	}
	close(r.stop)
	<-r.done
	r.sealMu.Lock()
	defer r.sealMu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.err
	if seg := r.seg.cut(); seg != nil {
		err = errors.Join(err, seg.seal())
	}
	err = errors.Join(err, r.seg.discard())
	windows, series := r.windows.Close(endS), r.windows.SeriesNames()
	r.deliver(windows, series)
	if err == nil {
		err = MergeSegments(r.dir, r.opt.Meta)
	}
	return windows, series, errors.Join(err, WriteWindows(filepath.Join(r.dir, WindowsFile), windows, series))
}
