package live

import (
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
)

// Relay is a sweep's live endpoint (faultbench sweep --metrics/--ui): one
// address for all of its runs, each followed by a Hub of its own exactly
// as `faultbench run` follows one.
//
// The page and /state.json follow the run under way (and say where it
// stands in the sweep). /metrics serves every series of the run under
// way, and the counters of every run that has ended (requests, the
// latency histogram, windows closed, faults injected, operator actions,
// with run_info, run_finished and aborted) until the sweep ends. Every
// faultbench_ series of a run carries the labels config (cfg-NNNN) and
// run (cfg-NNNN-rR): the runs' series never mix, and a scrape at any
// moment agrees with the windows.csv of every run that has ended, however
// far apart the scrapes are. A run's gauges (in flight, last window,
// phase, faults active, guard state) leave with it: they describe a
// present it no longer has.
//
// Attach and Finish are called by the sweep's goroutine; the handler's by
// the server's. All methods are safe for concurrent use.
type Relay struct {
	name string
	reg  *prometheus.Registry // the controller's go_* and process_* series, and the sweep's own

	mu       sync.Mutex
	cur      *Hub
	kept     []prometheus.Gatherer // what stays of each run before cur
	finished bool
}

// NewRelay makes the endpoint of the sweep named name.
func NewRelay(name string) *Relay {
	r := &Relay{name: name, reg: prometheus.NewRegistry()}
	r.reg.MustRegister(&relayCollector{r: r},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Attach makes h, whose Config.Position is set, the run under way. The
// run before it (ended: Attach comes from the next run's start) keeps its
// counters on the endpoint.
func (r *Relay) Attach(h *Hub) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != nil {
		r.kept = append(r.kept, keptOf(r.cur))
	}
	r.cur = h
}

// Finish marks the sweep as ended: the page stops polling.
func (r *Relay) Finish() {
	r.mu.Lock()
	r.finished = true
	r.mu.Unlock()
}

// Handler is the sweep's /metrics, / and /state.json.
func (r *Relay) Handler() http.Handler {
	return handler(r, func() any { return r.State() })
}

// Serve serves r on l until Close.
func (r *Relay) Serve(l net.Listener) *Server { return serve(l, r.Handler()) }

// Gather is prometheus.Gatherer: the controller's and the sweep's series,
// what stays of the runs that ended, and the run under way, labelled.
func (r *Relay) Gather() ([]*dto.MetricFamily, error) {
	r.mu.Lock()
	gs := append(prometheus.Gatherers{r.reg}, r.kept...)
	cur := r.cur
	r.mu.Unlock()
	if cur != nil {
		gs = append(gs, prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
			return runFamilies(cur, func(string) bool { return true })
		}))
	}
	return gs.Gather()
}

// State is what the sweep's page draws: the run under way (nothing before
// the first), with the sweep's progress.
func (r *Relay) State() State {
	r.mu.Lock()
	h, finished := r.cur, r.finished
	r.mu.Unlock()
	s := State{Name: r.name, Windows: []stateWindow{}}
	if h != nil {
		s = h.State()
	}
	if s.Sweep == nil {
		s.Sweep = &SweepState{Position: Position{Sweep: r.name}}
	}
	s.Sweep.Finished = finished
	return s
}

// keptAfterRun are the families that stay on a sweep's endpoint once their
// run has ended: facts about the whole run, true for good.
var keptAfterRun = map[string]bool{}

func init() {
	for _, n := range []string{"requests_total", "request_duration_seconds", "windows_closed_total", "faults_injected_total",
		"operator_actions_total", "run_info", "run_finished", "aborted"} {
		keptAfterRun[Namespace+"_"+n] = true
	}
}

// keptOf gathers, once, what stays of h's run (which has ended, so the
// figures are final).
func keptOf(h *Hub) prometheus.Gatherer {
	fams, err := runFamilies(h, func(name string) bool { return keptAfterRun[name] })
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return fams, err })
}

// runFamilies gathers h's faultbench_ families that keep allows, each
// series labelled with h's config and run. The controller's go_* and
// process_* series are the Relay's own, served once.
func runFamilies(h *Hub, keep func(name string) bool) ([]*dto.MetricFamily, error) {
	fams, err := h.Registry().Gather()
	if err != nil {
		return nil, err
	}
	var extra []*dto.LabelPair
	if p := h.cfg.Position; p != nil {
		extra = labelPairs("config", p.ConfigID, "run", p.Run)
	}
	var out []*dto.MetricFamily
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), Namespace+"_") || !keep(f.GetName()) {
			continue
		}
		for _, m := range f.Metric {
			// A vector's label pairs are shared with the metric itself:
			// build a new slice, never append to it.
			ls := append(append(make([]*dto.LabelPair, 0, len(m.Label)+len(extra)), m.Label...), extra...)
			slices.SortFunc(ls, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
			m.Label = ls
		}
		out = append(out, f)
	}
	return out, nil
}

func labelPairs(kv ...string) []*dto.LabelPair {
	var out []*dto.LabelPair
	for i := 0; i+1 < len(kv); i += 2 {
		name, value := kv[i], kv[i+1]
		out = append(out, &dto.LabelPair{Name: &name, Value: &value})
	}
	return out
}

var (
	descSweepInfo     = desc("sweep_info", "The sweep, as a label; always 1.", "sweep")
	descSweepRuns     = desc("sweep_runs", "Runs the sweep holds (configurations x repetitions).")
	descSweepRun      = desc("sweep_run", "The run under way (or the last), 1-based, of sweep_runs.")
	descSweepConfigs  = desc("sweep_configurations", "Configurations the sweep holds.")
	descSweepFinished = desc("sweep_finished", "1 once the sweep has ended (the endpoint lingers for a final scrape).")
)

// relayCollector reads the sweep's own series from the Relay.
type relayCollector struct{ r *Relay }

func (c *relayCollector) Describe(chan<- *prometheus.Desc) {}

func (c *relayCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.r
	r.mu.Lock()
	h, finished := r.cur, r.finished
	r.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descSweepInfo, 1, r.name)
	if h != nil && h.cfg.Position != nil {
		p := h.cfg.Position
		gauge(descSweepRuns, float64(p.Runs))
		gauge(descSweepRun, float64(p.Index))
		gauge(descSweepConfigs, float64(p.Configs))
	}
	v := 0.0
	if finished {
		v = 1
	}
	gauge(descSweepFinished, v)
}
