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

// sampleEvery is how often the rig records the series: twice a window,
// between 100 ms and 1 s. It polls the bricks more often (pollEvery), so a
// restart that takes a tenth of a second still shows as a dip.
func sampleEvery(window time.Duration) time.Duration {
	return max(100*time.Millisecond, min(window/2, time.Second))
}

const (
	pollEvery   = 100 * time.Millisecond
	pollTimeout = time.Second // a brick slower than this to answer (stopped, hung) is not live
)

// Sample implements testbed.Sampler: it polls every brick's /stats (its
// own address, not a faultnet proxy) every pollEvery and records, every
// sampleEvery until ctx ends, SeriesBricksLive (the fewest bricks that
// answered a poll since the last record) and SeriesDroppedMax (each
// brick's drops since the last record, from two answers of the same
// incarnation, as a rate; the highest).
func (r *rig) Sample(ctx context.Context, _ testbed.Cluster, series func(name string, v float64)) {
	every := sampleEvery(r.window)
	client := &http.Client{Timeout: pollTimeout}
	recorded := map[int]brick.Stats{} // each brick's answer at the last record
	latest := map[int]brick.Stats{}   // its latest answer since the last record
	minLive := len(r.bricks)
	last := time.Now()
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		stats := r.pollStats(ctx, client)
		if ctx.Err() != nil {
			return
		}
		minLive = min(minLive, len(stats))
		for n, s := range stats {
			latest[n] = s
		}
		if time.Since(last) >= every {
			dropped := 0.0
			for n, s := range latest {
				if p, ok := recorded[n]; ok && p.Incarnation == s.Incarnation && s.UnixMillis > p.UnixMillis && s.NumDropped >= p.NumDropped {
					dropped = max(dropped, float64(s.NumDropped-p.NumDropped)*1000/float64(s.UnixMillis-p.UnixMillis))
				}
			}
			series(SeriesBricksLive, float64(minLive))
			series(SeriesDroppedMax, dropped)
			recorded, latest, minLive, last = latest, map[int]brick.Stats{}, len(r.bricks), time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
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
