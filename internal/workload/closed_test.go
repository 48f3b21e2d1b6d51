package workload

import (
	"context"
	"math"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/faultbench/faultbench/internal/record"
)

// fakeLatencyDriver answers after a latency that cycles through a few
// values, in the bubble's fake time; it counts attempts in flight.
type fakeLatencyDriver struct {
	mu       sync.Mutex
	n        int
	inFlight int
	maxIn    int
}

func (d *fakeLatencyDriver) Do(ctx context.Context, a Attempt) Result {
	d.mu.Lock()
	d.n++
	lat := time.Duration(1+d.n%5) * time.Millisecond
	d.inFlight++
	d.maxIn = max(d.maxIn, d.inFlight)
	d.mu.Unlock()
	time.Sleep(lat)
	d.mu.Lock()
	d.inFlight--
	d.mu.Unlock()
	return Result{Outcome: record.OK, End: time.Now(), Status: 200}
}

func runClosed(t *testing.T, think string, users int) ([]record.Request, *fakeLatencyDriver) {
	t.Helper()
	drv := &fakeLatencyDriver{}
	drivers["fake-latency"] = func(DriverConfig) Driver { return drv }
	t.Cleanup(func() { delete(drivers, "fake-latency") })
	var mu sync.Mutex
	var recs []record.Request
	sink := SinkFunc(func(r record.Request) { mu.Lock(); recs = append(recs, r); mu.Unlock() })
	cfg := Config{Driver: "fake-latency", Model: ModelClosed, Think: think, Clients: 2, Users: users, Seed: 3,
		Trace: "zipf:10:1.0", Targets: []Target{{Node: 1, Addr: "127.0.0.1:9"}}}
	synctest.Test(t, func(t *testing.T) {
		if err := Run(context.Background(), cfg, time.Now(), 2*time.Second, sink); err != nil {
			t.Fatal(err)
		}
	})
	return recs, drv
}

func TestClosedLoopNextSendAfterPreviousEndPlusThink(t *testing.T) {
	for _, think := range []string{"0", "fixed(2ms)", "exponential(8ms)"} {
		recs, drv := runClosed(t, think, 1)
		l, _ := ParseThink(think)
		byClient := map[int][]record.Request{}
		for _, r := range recs {
			byClient[r.Client] = append(byClient[r.Client], r)
		}
		if len(byClient) != 2 || drv.maxIn > 2 {
			t.Fatalf("%s: %d clients recorded, %d attempts at once (want at most one per user)", think, len(byClient), drv.maxIn)
		}
		var gaps []float64
		for c, rs := range byClient {
			sort.Slice(rs, func(i, j int) bool { return rs[i].StartS < rs[j].StartS })
			for i := 1; i < len(rs); i++ {
				prevEnd := rs[i-1].StartS + rs[i-1].LatencyS
				gap := rs[i].StartS - prevEnd
				if gap < -1e-9 {
					t.Fatalf("%s client %d: send %d at %.6fs, before the previous end %.6fs", think, c, i, rs[i].StartS, prevEnd)
				}
				if l.Name == "fixed" && math.Abs(gap-l.Mean.Seconds()) > 1e-6 {
					t.Fatalf("%s client %d: gap %.6fs after the previous end, want exactly %v", think, c, gap, l.Mean)
				}
				gaps = append(gaps, gap)
			}
			if rs[len(rs)-1].StartS >= 2 {
				t.Fatalf("%s: a send at %.3fs, after the run's end", think, rs[len(rs)-1].StartS)
			}
		}
		if l.Name == "exponential" {
			mean := 0.0
			for _, g := range gaps {
				mean += g
			}
			mean /= float64(len(gaps))
			// Over ~200 gaps the mean of exponential(8ms) is within 30%.
			if mean < 0.0056 || mean > 0.0104 {
				t.Fatalf("exponential(8ms): mean think %.4fs over %d gaps", mean, len(gaps))
			}
		}
	}
}

func TestClosedLoopUsersBoundConcurrency(t *testing.T) {
	recs, drv := runClosed(t, "0", 4)
	if drv.maxIn != 8 {
		t.Fatalf("%d attempts at once, want 8 (2 clients x 4 users back to back)", drv.maxIn)
	}
	// Back to back, each user sends every ~3 ms on average for 2 s.
	if len(recs) < 8*2000/6 {
		t.Fatalf("%d records: users did not keep sending", len(recs))
	}
}

func TestClosedLoopValidation(t *testing.T) {
	base := Config{Driver: "null", Model: ModelClosed, Clients: 1, Trace: "zipf:10:1.0", Targets: []Target{{Node: 1, Addr: "127.0.0.1:9"}}}
	for _, think := range []string{"5ms", "gaussian(1ms, 1ms)", "exponential(-1ms)"} {
		c := base
		c.Think = think
		if err := Validate(WithDefaults(c)); err == nil {
			t.Errorf("think %q accepted", think)
		}
	}
	if err := Validate(WithDefaults(base)); err != nil {
		t.Errorf("closed loop without a rate: %v", err)
	}
}
