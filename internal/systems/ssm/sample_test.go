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
