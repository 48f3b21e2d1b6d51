package guard

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/live"
	"github.com/faultbench/faultbench/internal/record"
)

// fakeSource is a Source whose windows, in-flight age, clock and first
// fault the test sets.
type fakeSource struct {
	mu      sync.Mutex
	windows []record.Window
	age     float64
	now     float64
	armed   bool
	states  []live.GuardState
	ch      chan struct{}
}

func newFake() *fakeSource { return &fakeSource{ch: make(chan struct{}, 1)} }

func (f *fakeSource) Subscribe() <-chan struct{} { return f.ch }
func (f *fakeSource) Windows() ([]record.Window, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]record.Window(nil), f.windows...), nil
}
func (f *fakeSource) InFlight() (int64, float64) { f.mu.Lock(); defer f.mu.Unlock(); return 1, f.age }
func (f *fakeSource) Now() float64               { f.mu.Lock(); defer f.mu.Unlock(); return f.now }
func (f *fakeSource) SetGuards(g []live.GuardState) {
	f.mu.Lock()
	f.states = g
	f.mu.Unlock()
}
func (f *fakeSource) FirstFaultS() (float64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return 2, f.armed
}

// add closes a window of 1 s with ok of 100 offered, and notifies as the
// live Hub does: without blocking, a pending notice not repeated. (A
// blocking send hung the whole package when the watcher had returned.)
func (f *fakeSource) add(ok int64) {
	f.mu.Lock()
	w := record.Window{StartS: float64(len(f.windows)), Offered: 100, ThroughputOK: float64(ok)}
	w.Outcomes[record.OK], w.Outcomes[record.Timeout] = ok, 100-ok
	f.windows = append(f.windows, w)
	f.now = w.StartS + 1
	f.mu.Unlock()
	select {
	case f.ch <- struct{}{}:
	default:
	}
}

func mustRule(t *testing.T, s string) Rule {
	e, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return Rule{Name: s, Expr: &e, For: e.For}
}

func watchAsync(ctx context.Context, rules []Rule, src Source) chan Fired {
	out := make(chan Fired, 1)
	go func() {
		if f, ok := Watch(ctx, rules, src, 1, nil); ok {
			out <- f
		}
		close(out)
	}()
	return out
}

// A window rule "for 2s" fires on the second consecutive window that
// holds, not on one alone, and never before the first fault.
func TestWatchWindows(t *testing.T) {
	src := newFake()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fired := watchAsync(ctx, []Rule{mustRule(t, "goodput < 0.5 for 2s")}, src)
	src.add(10) // window [0,1): bad, but before the first fault (at 2 s)
	src.add(10) // [1,2): bad, still before it
	src.mu.Lock()
	src.armed = true
	src.mu.Unlock()
	src.add(10) // [2,3): bad: pending
	src.add(90) // [3,4): good: streak broken
	src.add(10) // [4,5): pending
	src.add(20) // [5,6): fires
	f, ok := <-fired
	if !ok {
		t.Fatal("the guard did not fire")
	}
	if f.By != "goodput < 0.5 for 2s" || f.WindowEndS != 6 || f.Value != 0.2 {
		t.Errorf("fired %+v: want the rule, on the window ending at 6 s, value 0.2", f)
	}
}

// A live rule fires once its condition has held without a break for its duration.
func TestWatchLive(t *testing.T) {
	src := newFake()
	src.armed, src.age = true, 5
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fired := watchAsync(ctx, []Rule{mustRule(t, "inflight_age > 3s for 1s")}, src)
	deadline := time.After(5 * time.Second)
	for tick := 0; ; tick++ {
		select {
		case f := <-fired:
			if f.AtS < 1 || !math.IsNaN(f.WindowEndS) || f.Value != 5 {
				t.Errorf("fired %+v: want at ≥ 1 s of run time, value 5", f)
			}
			return
		case <-deadline:
			t.Fatal("the guard did not fire")
		case <-time.After(20 * time.Millisecond):
			src.mu.Lock()
			src.now += 0.1 // the run's clock, advanced by the test
			src.mu.Unlock()
		}
	}
}

// A probe that answers 503 holds; the guard fires with the status as value.
func TestWatchProbe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }))
	defer srv.Close()
	src := newFake()
	src.armed = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := Rule{Name: "probe", Probe: srv.URL, Every: 10 * time.Millisecond, Timeout: time.Second}
	if err := r.Check(false); err != nil {
		t.Fatal(err)
	}
	f, ok := <-watchAsync(ctx, []Rule{r}, src)
	if !ok || f.Value != 503 {
		t.Errorf("fired %+v, %v: want the probe with value 503", f, ok)
	}
}

func TestCheckRemote(t *testing.T) {
	r := Rule{Name: "p", Probe: "http://192.0.2.1/health"}
	if err := r.Check(false); err == nil {
		t.Error("a probe to 192.0.2.1 passed without --allow-remote")
	}
	if err := r.Check(true); err != nil {
		t.Errorf("with --allow-remote: %v", err)
	}
}
