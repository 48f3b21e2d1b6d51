package workload

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/record"
)

// Walking a spike's schedules in simulated time: the extra arrivals start
// at the inject time and come at the extra rate, split over the clients.
func TestSpikeScheduleOffersTheExtraRate(t *testing.T) {
	const clients = 3
	from, until := 2*time.Second, 5*time.Second
	for _, arrivals := range []string{"constant", "poisson"} {
		cfg := WithDefaults(Config{Rate: 200, Arrivals: arrivals, Clients: clients, Trace: "zipf:10:1", Seed: 7,
			Targets: []Target{{1, "127.0.0.1:1"}}})
		trace, err := loadTrace(cfg)
		if err != nil {
			t.Fatal(err)
		}
		extra := cfg.Rate * (3 - 1) // factor 3
		n := 0
		for c := range clients {
			s := newSpikeSchedule(cfg, trace, c, extra, from, 1)
			for {
				a, _ := s.next()
				if a.at < from {
					t.Fatalf("%s: spike arrival at %v, before the inject at %v", arrivals, a.at, from)
				}
				if a.at >= until {
					break
				}
				n++
			}
		}
		want := extra * (until - from).Seconds() // 1200
		tol := float64(clients)
		if arrivals == "poisson" {
			tol = 5 * math.Sqrt(want) // five standard deviations
		}
		if math.Abs(float64(n)-want) > tol {
			t.Errorf("%s: %d extra arrivals in %v, want %.0f ± %.0f", arrivals, n, until-from, want, tol)
		}
	}
}

func TestSpikeParams(t *testing.T) {
	bad := []map[string]string{
		{"factor": "1"}, {"factor": "0.5"}, {"factor": "1001"}, {"factor": "NaN"},
		{"rate": "-3"}, {"rate": "5", "factor": "3"}, {"users": "2"},
	}
	for _, raw := range bad {
		if err := fault.DecodeParams(NewSpikeParams(), raw); err == nil {
			t.Errorf("params %v accepted", raw)
		}
	}
	for _, raw := range []map[string]string{{}, {"factor": "3"}, {"rate": "50"}} {
		if err := fault.DecodeParams(NewSpikeParams(), raw); err != nil {
			t.Errorf("params %v: %v", raw, err)
		}
	}
	if key, err := CheckSpike(ModelClosed, "poisson", map[string]string{"rate": "10"}); key != "rate" || err == nil {
		t.Errorf("closed loop with rate: key %q, err %v", key, err)
	}
	if key, err := CheckSpike("", "trace", map[string]string{"factor": "2"}); key != "factor" || err == nil {
		t.Errorf("trace with factor: key %q, err %v", key, err)
	}
	if _, err := CheckSpike("", "poisson", map[string]string{"factor": "2"}); err != nil {
		t.Errorf("open loop with factor: %v", err)
	}
}

// eventSink keeps events, for tests.
type eventSink struct {
	mu sync.Mutex
	ev []record.Event
}

func (e *eventSink) add(ev record.Event) { e.mu.Lock(); e.ev = append(e.ev, ev); e.mu.Unlock() }

func (e *eventSink) kinds() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ks []string
	for _, ev := range e.ev {
		ks = append(ks, ev.Kind)
	}
	return strings.Join(ks, ",")
}

// A spike injected through the fault machinery (fault.As finds the
// generator on the target) adds the extra arrivals between its inject and
// its revert, every one recorded; the base schedule is untouched.
func TestSpikeThroughTheTarget(t *testing.T) {
	cfg := Config{Driver: "null", Rate: 200, Arrivals: "constant", Clients: 2, Trace: "zipf:10:1", Seed: 3,
		Targets: []Target{{1, "127.0.0.1:9"}}}
	const length = 3 * time.Second
	sink := &sliceSink{}
	g, err := New(context.Background(), cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	ev := &eventSink{}
	start := time.Now()
	g.SetEvents(ev.add, func() time.Duration { return time.Since(start) })
	done := make(chan error, 1)
	go func() { done <- g.Run(context.Background(), start, length) }()

	target := g.Target(bare{})
	if err := fault.Supported("load-spike", "local", "static"); err != nil {
		t.Fatal(err)
	}
	p := NewSpikeParams()
	p.Factor = 3
	o := fault.Occurrence{Type: "load-spike", ID: 4, Params: p}
	var rev fault.Revert
	deadline := time.Now().Add(10 * time.Second)
	for { // the generator takes a spike once Run has started
		rev, err = injectSpike(context.Background(), target, o, p)
		if !errors.Is(err, ErrSpikeAfterRun) || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	fromHigh := time.Since(start)
	waitUntil(t, func() bool { return len(sink.sorted()) > 100 })
	stopLow := time.Since(start)
	if err := rev(); err != nil {
		t.Fatal(err)
	}
	stopHigh := time.Since(start)
	_ = rev() // idempotent
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	base, err := PlannedArrivals(cfg, length)
	if err != nil {
		t.Fatal(err)
	}
	extraRecords := len(sink.sorted()) - base
	extra := cfg.Rate * 2
	lo := extra*(stopLow-fromHigh).Seconds() - float64(cfg.Clients)
	hi := extra*stopHigh.Seconds() + float64(cfg.Clients)
	if float64(extraRecords) < lo || float64(extraRecords) > hi {
		t.Errorf("%d extra records, want within [%.0f, %.0f] for %v/s extra between the inject and the revert", extraRecords, lo, hi, extra)
	}
	if got := ev.kinds(); got != "fault.effective,fault.reverted" {
		t.Errorf("events %s", got)
	}
	if _, err := g.Spike(o, p); !errors.Is(err, ErrSpikeAfterRun) {
		t.Errorf("spike after the run: %v", err)
	}
}

// A closed loop's spike adds users; each of their requests is recorded.
func TestSpikeAddsClosedLoopUsers(t *testing.T) {
	cfg := Config{Driver: "null", Model: ModelClosed, Users: 1, Think: "fixed(2ms)", Clients: 2, Trace: "zipf:10:1", Seed: 3,
		Targets: []Target{{1, "127.0.0.1:9"}}}
	sink := &sliceSink{}
	g, err := New(context.Background(), cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- g.Run(context.Background(), start, time.Second) }()
	p := &SpikeParams{Factor: 4}
	var rev fault.Revert
	deadline := time.Now().Add(10 * time.Second)
	for {
		rev, err = g.Spike(fault.Occurrence{Type: "load-spike", ID: 1}, p)
		if !errors.Is(err, ErrSpikeAfterRun) || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	spiked := g.offered.Load()
	waitUntil(t, func() bool { return g.offered.Load() > spiked+50 })
	_ = rev()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, want := int64(len(sink.sorted())), g.offered.Load(); got != want {
		t.Errorf("%d records for %d requests sent", got, want)
	}
}

type bare struct{}

func (bare) Size() int { return 4 }

// waitUntil polls cond for up to 20 s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 20s")
		}
		time.Sleep(time.Millisecond)
	}
}
