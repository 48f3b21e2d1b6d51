package guard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/live"
	"github.com/faultbench/faultbench/internal/record"
)

// Rule is one compiled guard rule: an expression, a probe or a query.
type Rule struct {
	Name string // as written in the scenario, for the abort's "by"
	Expr *Expr  // expression rules

	Probe      string // probe rules: URL that must answer 2xx or 3xx
	PromQL     string // query rules
	Prometheus string // query rules: the server's base URL
	Op         Op     // query rules: the comparison
	Value      float64

	For, Every, Timeout time.Duration
}

// ErrRemote is returned by Check for a probe or query to a host outside
// loopback without allowRemote.
var ErrRemote = errors.New("guard: not a loopback address")

// Check refuses probe and query URLs outside loopback unless allowRemote,
// as the load generator does (docs/scenario.md, the generator sends only
// to loopback and the run's own hosts; docs/guard.md, Probes and queries).
func (r Rule) Check(allowRemote bool) error {
	if allowRemote || r.Expr != nil {
		return nil
	}
	s := r.Probe
	if s == "" {
		s = r.Prometheus
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("guard %q: %v", r.Name, err)
	}
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); (err == nil && a.IsLoopback()) || host == "localhost" {
		return nil
	}
	return fmt.Errorf("%w: guard %q asks %s, which is not on loopback: pass --allow-remote to let the guard reach it", ErrRemote, r.Name, host)
}

// Source is what the guard watches: a run's live.Hub.
type Source interface {
	Subscribe() <-chan struct{}
	Windows() ([]record.Window, []string)
	InFlight() (n int64, oldestAgeS float64)
	Now() float64
	SetGuards([]live.GuardState)
	// FirstFaultS is when the first fault was injected: the guard is armed
	// from then on.
	FirstFaultS() (at float64, ok bool)
}

// Fired says which rule stopped the run, when, and on what.
type Fired struct {
	By    string  // the rule as written
	AtS   float64 // run time when the guard fired
	Value float64 // the value that held
	// WindowEndS is, for a window rule, the end of the window that made
	// the rule hold; NaN for the other rules.
	WindowEndS float64
}

// tick is how often live rules are sampled.
const tick = 50 * time.Millisecond

// Watch checks rules until one holds (it returns that one and true) or
// ctx ends (false). It is armed by the first fault: before it, nothing is
// judged (a warm-up's cold caches are not the experiment's doing); from
// it on, window rules judge the windows that end after it, and live,
// probe and query rules every sample, while faults are active and after. windowS is the run's window length. Probes and
// queries run in goroutines of their own, bounded by their timeouts; each
// rule's state is reported to src.SetGuards as it changes.
func Watch(ctx context.Context, rules []Rule, src Source, windowS float64, client *http.Client) (Fired, bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if client == nil {
		client = &http.Client{}
	}
	w := &watch{rules: rules, src: src, windowS: windowS, states: make([]live.GuardState, len(rules)),
		streak: make([]float64, len(rules)), since: make([]float64, len(rules)), fired: make(chan Fired, len(rules))}
	for i, r := range rules {
		w.states[i] = live.GuardState{Rule: r.Name, State: "ok", Value: math.NaN()}
		w.since[i] = math.NaN()
	}
	src.SetGuards(w.snapshot())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i, r := range rules {
		if r.Probe != "" || r.PromQL != "" {
			wg.Go(func() { w.poll(ctx, i, client) })
		}
	}
	closed := src.Subscribe()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return Fired{}, false
		case f := <-w.fired:
			return f, true
		case <-closed:
			if f, ok := w.checkWindows(); ok {
				return f, true
			}
		case <-t.C:
			if f, ok := w.checkLive(); ok {
				return f, true
			}
		}
	}
}

type watch struct {
	rules   []Rule
	src     Source
	windowS float64
	next    int // the next window to judge

	mu     sync.Mutex
	states []live.GuardState
	streak []float64 // window rules: seconds of consecutive windows that held
	since  []float64 // live, probe and query rules: run time since the rule holds; NaN when it does not
	fired  chan Fired
}

func (w *watch) snapshot() []live.GuardState {
	return append([]live.GuardState(nil), w.states...)
}

// set records rule i's state and value and tells the source. The caller holds mu.
func (w *watch) set(i int, state string, v float64) {
	if w.states[i].State == state && (w.states[i].Value == v || math.IsNaN(v) && math.IsNaN(w.states[i].Value)) {
		return
	}
	w.states[i].State, w.states[i].Value = state, v
	w.src.SetGuards(w.snapshot())
}

// checkWindows judges every window closed since the last call, in order.
func (w *watch) checkWindows() (Fired, bool) {
	armedAt, armed := w.src.FirstFaultS()
	if !armed {
		return Fired{}, false
	}
	windows, _ := w.src.Windows()
	w.mu.Lock()
	defer w.mu.Unlock()
	for ; w.next < len(windows); w.next++ {
		win := &windows[w.next]
		if win.StartS+w.windowS <= armedAt {
			continue
		}
		for i, r := range w.rules {
			if r.Expr == nil || r.Expr.Kind() != Window {
				continue
			}
			v := WindowValue(r.Expr.Metric, win, w.windowS)
			if !r.Expr.Op.Holds(v, r.Expr.Value) {
				w.streak[i] = 0
				w.set(i, "ok", v)
				continue
			}
			w.streak[i] += w.windowS
			if w.streak[i]+1e-9 >= r.Expr.For.Seconds() {
				w.set(i, "fired", v)
				return Fired{By: r.Name, AtS: w.src.Now(), Value: v, WindowEndS: win.StartS + w.windowS}, true
			}
			w.set(i, "pending", v)
		}
	}
	return Fired{}, false
}

// checkLive samples the live rules (inflight, inflight_age).
func (w *watch) checkLive() (Fired, bool) {
	if _, armed := w.src.FirstFaultS(); !armed {
		return Fired{}, false
	}
	n, age := w.src.InFlight()
	now := w.src.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, r := range w.rules {
		if r.Expr == nil || r.Expr.Kind() != Live {
			continue
		}
		v := float64(n)
		if r.Expr.Metric == "inflight_age" {
			v = age
		}
		if f, ok := w.hold(i, r.Expr.Op.Holds(v, r.Expr.Value), v, now, r.Expr.For); ok {
			return f, true
		}
	}
	return Fired{}, false
}

// hold advances a continuously sampled rule: it fires once the condition
// has held without a break for d. The caller holds mu.
func (w *watch) hold(i int, holds bool, v, now float64, d time.Duration) (Fired, bool) {
	if !holds {
		w.since[i] = math.NaN()
		w.set(i, "ok", v)
		return Fired{}, false
	}
	if math.IsNaN(w.since[i]) {
		w.since[i] = now
	}
	if now-w.since[i]+1e-9 >= d.Seconds() {
		w.set(i, "fired", v)
		return Fired{By: w.rules[i].Name, AtS: now, Value: v, WindowEndS: math.NaN()}, true
	}
	w.set(i, "pending", v)
	return Fired{}, false
}

// poll probes or queries rule i every Every until ctx ends or it fires.
func (w *watch) poll(ctx context.Context, i int, client *http.Client) {
	r := w.rules[i]
	every := r.Every
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		var holds bool
		var v float64
		var err error
		if r.Probe != "" {
			holds, v = probe(ctx, client, r.Probe, r.Timeout)
		} else if v, err = Query(ctx, client, r.Prometheus, r.PromQL, r.Timeout); err == nil {
			holds = r.Op.Holds(v, r.Value)
		}
		if ctx.Err() != nil {
			return
		}
		if _, armed := w.src.FirstFaultS(); !armed {
			holds = false
		}
		w.mu.Lock()
		var f Fired
		var fired bool
		if err != nil {
			w.since[i] = math.NaN()
			w.set(i, "error", math.NaN())
		} else {
			f, fired = w.hold(i, holds, v, w.src.Now(), r.For)
		}
		w.mu.Unlock()
		if fired {
			w.fired <- f // buffered: one slot per rule
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// probe GETs url: it holds (the service is unhealthy) unless the answer
// is 2xx or 3xx within timeout. v is the status, 0 when none came.
func probe(ctx context.Context, client *http.Client, url string, timeout time.Duration) (holds bool, v float64) {
	if timeout <= 0 {
		timeout = time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return true, 0
	}
	resp, err := client.Do(req)
	if err != nil {
		return true, 0
	}
	resp.Body.Close()
	return resp.StatusCode >= 400, float64(resp.StatusCode)
}

// WindowValue is metric's value in window win of windowS seconds; NaN
// when the window has no attempt to judge it by.
func WindowValue(metric string, win *record.Window, windowS float64) float64 {
	var measured int64
	for _, n := range win.Outcomes {
		measured += n
	}
	ok := float64(win.Outcomes[record.OK])
	ratio := func(a float64, b int64) float64 {
		if b == 0 {
			return math.NaN()
		}
		return a / float64(b)
	}
	switch metric {
	case "goodput":
		return ratio(ok, win.Offered)
	case "yield":
		return ratio(ok, measured)
	case "error_rate":
		return ratio(float64(measured)-ok, measured)
	case "throughput":
		return win.ThroughputOK
	case "offered":
		return float64(win.Offered) / windowS
	case "mean":
		return win.LatencyMean
	case "p50":
		return win.LatencyP50
	case "p90":
		return win.LatencyP90
	case "p99":
		return win.LatencyP99
	case "max":
		return win.LatencyMax
	}
	for _, o := range record.Outcomes() {
		if o.String() == metric {
			return float64(win.Outcomes[o])
		}
	}
	return math.NaN()
}
