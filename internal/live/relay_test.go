package live

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/faultbench/faultbench/internal/record"
)

// sweepHub is the hub of run index (1-based) of a two-configuration
// sweep, with ok answers recorded and one window closed.
func sweepHub(index, ok int) *Hub {
	cfg := index // one repetition: run i is configuration i
	id := "cfg-000" + string(rune('0'+cfg))
	p := &Position{Sweep: "s", Run: id + "-r1", ConfigID: id, Config: cfg, Configs: 2, Repetition: 1, Index: index, Runs: 2}
	clock := time.Duration(0)
	h := New(Config{RunID: "run" + id, Name: "s-" + id, Nodes: 1, Clients: 1, WindowS: 1, LengthS: 2,
		Phases: []Phase{{Name: "all", StartS: 0, EndS: 2}}, Clock: func() time.Duration { return clock }, Dir: "/tmp/s/" + p.Run, Position: p})
	f := h.Follower()
	w := record.Window{StartS: 0, Offered: int64(ok)}
	for range ok {
		f.Request(&record.Request{StartS: 0.1, LatencyS: 0.01, Outcome: record.OK, Node: 1})
	}
	w.Outcomes[record.OK] = int64(ok)
	f.Windows([]record.Window{w}, nil)
	return h
}

func gatherText(t *testing.T, r *Relay) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// byRun sums a counter family's values per run label.
func byRun(f *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range f.GetMetric() {
		var run string
		for _, l := range m.GetLabel() {
			if l.GetName() == "run" {
				run = l.GetValue()
			}
		}
		out[run] += m.GetCounter().GetValue()
	}
	return out
}

// A sweep's endpoint labels each run's series with config and run, keeps
// a run's counters once the next run has started, drops its gauges, and
// serves the controller's own series once.
func TestRelayKeepsEndedRunsCounters(t *testing.T) {
	r := NewRelay("s")
	first := sweepHub(1, 7)
	r.Attach(first)
	first.Finish()
	r.Attach(sweepHub(2, 5))
	fams := gatherText(t, r)

	got := byRun(fams["faultbench_requests_total"])
	if got["cfg-0001-r1"] != 7 || got["cfg-0002-r1"] != 5 || len(got) != 2 {
		t.Errorf("requests_total by run %v: want 7 for cfg-0001-r1 and 5 for cfg-0002-r1", got)
	}
	if w := byRun(fams["faultbench_windows_closed_total"]); w["cfg-0001-r1"] != 1 || w["cfg-0002-r1"] != 1 {
		t.Errorf("windows_closed_total by run %v", w)
	}
	for _, m := range fams["faultbench_inflight_attempts"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "run" && l.GetValue() != "cfg-0002-r1" {
				t.Errorf("the ended run %s still has a gauge", l.GetValue())
			}
		}
	}
	for _, m := range fams["faultbench_requests_total"].GetMetric() {
		var config, run string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "config":
				config = l.GetValue()
			case "run":
				run = l.GetValue()
			}
		}
		if !strings.HasPrefix(run, config+"-r") {
			t.Errorf("series with config %q and run %q", config, run)
		}
	}
	if n := len(fams["go_goroutines"].GetMetric()); n != 1 {
		t.Errorf("go_goroutines served %d times, want once", n)
	}
	if v := fams["faultbench_sweep_run"].GetMetric()[0].GetGauge().GetValue(); v != 2 {
		t.Errorf("sweep_run %v, want 2", v)
	}
}

// The sweep's page data follow the run under way and say where it stands;
// the page keeps polling until the sweep, not the run, has ended.
func TestRelayState(t *testing.T) {
	r := NewRelay("s")
	if s := r.State(); s.Sweep == nil || s.Sweep.Sweep != "s" || s.Sweep.Runs != 0 || s.Windows == nil {
		t.Errorf("state before the first run: %+v", s)
	}
	h := sweepHub(2, 3)
	r.Attach(h)
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	state := func() State {
		resp, err := http.Get(srv.URL + "/state.json")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var s State
		if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := state()
	if s.Sweep.Config != 2 || s.Sweep.Configs != 2 || s.Sweep.Run != "cfg-0002-r1" || s.Sweep.Finished || len(s.Windows) != 1 {
		t.Errorf("state %+v, sweep %+v: want configuration 2 of 2 under way, one window", s, s.Sweep)
	}
	h.Finish()
	r.Finish()
	if s := state(); !s.Finished || !s.Sweep.Finished {
		t.Errorf("after the end: finished %v, sweep %+v", s.Finished, s.Sweep)
	}
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(page, []byte("configuration ")) {
		t.Error("the page does not say which configuration it shows")
	}
}

// Once the load has stopped, the page's clock stays at its end and the
// phase is gone; a guard's early stop ends it there.
func TestStateAfterTheEnd(t *testing.T) {
	now := 3 * time.Second
	h := New(Config{Name: "r", Nodes: 1, Clients: 1, WindowS: 1, LengthS: 10,
		Phases: []Phase{{Name: "warmup", StartS: 0, EndS: 5}, {Name: "fault", StartS: 5, EndS: 10}}, Clock: func() time.Duration { return now }})
	if s := h.State(); s.LoadEnded || s.NowS != 3 || s.Phase != "warmup" || s.EndS != 10 {
		t.Errorf("running: %+v", s)
	}
	now = 12500 * time.Millisecond
	if s := h.State(); !s.LoadEnded || s.NowS != 10 || s.Phase != "" || s.Finished {
		t.Errorf("past the length, windows closing: now %v, load ended %v, phase %q, finished %v", s.NowS, s.LoadEnded, s.Phase, s.Finished)
	}
	h.SetEnd(6.5)
	now = 7 * time.Second
	h.Finish()
	if s := h.State(); !s.LoadEnded || s.NowS != 6.5 || s.EndS != 6.5 || !s.Finished {
		t.Errorf("stopped early at 6.5 s: now %v, end %v, load ended %v, finished %v", s.NowS, s.EndS, s.LoadEnded, s.Finished)
	}
}

// Ctrl-C during the linger ends it: Linger returns once ctx ends, however
// long the linger asked for.
func TestLingerEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		Linger(ctx, time.Hour)
		close(done)
	}()
	cancel()
	<-done
}
