package runner

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/guard"
	"github.com/faultbench/faultbench/internal/live"
	"github.com/faultbench/faultbench/internal/operator"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
)

// LiveOptions let people and tools follow the run (internal/live): each
// is off when zero. The listeners are bound by the caller before the run
// (an address in use is bad input); the run serves them from its start
// and closes them Linger after its end.
type LiveOptions struct {
	Lines            io.Writer    // --live: one JSON line per closed window
	Metrics          net.Listener // --metrics: the Prometheus endpoint
	UI               net.Listener // --ui: the live page
	Linger           time.Duration
	NativeHistograms bool
	// Relay, in a sweep, serves the run instead of Metrics and UI (which
	// are then nil): the sweep's endpoint, which outlives its runs. The
	// run attaches its hub to it when it starts.
	Relay *live.Relay
	// Position places the run in its sweep: the page, the --live lines
	// and the endpoint's labels name it. Nil for a run of its own.
	Position *live.Position
}

// liveRun is the run's live side: the hub, its servers, the guard.
type liveRun struct {
	hub     *live.Hub
	servers []*live.Server
	rules   []guard.Rule
	// Set by the guard when it fires, read after the load ended.
	aborted *live.Aborted
	endS    float64 // when the load was stopped after the cooldown
}

// wanted reports whether anything follows the run live.
func (o LiveOptions) wanted(sc *scenario.Scenario) bool {
	return o.Lines != nil || o.Metrics != nil || o.UI != nil || o.Relay != nil || len(sc.Guard) > 0
}

// startLive compiles the guard, makes the hub and starts serving it. It
// runs first in prepare, so every event of the run reaches the hub.
func (r *run) startLive() error {
	sc, o := r.sc, r.opt.Live
	rules, err := GuardRules(sc, r.opt.AllowRemote)
	if err != nil {
		return err
	}
	if !o.wanted(sc) {
		return nil
	}
	r.live.rules = rules
	var phases []live.Phase
	t := 0.0
	for _, p := range sc.Phases {
		phases = append(phases, live.Phase{Name: p.Name, StartS: t, EndS: t + p.Duration.Seconds()})
		t += p.Duration.Seconds()
	}
	rate := sc.Workload.Rate
	if sc.Workload.Model == "closed" {
		rate = 0
	}
	h := live.New(live.Config{RunID: r.id, Name: sc.Name, Nodes: sc.Cluster.Nodes, Clients: sc.Workload.Clients,
		WindowS: sc.Workload.Window.Seconds(), TargetRate: rate, LengthS: sc.Length().Seconds(), Phases: phases,
		NativeHistograms: o.NativeHistograms, Clock: r.now, Dir: r.opt.OutDir, Position: o.Position})
	if o.Lines != nil {
		h.WriteLines(o.Lines)
	}
	if o.Relay != nil {
		o.Relay.Attach(h)
	}
	for _, l := range []net.Listener{o.Metrics, o.UI} {
		if l != nil {
			r.live.servers = append(r.live.servers, h.Serve(l))
		}
	}
	r.live.hub = h
	return nil
}

// GuardRules compiles the scenario's guard (validated by scenario.Load);
// a probe or query outside loopback without allowRemote is an error.
func GuardRules(sc *scenario.Scenario, allowRemote bool) ([]guard.Rule, error) {
	var rules []guard.Rule
	for i, g := range sc.Guard {
		r := guard.Rule{For: g.For.Duration, Every: g.Every.Duration, Timeout: g.Timeout.Duration, Probe: g.Probe, PromQL: g.PromQL, Prometheus: g.Prometheus}
		switch {
		case g.Expr != "":
			e, err := guard.Parse(g.Expr)
			if err != nil {
				return nil, fmt.Errorf("guard[%d]: %w", i, err)
			}
			r.Expr, r.Name = &e, g.Expr
		case g.Probe != "":
			r.Name = "probe " + g.Probe
		default:
			op, v, err := guard.ParseCompare(g.When)
			if err != nil {
				return nil, fmt.Errorf("guard[%d]: %w", i, err)
			}
			r.Op, r.Value, r.Name = op, v, fmt.Sprintf("promql %s %s", g.PromQL, strings.TrimSpace(g.When))
		}
		if err := r.Check(allowRemote); err != nil {
			return nil, fmt.Errorf("guard[%d]: %w", i, err)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// hubEvent passes an event to the hub, if there is one.
func (r *run) hubEvent(e record.Event) {
	if r.live.hub != nil {
		r.live.hub.Event(e)
	}
}

// followLive hooks the hub to the recorder and the generator.
func (r *run) followLive() {
	if h := r.live.hub; h != nil {
		r.rec.Follow(h.Follower())
		r.gen.ObserveFlight(h)
	}
}

// watchGuard runs the guard until it fires or ctx ends. When a rule holds
// it reverts every fault and stops the operator at once, records the
// abort, keeps the load going for the cooldown (to record the recovery),
// then stops the load. It runs on its own goroutine during drive.
func (r *run) watchGuard(ctx context.Context, faults *operator.Run, start time.Time) {
	h := r.live.hub
	if len(r.live.rules) == 0 || h == nil {
		return
	}
	f, ok := guard.Watch(ctx, r.live.rules, h, r.sc.Workload.Window.Seconds(), &http.Client{})
	if !ok {
		return
	}
	faults.Stop()
	revertedS := r.now().Seconds()
	a := live.Aborted{By: f.By, AtS: f.AtS}
	detail := fmt.Sprintf("guard %q held (value %.4g) at %.3fs; every fault reverted by %.3fs (%.0f ms); operator stopped; load kept for %s",
		f.By, f.Value, f.AtS, revertedS, (revertedS-f.AtS)*1000, r.sc.GuardCooldown.Duration)
	if !math.IsNaN(f.WindowEndS) {
		detail += fmt.Sprintf("; the window that made it hold ended at %.3fs", f.WindowEndS)
	}
	r.emit(record.Event{TS: f.AtS, Kind: "abort", Detail: detail})
	h.SetAborted(a)
	stopAt := math.Min(f.AtS+r.sc.GuardCooldown.Seconds(), r.sc.Length().Seconds())
	h.SetEnd(stopAt)
	r.logf("guard: %s", detail)
	// Read by drive after its goroutines are waited for.
	r.live.aborted, r.live.endS = &a, stopAt
	timer := time.NewTimer(time.Until(start.Add(time.Duration(stopAt * float64(time.Second)))))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return
	case <-timer.C:
	}
	r.gen.Stop()
}

// closeLive stops serving, after the linger, once the run has ended.
func (r *run) closeLive() {
	if h := r.live.hub; h != nil {
		h.Finish()
	}
	if len(r.live.servers) > 0 {
		live.Linger(r.ctx, r.opt.Live.Linger)
	}
	for _, s := range r.live.servers {
		_ = s.Close()
	}
	r.live.servers = nil
}
