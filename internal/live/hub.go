// Package live lets people and tools follow a run while it goes on: one
// JSON line per closed window (--live), a Prometheus endpoint (--metrics,
// docs/metrics.md) and a live page (--ui). A Hub gathers what the run
// already knows — every attempt as it is recorded, each window as it
// closes, the attempts in flight, the run's events — and serves it to all
// three and to the steady-state guard (internal/guard).
//
// The hot path is the recorder's: a Hub adds a few atomic adds to each
// recorded attempt and a map update under a per-client lock to each sent
// one; everything else (the endpoint's figures, the page's JSON) is
// computed when it is asked for.
package live

import (
	"encoding/json"
	"io"
	"math"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/record"
)

// Phase is one phase of the run, for the current-phase figure.
type Phase struct {
	Name         string
	StartS, EndS float64
}

// Config describes the run a Hub follows.
type Config struct {
	RunID, Name string
	Nodes       int     // node ids 1..Nodes (0 is "no node")
	Clients     int     // client ids 0..Clients-1
	WindowS     float64 // window length, seconds
	TargetRate  float64 // the scenario's offered rate, per second (0 for a closed loop)
	LengthS     float64 // the planned run length, seconds
	Phases      []Phase
	// NativeHistograms adds a native (sparse) histogram to the classic
	// buckets of the latency histogram.
	NativeHistograms bool
	// Clock is the run's clock (0 at the first arrival).
	Clock func() time.Duration
	// Dir is the run's results directory, named in every --live line.
	Dir string
	// Position places the run in its sweep; nil for a run of its own.
	Position *Position
}

// Position places a run in a sweep (faultbench sweep): the live page says
// "configuration i of n", the --live lines and the endpoint's series name
// the run.
type Position struct {
	Sweep      string `json:"sweep"`
	Run        string `json:"run"`       // cfg-NNNN-rR, the run directory's name
	ConfigID   string `json:"config_id"` // cfg-NNNN
	Config     int    `json:"config"`    // this configuration, 1-based, in the order the sweep runs them
	Configs    int    `json:"configs"`
	Repetition int    `json:"repetition"`
	Index      int    `json:"index"` // this run, 1-based, of Runs
	Runs       int    `json:"runs"`
}

// FaultState is a fault of the run's timeline.
type FaultState struct {
	ID      int     `json:"id"`
	Type    string  `json:"type"`
	Node    int     `json:"node,omitempty"`
	InjectS float64 `json:"inject_s"`
	ClearS  float64 `json:"clear_s,omitempty"` // 0 while active
}

// Marker is an event worth drawing on the live page (a fault, an operator
// action, an abort).
type Marker struct {
	TS     float64 `json:"t_s"`
	Kind   string  `json:"kind"`
	Detail string  `json:"detail,omitempty"`
}

// GuardState is what the guard reports of one rule.
type GuardState struct {
	Rule  string  `json:"rule"`
	State string  `json:"state"` // ok | pending | fired | error
	Value float64 `json:"value"` // the last value seen; NaN before any
}

// Aborted is what stopped the run early.
type Aborted struct {
	By  string  `json:"by"`
	AtS float64 `json:"at_s"`
}

// Hub gathers a run's live state. Build it with New before the run, hand
// Follower to the recorder and the Hub itself to the generator
// (workload.FlightObserver), and pass every event to Event. All methods
// are safe for concurrent use.
type Hub struct {
	cfg     Config
	metrics *Metrics
	fly     *flights

	mu       sync.Mutex
	windows  []record.Window
	series   []string
	faults   map[int]*FaultState
	order    []int // fault ids in order of injection
	markers  []Marker
	actions  map[string]int64
	guards   []GuardState
	aborted  *Aborted
	lines    []io.Writer
	lineErr  error
	notify   []chan struct{}
	finished bool
	endS     float64 // when the load stops, once known; 0 before
}

// New makes the Hub of a run.
func New(cfg Config) *Hub {
	if cfg.Clock == nil {
		start := time.Now()
		cfg.Clock = func() time.Duration { return time.Since(start) }
	}
	h := &Hub{cfg: cfg, fly: newFlights(cfg.Clients), faults: map[int]*FaultState{}, actions: map[string]int64{}}
	h.metrics = newMetrics(h)
	return h
}

// Follower is the recorder's hook (record.Recorder.Follow).
func (h *Hub) Follower() record.Follower {
	return record.Follower{Request: h.metrics.observe, Windows: h.addWindows}
}

// Started is workload.FlightObserver.
func (h *Hub) Started(client int, at time.Duration) { h.fly.Started(client, at) }

// Ended is workload.FlightObserver.
func (h *Hub) Ended(client int, at time.Duration) { h.fly.Ended(client, at) }

// InFlight returns the attempts in flight now and the age in seconds of
// the oldest (0 when none).
func (h *Hub) InFlight() (n int64, oldestAgeS float64) { return h.fly.state(h.cfg.Clock()) }

// Now is the run's clock in seconds.
func (h *Hub) Now() float64 { return h.cfg.Clock().Seconds() }

// Phase is the name of the phase at the run's clock ("" past the end).
func (h *Hub) Phase() string {
	t := h.Now()
	for _, p := range h.cfg.Phases {
		if t >= p.StartS && t < p.EndS {
			return p.Name
		}
	}
	return ""
}

// WriteLines makes every closed window also a JSON line on w (--live).
// Call it before the run. A write error stops the lines and is returned
// by LineErr.
func (h *Hub) WriteLines(w io.Writer) {
	h.mu.Lock()
	h.lines = append(h.lines, w)
	h.mu.Unlock()
}

// LineErr is the first error writing the JSON lines.
func (h *Hub) LineErr() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lineErr
}

// Subscribe returns a channel that receives (without blocking the Hub: a
// pending notice is not repeated) whenever windows close.
func (h *Hub) Subscribe() <-chan struct{} {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	h.notify = append(h.notify, ch)
	h.mu.Unlock()
	return ch
}

// Event takes one event of the run's timeline: faults, operator actions
// and aborts become markers and gauges.
func (h *Hub) Event(e record.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch e.Kind {
	case "fault.inject":
		f := &FaultState{ID: e.ID, Type: e.Fault, Node: e.Node, InjectS: e.TS}
		if _, seen := h.faults[e.ID]; !seen {
			h.order = append(h.order, e.ID)
		}
		h.faults[e.ID] = f
	case "fault.clear":
		if f := h.faults[e.ID]; f != nil && f.ClearS == 0 {
			f.ClearS = math.Max(e.TS, f.InjectS+1e-9)
		}
	case "operator.detect", "operator.action":
		h.actions[e.Kind]++
	case "abort":
	default:
		return
	}
	h.markers = append(h.markers, Marker{TS: e.TS, Kind: e.Kind, Detail: markerDetail(e)})
}

func markerDetail(e record.Event) string {
	s := e.Fault
	if e.Node > 0 {
		s += " node " + itoa(e.Node)
	}
	if e.Detail != "" {
		if s != "" {
			s += ": "
		}
		s += e.Detail
	}
	return s
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// FirstFaultS is the run time of the first fault injected; ok is false
// before any was.
func (h *Hub) FirstFaultS() (at float64, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.order) == 0 {
		return 0, false
	}
	return h.faults[h.order[0]].InjectS, true
}

// SetGuards sets the guard's state of each rule (the guard calls it).
func (h *Hub) SetGuards(g []GuardState) {
	h.mu.Lock()
	h.guards = append(h.guards[:0], g...)
	h.mu.Unlock()
}

// SetAborted records what stopped the run.
func (h *Hub) SetAborted(a Aborted) {
	h.mu.Lock()
	h.aborted = &a
	h.mu.Unlock()
}

// SetEnd says when the load stops (or stopped): the planned length, or
// earlier when the guard cut the run short or it was interrupted. The
// page caps its clock there and says the load has ended.
func (h *Hub) SetEnd(s float64) {
	h.mu.Lock()
	h.endS = s
	h.mu.Unlock()
}

// Finish marks the run as ended (the page stops polling).
func (h *Hub) Finish() {
	h.mu.Lock()
	h.finished = true
	h.mu.Unlock()
}

// activeFaults returns the faults active at some moment of [from, to):
// injected before to and not cleared by from. The caller holds mu.
func (h *Hub) activeFaults(from, to float64) []FaultState {
	var out []FaultState
	for _, id := range h.order {
		f := h.faults[id]
		if f.InjectS < to && (f.ClearS == 0 || f.ClearS > from) {
			out = append(out, *f)
		}
	}
	return out
}

// addWindows is the recorder's window hook: it keeps the windows, writes
// their JSON lines, and tells the subscribers.
func (h *Hub) addWindows(ws []record.Window, series []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.windows = append(h.windows, ws...)
	h.series = series
	for i := range ws {
		h.writeLine(&ws[i])
	}
	for _, ch := range h.notify {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Windows returns a copy of the windows closed so far and the series names.
func (h *Hub) Windows() ([]record.Window, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]record.Window(nil), h.windows...), append([]string(nil), h.series...)
}
