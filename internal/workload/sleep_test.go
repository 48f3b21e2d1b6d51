package workload

import (
	"context"
	"testing"
	"time"
)

// A sleeper never wakes before its instant, and a stopped run wakes it.
func TestSleeper(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := newSleeper(ctx)
	defer s.close()
	for range 3 {
		when := time.Now().Add(2 * time.Millisecond)
		if !s.until(ctx, when) {
			t.Fatal("woke as stopped while the run goes on")
		}
		if time.Now().Before(when) {
			t.Fatal("woke before its instant")
		}
	}
	if !s.until(ctx, time.Now().Add(-time.Second)) {
		t.Fatal("an instant in the past should not wait or fail")
	}
	done := make(chan bool)
	go func() { done <- s.until(ctx, time.Now().Add(time.Hour)) }()
	cancel()
	if <-done {
		t.Fatal("a stopped wait reported the instant reached")
	}
	if s.until(ctx, time.Now().Add(time.Hour)) {
		t.Fatal("a wait after the stop reported the instant reached")
	}
}

// The null driver goes through the whole generator without a network.
func TestNullDriverRun(t *testing.T) {
	cfg := Config{Driver: "null", Rate: 2000, Clients: 2, Trace: "zipf:10:0.8", Targets: []Target{{1, "127.0.0.1:9"}}}
	want, err := PlannedArrivals(cfg, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	sink := &sliceSink{}
	if err := Run(context.Background(), cfg, time.Now(), 50*time.Millisecond, sink); err != nil {
		t.Fatal(err)
	}
	if got := len(sink.sorted()); got != want || want == 0 {
		t.Errorf("%d records, want %d", got, want)
	}
}
