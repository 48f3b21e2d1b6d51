package press

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	nodeprog "github.com/faultbench/faultbench/internal/node"
)

// Five requests on two processors of 10 ms each finish as a CPU-bound
// server's would: two at 10 ms, two at 20 ms, the last at 30 ms.
func TestProcessQueuesOnTheNodesCPUs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCPUs(2, 10*time.Millisecond)
		start := time.Now()
		var mu sync.Mutex
		var done []time.Duration
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				if err := c.process(context.Background()); err != nil {
					t.Error(err)
				}
				mu.Lock()
				done = append(done, time.Since(start))
				mu.Unlock()
			})
		}
		wg.Wait()
		want := []time.Duration{10, 10, 20, 20, 30}
		for i := range want {
			if done[i] != want[i]*time.Millisecond {
				t.Fatalf("requests finished at %v, want %v ms", done, want)
			}
		}
	})
}

func TestProcessWithoutTimeIsFreeAndStopsWithTheNode(t *testing.T) {
	if c := newCPUs(2, 0); c != nil || c.process(context.Background()) != nil {
		t.Fatal("no processing time must cost nothing")
	}
	synctest.Test(t, func(t *testing.T) {
		c := newCPUs(1, time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		go c.process(ctx) // holds the only processor
		synctest.Wait()
		errc := make(chan error, 1)
		go func() { errc <- c.process(ctx) }() // waits in line
		synctest.Wait()
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("a waiting request on a stopping node: %v, want context.Canceled", err)
		}
	})
}

func TestProcessOptions(t *testing.T) {
	nc := nodeprog.Config{Listen: "127.0.0.12:8080", Node: 2, Mode: "perf",
		Peers:   []string{"127.0.0.11:8080", "127.0.0.12:8080"},
		Options: map[string]string{"events": "none", "process-time": "10ms", "process-cpus": "4"}}
	cfg, err := ConfigFromNode(nc, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ProcessTime != 10*time.Millisecond || cfg.ProcessCPUs != 4 {
		t.Fatalf("process time %v on %d cpus, want 10ms on 4", cfg.ProcessTime, cfg.ProcessCPUs)
	}
	delete(nc.Options, "process-time")
	delete(nc.Options, "process-cpus")
	if cfg, err = ConfigFromNode(nc, io.Discard, io.Discard); err != nil || cfg.ProcessTime != 0 || cfg.ProcessCPUs != 2 {
		t.Fatalf("defaults: process time %v on %d cpus (%v), want 0 on 2", cfg.ProcessTime, cfg.ProcessCPUs, err)
	}
	for _, tc := range []struct{ key, value, says string }{
		{"process-time", "10", "process-time=10"},
		{"process-time", "-1ms", "process time -1ms outside 0..10s"},
		{"process-time", "1m", "process time 1m0s outside 0..10s"},
		{"process-cpus", "two", "process-cpus=two"},
		{"process-cpus", "-2", "process cpus -2 outside 1..1024"},
	} {
		nc.Options[tc.key] = tc.value
		_, err := ConfigFromNode(nc, io.Discard, io.Discard)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "node 2") {
			t.Errorf("%s=%s: %v, want ErrConfig naming node 2 and saying %q", tc.key, tc.value, err, tc.says)
		}
		delete(nc.Options, tc.key)
	}
}

// End to end: every page, wherever it comes from, takes at least the
// processing time (a lower bound, not a speed).
func TestClusterRequestTakesTheProcessingTime(t *testing.T) {
	const processing = 80 * time.Millisecond
	for _, mode := range []Mode{Perf, HA} {
		t.Run(mode.String(), func(t *testing.T) {
			c := newTestCluster(t, mode, 2, func(cfg *Config) { cfg.ProcessTime = processing })
			c.waitServing(1)
			for p := range 4 {
				start := time.Now()
				c.wantOK(1+p%2, p)
				if took := time.Since(start); took < processing {
					t.Fatalf("page %d took %v, less than the processing time %v", p, took, processing)
				}
			}
		})
	}
}
