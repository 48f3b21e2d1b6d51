package live

import (
	"math"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/faultbench/faultbench/internal/record"
)

// Namespace prefixes every metric name (docs/metrics.md).
const Namespace = "faultbench"

// LatencyBuckets are the classic buckets of the latency histogram, in
// seconds: Prometheus's defaults from 1 ms, plus the p_exceed thresholds
// of the analysis (0.1, 1, 2, 8, 10 s), so the endpoint can say what
// fraction exceeded each.
var LatencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 10, 20, 60}

// Outcome labels beyond the six outcomes: attempts the generator refused
// or cut short, which windows.csv counts as gen_refused and cut_short.
const (
	OutcomeRefused  = "refused"
	OutcomeCutShort = "cut_short"
)

// Metrics is the run's Prometheus registry: counters and a histogram fed
// per attempt (atomic adds, no lock), and a collector that reads the rest
// from the Hub when scraped.
type Metrics struct {
	reg      *prometheus.Registry
	requests [][][]prometheus.Counter // [node][client][outcome index]
	latency  [][]prometheus.Observer  // [node][client]
}

// outcomeLabels are the outcome label values by index: the six outcomes,
// then refused and cut_short.
func outcomeLabels() []string {
	var l []string
	for _, o := range record.Outcomes() {
		l = append(l, o.String())
	}
	return append(l, OutcomeRefused, OutcomeCutShort)
}

func newMetrics(h *Hub) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "requests_total",
		Help: "Request attempts recorded, by node, client emulator and outcome (refused and cut_short are the generator's, not the service's)."},
		[]string{"node", "client", "outcome"})
	hopts := prometheus.HistogramOpts{Namespace: Namespace, Name: "request_duration_seconds",
		Help: "Latency of measured attempts (every outcome), from the scheduled start, by node and client emulator.", Buckets: LatencyBuckets}
	if h.cfg.NativeHistograms {
		hopts.NativeHistogramBucketFactor = 1.1
		hopts.NativeHistogramMaxBucketNumber = 160
	}
	latency := prometheus.NewHistogramVec(hopts, []string{"node", "client"})
	labels := outcomeLabels()
	clients := max(h.cfg.Clients, 1)
	m.requests = make([][][]prometheus.Counter, h.cfg.Nodes+1)
	m.latency = make([][]prometheus.Observer, h.cfg.Nodes+1)
	for n := range m.requests {
		node := strconv.Itoa(n)
		m.requests[n] = make([][]prometheus.Counter, clients)
		for c := range clients {
			m.latency[n] = append(m.latency[n], latency.WithLabelValues(node, strconv.Itoa(c)))
			for _, o := range labels {
				m.requests[n][c] = append(m.requests[n][c], requests.WithLabelValues(node, strconv.Itoa(c), o))
			}
		}
	}
	m.reg.MustRegister(requests, latency, &hubCollector{h: h},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observe counts one recorded attempt (record.Follower.Request).
func (m *Metrics) observe(r *record.Request) {
	n, c := r.Node, r.Client
	if n < 0 || n >= len(m.requests) {
		n = 0
	}
	if c < 0 || c >= len(m.requests[n]) {
		c = 0
	}
	i := int(r.Outcome)
	switch {
	case r.Refused != record.NotRefused:
		i = record.NumOutcomes
	case r.CutShort:
		i = record.NumOutcomes + 1
	default:
		m.latency[n][c].Observe(r.LatencyS)
	}
	m.requests[n][c][i].Inc()
}

// Registry is the run's Prometheus registry (for the endpoint, and for
// tests that gather it directly).
func (h *Hub) Registry() *prometheus.Registry { return h.metrics.reg }

// hubCollector reads the Hub's state at scrape time.
type hubCollector struct{ h *Hub }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, labels, nil)
}

var (
	descInflight     = desc("inflight_attempts", "Attempts sent and not yet answered.")
	descInflightAge  = desc("inflight_oldest_age_seconds", "Age of the oldest attempt still in flight, from its scheduled start (0 when none is).")
	descTargetRate   = desc("target_requests_per_second", "The scenario's offered rate (0 for a closed loop).")
	descOfferedRate  = desc("window_offered_requests_per_second", "Attempts offered per second in the last closed window.")
	descOKRate       = desc("window_ok_requests_per_second", "Ok answers per second (achieved throughput) in the last closed window.")
	descWinLatency   = desc("window_latency_seconds", "Latency of the last closed window (windows.csv latency_*_s), by statistic.", "stat")
	descWinOutcome   = desc("window_requests", "Attempts of the last closed window, by outcome (windows.csv).", "outcome")
	descWinStart     = desc("window_start_seconds", "Run time at which the last closed window starts.")
	descWinClosed    = desc("windows_closed_total", "Windows closed so far.")
	descWinValid     = desc("window_valid", "1 when the last closed window is a valid measurement of the service (windows.csv valid).")
	descSystem       = desc("system_value", "A system's own series from windows.csv (e.g. redundancy, live bricks), last closed window.", "series")
	descFaultActive  = desc("fault_active", "1 while a fault of the schedule is in effect, 0 once cleared.", "id", "type", "target")
	descFaultsTotal  = desc("faults_injected_total", "Faults injected so far.")
	descOperator     = desc("operator_actions_total", "Operator model events so far, by kind (operator.detect, operator.action).", "kind")
	descPhase        = desc("phase", "1 for the phase the run is in, 0 for the others.", "phase")
	descElapsed      = desc("run_elapsed_seconds", "Run time since the first arrival.")
	descLength       = desc("run_length_seconds", "The planned length of the run.")
	descInfo         = desc("run_info", "The run, as labels; always 1.", "run_id", "scenario")
	descGuard        = desc("guard_state", "Each guard rule: 0 ok, 1 holding but not yet for its duration, 2 fired, 3 cannot be checked.", "rule")
	descAborted      = desc("aborted", "1 once a guard stopped the experiment.")
	descFinished     = desc("run_finished", "1 once the run has ended and every window is closed (the endpoint lingers for a final scrape).")
	winLatencyStats  = []string{"mean", "p50", "p90", "p99", "max"}
	guardStateValues = map[string]float64{"ok": 0, "pending": 1, "fired": 2, "error": 3}
)

// Describe sends nothing: the system series and the faults are known only
// as the run goes (an unchecked collector).
func (c *hubCollector) Describe(chan<- *prometheus.Desc) {}

// Collect reads the Hub.
func (c *hubCollector) Collect(ch chan<- prometheus.Metric) {
	h := c.h
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	n, age := h.InFlight()
	gauge(descInflight, float64(n))
	gauge(descInflightAge, age)
	gauge(descTargetRate, h.cfg.TargetRate)
	gauge(descElapsed, h.Now())
	gauge(descLength, h.cfg.LengthS)
	gauge(descInfo, 1, h.cfg.RunID, h.cfg.Name)
	phase := h.Phase()
	for _, p := range h.cfg.Phases {
		v := 0.0
		if p.Name == phase {
			v = 1
		}
		gauge(descPhase, v, p.Name)
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	counter(descWinClosed, float64(len(h.windows)))
	if k := len(h.windows); k > 0 {
		w := &h.windows[k-1]
		gauge(descWinStart, w.StartS)
		gauge(descOfferedRate, float64(w.Offered)/h.cfg.WindowS)
		gauge(descOKRate, w.ThroughputOK)
		valid := 0.0
		if w.Valid {
			valid = 1
		}
		gauge(descWinValid, valid)
		for i, v := range []float64{w.LatencyMean, w.LatencyP50, w.LatencyP90, w.LatencyP99, w.LatencyMax} {
			if !math.IsNaN(v) {
				gauge(descWinLatency, v, winLatencyStats[i])
			}
		}
		for _, o := range record.Outcomes() {
			gauge(descWinOutcome, float64(w.Outcomes[o]), o.String())
		}
		gauge(descWinOutcome, float64(w.GenRefused), OutcomeRefused)
		gauge(descWinOutcome, float64(w.CutShort), OutcomeCutShort)
		for _, s := range h.series {
			if v, ok := w.Series[s]; ok && !math.IsNaN(v) {
				gauge(descSystem, v, s)
			}
		}
	}
	for _, id := range h.order {
		f := h.faults[id]
		v := 1.0
		if f.ClearS > 0 {
			v = 0
		}
		target := ""
		if f.Node > 0 {
			target = "node" + strconv.Itoa(f.Node)
		}
		gauge(descFaultActive, v, strconv.Itoa(id), f.Type, target)
	}
	counter(descFaultsTotal, float64(len(h.order)))
	for _, k := range []string{"operator.detect", "operator.action"} {
		counter(descOperator, float64(h.actions[k]), k)
	}
	for _, g := range h.guards {
		gauge(descGuard, guardStateValues[g.State], g.Rule)
	}
	aborted := 0.0
	if h.aborted != nil {
		aborted = 1
	}
	gauge(descAborted, aborted)
	finished := 0.0
	if h.finished {
		finished = 1
	}
	gauge(descFinished, finished)
}
