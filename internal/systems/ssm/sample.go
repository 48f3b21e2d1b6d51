package ssm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/systems/ssm/brick"
	"github.com/faultbench/faultbench/internal/testbed"
)

// Metric series an ssm run adds to windows.csv (testbed.Sampler), drawn in
// the strip under the availability graph. Two, on one scale of a few tens:
const (
	// SeriesBricksLive is the number of bricks answering GET /stats: a
	// crash, a restart and a brick taken offline show as dips (§5.1, §5.5–5.6).
	SeriesBricksLive = "bricks_live"
	// SeriesDroppedMax is the largest NumDropped rate among the bricks
	// (requests per second a brick discarded because their stub had given
	// up), so a slow or badly connected brick — the one Pinpoint should
	// catch — shows without naming it in advance (§5.7–5.8); under
	// overload every brick drops (§5.2–5.3).
	SeriesDroppedMax = "brick_dropped_max_per_s"
)

var _ testbed.Sampler = (*rig)(nil)

// pollEvery is how often the rig polls the bricks and records the
// series: every 100 ms, so a restart that takes a tenth of a second still
// shows as a dip, and twice a window when windows are shorter than 200 ms
// (a time-scaled run), down to 20 ms.
func pollEvery(window time.Duration) time.Duration {
	if window <= 0 {
		window = time.Second
	}
	return min(100*time.Millisecond, max(window/2, 20*time.Millisecond))
}

// pollTimeout bounds a poll: a brick slower than this to answer (stopped,
// hung) is not live.
const pollTimeout = time.Second

// Sample implements testbed.Sampler: it polls every brick's /stats (its
// own address, not a faultnet proxy) every pollEvery until ctx ends, and
// after each poll records both series over the window so far (seriesWindow):
// a window holds the last value recorded in it, so that value covers the
// whole window, not only its last stretch.
func (r *rig) Sample(ctx context.Context, _ testbed.Cluster, series func(name string, v float64)) {
	client := &http.Client{Timeout: pollTimeout}
	w := newSeriesWindow(r.window, len(r.bricks))
	t := time.NewTicker(pollEvery(r.window))
	defer t.Stop()
	for {
		stats := r.pollStats(ctx, client)
		if ctx.Err() != nil {
			return
		}
		w.add(r.clockNow(), stats)
		live, dropped := w.values()
		series(SeriesBricksLive, live)
		series(SeriesDroppedMax, dropped)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// seriesWindow turns polls of the bricks' /stats into the two series over
// the analysis window the polls fall in, from its start to the latest poll.
// Each brick's drops are counted between its consecutive answers: within
// one incarnation, the growth of NumDropped; across a restart, the new
// incarnation's count (the drops between the last answer before the
// restart and the restart itself are unknown, and left out). The drop rate
// is a brick's drops over the time its counted answers span on its own
// clock; the pair that straddles a window's start counts in the new
// window.
type seriesWindow struct {
	length  time.Duration // the analysis window; 0: one window for the whole run
	total   int           // bricks polled
	index   int64         // the window the figures cover
	minLive int           // the fewest bricks that answered a poll in it
	prev    map[int]brick.Stats
	drops   map[int]uint64 // each brick's drops in the window so far
	spanMs  map[int]int64  // the time those drops were counted over
}

func newSeriesWindow(length time.Duration, total int) *seriesWindow {
	return &seriesWindow{length: length, total: total, index: -1, prev: map[int]brick.Stats{}}
}

// add takes the answers of a poll made at run time now.
func (w *seriesWindow) add(now time.Duration, stats map[int]brick.Stats) {
	index := int64(0)
	if w.length > 0 {
		index = int64(now / w.length)
	}
	if index != w.index {
		w.index, w.minLive = index, w.total
		w.drops, w.spanMs = map[int]uint64{}, map[int]int64{}
	}
	w.minLive = min(w.minLive, len(stats))
	for n, s := range stats {
		p, ok := w.prev[n]
		w.prev[n] = s
		if !ok || s.UnixMillis <= p.UnixMillis {
			continue
		}
		d := s.NumDropped // a restart: its drops since it began
		if s.Incarnation == p.Incarnation {
			if s.NumDropped < p.NumDropped {
				continue // not a counter this brick's answers agree on
			}
			d -= p.NumDropped
		}
		w.drops[n] += d
		w.spanMs[n] += s.UnixMillis - p.UnixMillis
	}
}

// values returns SeriesBricksLive and SeriesDroppedMax for the window so far.
func (w *seriesWindow) values() (live, dropped float64) {
	for n, d := range w.drops {
		if span := w.spanMs[n]; span > 0 {
			dropped = max(dropped, float64(d)*1000/float64(span))
		}
	}
	return float64(w.minLive), dropped
}

// pollStats fetches every brick's statistics concurrently; bricks that do
// not answer are absent.
func (r *rig) pollStats(ctx context.Context, client *http.Client) map[int]brick.Stats {
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[int]brick.Stats{}
	for _, n := range r.bricks {
		wg.Go(func() {
			s, err := getStats(ctx, client, r.addrs[n])
			if err != nil {
				return
			}
			mu.Lock()
			out[n] = s
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

func getStats(ctx context.Context, client *http.Client, addr string) (brick.Stats, error) {
	var s brick.Stats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/stats", nil)
	if err != nil {
		return s, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("GET /stats: %s", resp.Status)
	}
	return s, json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<16)).Decode(&s)
}
