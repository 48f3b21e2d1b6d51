package ssm

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/systems/ssm/brick"
)

// Sample records the live bricks and the worst drop rate from the bricks'
// own /stats, and stops when its context ends.
func TestSampleSeries(t *testing.T) {
	addrs := map[int]string{}
	var bricks []*brick.Brick
	for id := 2; id <= 4; id++ {
		cfg := brick.DefaultConfig()
		cfg.ID = uint16(id)
		b, err := brick.Start(cfg, "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		bricks = append(bricks, b)
		addrs[id] = b.Addr()
	}
	// Brick 5 is named but not running: not live.
	addrs[5] = "127.0.0.1:1"
	r := &rig{addrs: addrs, bricks: []int{2, 3, 4, 5}, window: 200 * time.Millisecond}
	var mu sync.Mutex
	got := map[string][]float64{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Sample(ctx, nil, func(name string, v float64) {
			mu.Lock()
			defer mu.Unlock()
			got[name] = append(got[name], v)
			if len(got[SeriesBricksLive]) >= 3 {
				cancel()
			}
		})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Sample did not stop after its context ended")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || len(got[SeriesDroppedMax]) < 3 {
		t.Fatalf("series %v, want %s and %s", got, SeriesBricksLive, SeriesDroppedMax)
	}
	for i, v := range got[SeriesBricksLive] {
		if v != 3 {
			t.Errorf("sample %d: %v live bricks, want 3", i, v)
		}
	}
	for i, v := range got[SeriesDroppedMax] {
		if v != 0 {
			t.Errorf("sample %d: drop rate %v of idle bricks, want 0", i, v)
		}
	}
}

// The series cover the whole window their last record falls in: a burst
// of drops or a missed poll early in a window still shows at its end.
func TestSeriesWindowCoversTheWindow(t *testing.T) {
	ms := func(n int64) int64 { return 1_700_000_000_000 + n } // a brick's clock
	st := func(inc uint64, atMs int64, dropped uint64) brick.Stats {
		return brick.Stats{Incarnation: inc, UnixMillis: ms(atMs), NumDropped: dropped}
	}
	w := newSeriesWindow(time.Second, 3)
	check := func(at string, wantLive, wantDropped float64) {
		t.Helper()
		if live, dropped := w.values(); live != wantLive || dropped != wantDropped {
			t.Errorf("%s: live %v, dropped %v/s; want %v, %v/s", at, live, dropped, wantLive, wantDropped)
		}
	}
	w.add(50*time.Millisecond, map[int]brick.Stats{2: st(1, 50, 0), 3: st(1, 50, 0), 4: st(1, 50, 7)})
	check("first poll", 3, 0) // nothing to count drops between yet
	w.add(150*time.Millisecond, map[int]brick.Stats{2: st(1, 150, 0), 3: st(1, 150, 5), 4: st(1, 150, 7)})
	check("a burst of 5 drops in 100 ms", 3, 50)
	w.add(350*time.Millisecond, map[int]brick.Stats{3: st(1, 350, 5), 4: st(1, 350, 7)}) // brick 2 missed a poll
	w.add(550*time.Millisecond, map[int]brick.Stats{2: st(1, 550, 0), 3: st(1, 550, 5), 4: st(1, 550, 7)})
	check("half a window on", 2, 10) // 5 drops over 500 ms; the dip stays
	w.add(950*time.Millisecond, map[int]brick.Stats{2: st(1, 950, 0), 3: st(1, 950, 5), 4: st(1, 950, 7)})
	check("the window's last poll", 2, 5.555555555555555) // 5 drops over 900 ms

	// A new window starts afresh; the pair that straddles its start counts
	// in it. Brick 4 restarted (a new incarnation with 3 drops since), and
	// brick 2's counter went back within one incarnation: not counted.
	w.add(1050*time.Millisecond, map[int]brick.Stats{2: st(1, 1050, 0), 3: st(1, 1050, 6), 4: st(2, 1050, 3)})
	check("the next window's first poll", 3, 30)
	w.add(1150*time.Millisecond, map[int]brick.Stats{2: st(1, 1150, 0), 3: st(1, 1150, 6), 4: st(2, 1150, 3)})
	check("100 ms later", 3, 15)
	w2 := newSeriesWindow(time.Second, 1)
	w2.add(0, map[int]brick.Stats{2: st(1, 0, 9)})
	w2.add(100*time.Millisecond, map[int]brick.Stats{2: st(1, 100, 4)})
	check2live, check2dropped := w2.values()
	if check2live != 1 || check2dropped != 0 {
		t.Errorf("a counter that went back: live %v, dropped %v/s; want 1, 0/s", check2live, check2dropped)
	}
}
