package raid

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/systems/raid/control"
	"github.com/faultbench/faultbench/internal/testbed"
)

// Metric series a raid run adds to windows.csv (testbed.Sampler).
const (
	// SeriesRedundancy is the number of further disk failures the volume
	// tolerates (the lowest over the nodes): Brown and Patterson (2000) Fig. 2's second axis.
	SeriesRedundancy = "redundancy"
	// SeriesRebuildProgress is how much of the redundancy is in place: 1
	// when optimal, the reconstruction's progress (0..1) while rebuilding,
	// 0 when degraded without a rebuild or failed (the lowest over the nodes).
	SeriesRebuildProgress = "rebuild_progress"
)

// sampleEvery is how often the rig polls the nodes: at least once per
// window, at most once every 100 ms, never slower than once a second.
func sampleEvery(window time.Duration) time.Duration {
	d := window / 2
	return max(100*time.Millisecond, min(d, time.Second))
}

// Sample implements testbed.Sampler: it polls every node's GET
// /control/status and records the redundancy and rebuild progress series
// until ctx ends. A node that does not answer (restarting, or hung on a
// disk) leaves its sample out; when no node answers, nothing is recorded
// for that instant.
func (r *rig) Sample(ctx context.Context, c testbed.Cluster, series func(name string, v float64)) {
	every := sampleEvery(r.window)
	clients := r.clients(c)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		redundancy, progress, ok := 0, 0.0, false
		for _, cl := range clients {
			sctx, cancel := context.WithTimeout(ctx, every)
			st, err := cl.Status(sctx)
			cancel()
			if err != nil {
				continue
			}
			p := progressOf(st)
			if !ok || st.Redundancy < redundancy {
				redundancy = st.Redundancy
			}
			if !ok || p < progress {
				progress = p
			}
			ok = true
		}
		if ok && ctx.Err() == nil {
			series(SeriesRedundancy, float64(redundancy))
			series(SeriesRebuildProgress, progress)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func progressOf(st control.Status) float64 {
	switch {
	case st.State == "optimal":
		return 1
	case st.Rebuild != nil && st.State == "reconstructing":
		return st.Rebuild.Progress
	}
	return 0
}

func (r *rig) clients(c testbed.Cluster) map[int]*control.Client {
	out := map[int]*control.Client{}
	for _, n := range c.Nodes() {
		out[n.ID] = control.NewClient(n.Addr, r.token)
	}
	return out
}

// watchEvery is how often the rig fetches each node's new events.
const watchEvery = 250 * time.Millisecond

// Watch implements testbed.Watcher: it forwards every node's array events
// (GET /control/events) into the run's events.jsonl as system.raid.KIND,
// stamped with the node's own event time on the run's clock, with the
// bay in the detail. After ctx ends it fetches once more, so events of the
// run's last instant are kept. A node that restarted numbers its events
// from 1 again; the watcher notices (the node's last number falls below
// what it has seen) and starts over for it.
func (r *rig) Watch(ctx context.Context, c testbed.Cluster, emit func(record.Event)) {
	clock := r.clock
	if clock == nil {
		start := time.Now()
		clock = testbed.Since(start)
	}
	// The run's start on the wall clock, to place the node's timestamps.
	start := time.Now().Add(-clock.Now())
	var wg sync.WaitGroup
	for id, cl := range r.clients(c) {
		wg.Go(func() { watchNode(ctx, id, cl, start, emit) })
	}
	wg.Wait()
}

func watchNode(ctx context.Context, node int, cl *control.Client, start time.Time, emit func(record.Event)) {
	var after int64
	fetch := func(ctx context.Context) {
		evs, next, err := cl.Events(ctx, after)
		if err != nil {
			return
		}
		if next < after {
			// The node restarted: its numbering began again.
			after = 0
			if evs, next, err = cl.Events(ctx, 0); err != nil {
				return
			}
		}
		for _, e := range evs {
			emit(RunEvent(node, e, start))
		}
		after = next
	}
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			last, cancel := context.WithTimeout(context.Background(), time.Second)
			fetch(last)
			cancel()
			return
		case <-t.C:
			fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			fetch(fctx)
			cancel()
		}
	}
}

// RunEvent maps one node event to the run's timeline: t_s is the event's
// time since start (never negative), kind system.raid.KIND, and the detail
// names the bay and the redundancy after the event.
func RunEvent(node int, e control.Event, start time.Time) record.Event {
	ts := max(e.Time.Sub(start).Seconds(), 0)
	detail := e.Detail
	if e.Disk > 0 {
		detail = fmt.Sprintf("disk %d: %s", e.Disk, e.Detail)
	}
	detail += fmt.Sprintf(" (redundancy %d)", e.Redundancy)
	return record.Event{TS: ts, Kind: "system.raid." + e.Kind, Node: node, Detail: detail}
}
