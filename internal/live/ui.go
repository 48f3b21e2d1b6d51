package live

import (
	_ "embed"
	"math"
	"net/http"

	"github.com/faultbench/faultbench/internal/record"
)

//go:embed page.html
var page []byte

func servePage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(page)
}

// State is what the live page draws (/state.json).
type State struct {
	RunID    string        `json:"run_id"`
	Name     string        `json:"name"`
	NowS     float64       `json:"now_s"`
	LengthS  float64       `json:"length_s"`
	WindowS  float64       `json:"window_s"`
	Phase    string        `json:"phase"`
	Phases   []statePhase  `json:"phases"`
	Finished bool          `json:"finished"`
	InFlight int64         `json:"inflight"`
	AgeS     float64       `json:"inflight_oldest_age_s"`
	Windows  []stateWindow `json:"windows"`
	Band     *Band         `json:"band"`
	Faults   []FaultState  `json:"faults"`
	Markers  []Marker      `json:"markers"`
	Guards   []GuardState  `json:"guards"`
	Aborted  *Aborted      `json:"aborted"`
	Dir      string        `json:"dir"`
	// EndS is when the load stops: the planned length, or earlier when the
	// guard cut the run short or it was interrupted. NowS never passes it.
	EndS float64 `json:"end_s"`
	// LoadEnded is true once the load has stopped; the last windows may
	// still be closing until Finished.
	LoadEnded bool        `json:"load_ended"`
	Sweep     *SweepState `json:"sweep,omitempty"`
}

// SweepState is the run's place in its sweep, and whether the whole sweep
// has ended (the page stops polling then, not at each run's end).
type SweepState struct {
	Position
	Finished bool `json:"finished"`
}

type statePhase struct {
	Name   string  `json:"name"`
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
}

// stateWindow is one closed window: outcomes in record.Outcomes order,
// then refused and cut short; latencies in seconds, null when none.
type stateWindow struct {
	T        float64  `json:"t"`
	Offered  int64    `json:"offered"`
	Outcomes []int64  `json:"outcomes"`
	Mean     *float64 `json:"mean"`
	P99      *float64 `json:"p99"`
	OKPerS   float64  `json:"ok_per_s"`
}

// Band is the baseline band (mean ± 2.576σ of the ok throughput of the
// baseline phase's windows), known once that phase's windows have closed.
// It is the live page's estimate; summary.json's band, computed from the
// settled part of the phase, is the one to quote.
type Band struct {
	Mean float64 `json:"mean"`
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// State is a snapshot of what the live page shows.
func (h *Hub) State() State {
	n, age := h.InFlight()
	s := State{RunID: h.cfg.RunID, Name: h.cfg.Name, NowS: h.Now(), LengthS: h.cfg.LengthS, WindowS: h.cfg.WindowS,
		Phase: h.Phase(), InFlight: n, AgeS: age}
	for _, p := range h.cfg.Phases {
		s.Phases = append(s.Phases, statePhase{p.Name, p.StartS, p.EndS})
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s.Finished, s.Dir = h.finished, h.cfg.Dir
	s.EndS = h.cfg.LengthS
	if h.endS > 0 {
		s.EndS = h.endS
	}
	if s.NowS >= s.EndS || h.finished {
		s.NowS, s.LoadEnded, s.Phase = min(s.NowS, s.EndS), true, ""
	}
	if p := h.cfg.Position; p != nil {
		s.Sweep = &SweepState{Position: *p}
	}
	s.Windows = make([]stateWindow, 0, len(h.windows))
	for i := range h.windows {
		w := &h.windows[i]
		sw := stateWindow{T: w.StartS, Offered: w.Offered, Mean: num(w.LatencyMean), P99: num(w.LatencyP99), OKPerS: w.ThroughputOK}
		for _, o := range record.Outcomes() {
			sw.Outcomes = append(sw.Outcomes, w.Outcomes[o])
		}
		sw.Outcomes = append(sw.Outcomes, w.GenRefused, w.CutShort)
		s.Windows = append(s.Windows, sw)
	}
	s.Band = h.band()
	s.Faults = h.activeFaults(0, math.Inf(1))
	s.Markers = append([]Marker{}, h.markers...)
	s.Guards = append([]GuardState{}, h.guards...)
	for i := range s.Guards {
		if math.IsNaN(s.Guards[i].Value) || math.IsInf(s.Guards[i].Value, 0) {
			s.Guards[i].Value = -1
		}
	}
	s.Aborted = h.aborted
	return s
}

// band computes the baseline band once every window of the first phase
// has closed, from those windows without a fault. The caller holds mu.
func (h *Hub) band() *Band {
	if len(h.cfg.Phases) == 0 {
		return nil
	}
	p := h.cfg.Phases[0]
	var xs []float64
	closedPast := false
	for i := range h.windows {
		w := &h.windows[i]
		if w.StartS+h.cfg.WindowS > p.EndS+1e-9 {
			closedPast = true
			break
		}
		if len(h.activeFaults(w.StartS, w.StartS+h.cfg.WindowS)) == 0 {
			xs = append(xs, w.ThroughputOK)
		}
	}
	if !closedPast || len(xs) < 2 {
		return nil
	}
	var mean, ss float64
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / float64(len(xs)-1))
	return &Band{Mean: mean, Low: mean - 2.576*sd, High: mean + 2.576*sd}
}
