package report

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/knee"
	"github.com/faultbench/faultbench/internal/provenance"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
)

// run is one results directory, loaded and reduced to what the report draws.
type run struct {
	Dir   string
	Label string // short unique name used in legends and tables

	Summary  *analysis.Summary // nil when summary.json is absent or unreadable
	Scenario *scenario.Scenario
	YAML     string // scenario.yaml as stored, shown verbatim

	Windows []record.Window
	Series  []string // system metric series in windows.csv
	WindowS float64
	EndS    float64 // run duration

	Events []record.Event
	Knee   []knee.Step // knee.csv: the knee search before the run, if any
	// KneeBounds holds the bounds (Goodput, P99) its steps were judged by.
	KneeBounds knee.Config
	Periods    []period // phases in order, then "failure" when known, then "overall"
	Faults     []faultSpan

	// Notes say what was missing or recomputed, in the order found.
	Notes []string
}

// period is a stretch of the run whose attempts form one latency distribution.
type period struct {
	Name       string
	StartS     float64
	EndS       float64
	Phase      bool // a scenario phase (not failure/overall)
	Hist       *hdrhistogram.Histogram
	Attempts   int64 // measured attempts (record.Request.Measured)
	Outcomes   [record.NumOutcomes]int64
	LatencySum float64
	LatencySq  float64
	GenRefused int64 // arrivals the generator refused, apart from Attempts
	CutShort   int64 // attempts cut short, apart from Attempts
}

func (p *period) contains(t float64) bool { return t >= p.StartS && t < p.EndS }

// faultSpan is one injected fault on the timeline.
type faultSpan struct {
	Type    string
	Node    int
	InjectS float64
	ClearS  float64 // NaN: never cleared
}

// unplanned reports whether nobody injected the fault (a node that exited
// on its own).
func (f faultSpan) unplanned() bool { return f.Type == analysis.UnplannedFault }

// color is the colour of the fault's marks and labels.
func (f faultSpan) color() color.Color {
	if f.unplanned() {
		return okabePurple
	}
	return okabeVermilion
}

func (f faultSpan) label() string {
	if f.Node > 0 {
		return fmt.Sprintf("%s n%d", f.Type, f.Node)
	}
	return f.Type
}

// Period names that are not phases.
const (
	periodOverall = "overall"
	periodFailure = "failure"
)

// loadRun reads every file of dir and streams its requests once. Missing
// optional files become notes; unreadable required ones are errors naming
// the file.
func loadRun(dir string) (*run, error) {
	r := &run{Dir: dir}
	if err := r.loadSummary(); err != nil {
		return nil, err
	}
	r.loadScenario()
	var err error
	if r.Events, err = record.ReadEvents(filepath.Join(dir, record.EventsFile)); err != nil {
		return nil, err
	}
	sort.SliceStable(r.Events, func(i, j int) bool { return r.Events[i].TS < r.Events[j].TS })
	winPath := filepath.Join(dir, record.WindowsFile)
	if r.Windows, r.Series, err = record.ReadWindows(winPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	r.WindowS = r.windowLength()
	r.EndS = r.duration()
	r.Periods = r.periods()
	r.Faults = r.faults()
	if err := r.loadKnee(); err != nil {
		return nil, err
	}
	if err := r.stream(); err != nil {
		return nil, err
	}
	r.addKVSeries()
	if r.Summary == nil {
		r.Summary = r.fallbackSummary()
	}
	r.Label = r.name()
	return r, nil
}

func (r *run) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

func (r *run) loadSummary() error {
	path := filepath.Join(r.Dir, record.SummaryFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		r.analyzeNow()
		return nil
	}
	if err != nil {
		return err
	}
	s, err := analysis.Decode(b)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	r.Summary = s
	r.noteIncomplete()
	for _, n := range s.Notes {
		r.note("%s", n)
	}
	return nil
}

// noteIncomplete says, for a run that was cut, what was cut.
func (r *run) noteIncomplete() {
	if r.Summary == nil || r.Summary.Complete {
		return
	}
	if why := r.Summary.IncompleteReason; why != "" {
		r.note("The run is incomplete: %s.", why)
		return
	}
	r.note("The run was interrupted: %s says complete=false.", record.SummaryFile)
}

// analyze computes a summary for a directory without summary.json; a
// variable so tests can exercise the report's own fallback.
var analyze = analysis.Analyze

// analyzeNow computes the summary the run lacks, in memory only: a report
// never writes its inputs. When analysis fails, the report falls back to
// what the request log alone defines.
func (r *run) analyzeNow() {
	if analyze != nil {
		s, err := analyze(r.Dir, analysis.Options{Complete: true})
		if err == nil {
			r.note("%s is missing: the metrics below were computed now, as `faultbench analyze %s` would (run it to save them).", record.SummaryFile, r.Dir)
			r.Summary = s
			r.noteIncomplete()
			for _, n := range s.Notes {
				r.note("%s", n)
			}
			return
		}
		r.note("%s is missing and analysis failed (%s).", record.SummaryFile, firstLine(err.Error()))
	} else {
		r.note("%s is missing.", record.SummaryFile)
	}
	r.note("The metrics below are computed from the request log alone; baseline band, punctuality, demerits, classes and stages are unavailable (run `faultbench analyze %s`).", r.Dir)
}

func (r *run) loadScenario() {
	path := filepath.Join(r.Dir, record.ScenarioFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return // requests.csv from another tool: no scenario, one phase "all"
	}
	r.YAML = string(b)
	sc, err := scenario.Parse(b, path)
	if err != nil {
		r.note("%s does not load (%v); phases and faults come from the other files.", record.ScenarioFile, firstLine(err.Error()))
		return
	}
	r.Scenario = sc
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func (r *run) name() string {
	switch {
	case r.Summary != nil && r.Summary.Run.Name != "":
		return r.Summary.Run.Name
	case r.Scenario != nil && r.Scenario.Name != "":
		return r.Scenario.Name
	}
	return filepath.Base(filepath.Clean(r.Dir))
}

func (r *run) windowLength() float64 {
	if r.Summary != nil && r.Summary.Run.WindowS > 0 {
		return r.Summary.Run.WindowS
	}
	if len(r.Windows) > 1 && r.Windows[1].StartS > r.Windows[0].StartS {
		return r.Windows[1].StartS - r.Windows[0].StartS
	}
	if r.Scenario != nil && r.Scenario.Workload.Window.Seconds() > 0 {
		return r.Scenario.Workload.Window.Seconds()
	}
	return 5
}

func (r *run) duration() float64 {
	if r.Summary != nil && r.Summary.Run.DurationS > 0 {
		return r.Summary.Run.DurationS
	}
	if r.Scenario != nil {
		var d float64
		for _, p := range r.Scenario.Phases {
			d += p.Duration.Seconds()
		}
		if d > 0 {
			return d
		}
	}
	if n := len(r.Windows); n > 0 {
		return r.Windows[n-1].StartS + r.WindowS
	}
	return math.Inf(1) // known after streaming
}

// periods finds the phases from, in order of trust, summary.json, the
// phase.start events, scenario.yaml; else the whole run is one phase "all".
func (r *run) periods() []period {
	var out []period
	add := func(name string, start, end float64) {
		out = append(out, period{Name: name, StartS: start, EndS: end, Phase: true, Hist: record.NewLatencyHistogram()})
	}
	switch {
	case r.Summary != nil && len(r.Summary.PhaseOrder) > 0:
		for _, n := range r.Summary.PhaseOrder {
			m := r.Summary.Phases[n]
			add(n, m.StartS, m.EndS)
		}
	case hasPhaseEvents(r.Events):
		for _, e := range r.Events {
			if e.Kind == "phase.start" {
				if n := len(out); n > 0 {
					out[n-1].EndS = e.TS
				}
				add(phaseName(e), e.TS, r.EndS)
			}
		}
	case r.Scenario != nil && len(r.Scenario.Phases) > 0:
		var t float64
		for _, p := range r.Scenario.Phases {
			add(p.Name, t, t+p.Duration.Seconds())
			t += p.Duration.Seconds()
		}
	default:
		add("all", 0, math.Inf(1))
	}
	// Attempts after the last phase's nominal end (stragglers) still belong to it.
	out[len(out)-1].EndS = math.Inf(1)
	if r.Summary != nil && r.Summary.Failure != nil {
		f := r.Summary.Failure
		out = append(out, period{Name: periodFailure, StartS: f.StartS, EndS: f.EndS, Hist: record.NewLatencyHistogram()})
	}
	out = append(out, period{Name: periodOverall, StartS: math.Inf(-1), EndS: math.Inf(1), Hist: record.NewLatencyHistogram()})
	return out
}

func hasPhaseEvents(evs []record.Event) bool {
	for _, e := range evs {
		if e.Kind == "phase.start" {
			return true
		}
	}
	return false
}

func phaseName(e record.Event) string {
	if e.Detail != "" {
		return e.Detail
	}
	return fmt.Sprintf("phase@%gs", e.TS)
}

// faults pairs fault.inject with fault.clear events (by ID, else by type and
// node in order); without events it takes summary.json's faults.
func (r *run) faults() []faultSpan {
	var out []faultSpan
	open := map[string][]int{} // key → indexes of uncleared spans
	key := func(e record.Event) string {
		if e.ID != 0 {
			return fmt.Sprintf("#%d", e.ID)
		}
		return fmt.Sprintf("%s/%d", e.Fault, e.Node)
	}
	for _, e := range r.Events {
		switch e.Kind {
		case "fault.inject":
			open[key(e)] = append(open[key(e)], len(out))
			out = append(out, faultSpan{Type: e.Fault, Node: e.Node, InjectS: e.TS, ClearS: math.NaN()})
		case "fault.clear":
			if q := open[key(e)]; len(q) > 0 {
				out[q[0]].ClearS = e.TS
				open[key(e)] = q[1:]
			}
		}
	}
	if len(out) == 0 && r.Summary != nil {
		for _, f := range r.Summary.Faults {
			out = append(out, faultSpan{Type: f.Type, Node: f.Node, InjectS: f.InjectS, ClearS: float64(f.ClearS)})
		}
	}
	return out
}

// stream reads the request log once, filling every period's distribution
// and, when windows.csv is missing, rebuilding the windows.
func (r *run) stream() error {
	var agg *record.WindowAggregator
	// A cut run's windows.csv ends with the last window settled before the
	// cut; the rest is rebuilt from the request log below.
	cut := r.Summary != nil && !r.Summary.Complete
	if r.Windows == nil || cut {
		agg = record.NewWindowAggregator(r.WindowS, 60)
	}
	var maxStart float64
	err := record.ReadRequests(r.Dir, func(q record.Request) error {
		for i := range r.Periods {
			p := &r.Periods[i]
			if !p.contains(q.StartS) {
				continue
			}
			// The generator's own rows are not the service's outcomes.
			if q.Refused != record.NotRefused {
				p.GenRefused++
				continue
			}
			if q.CutShort {
				p.CutShort++
				continue
			}
			record.RecordLatency(p.Hist, q.LatencyS)
			p.Attempts++
			p.Outcomes[q.Outcome]++
			p.LatencySum += q.LatencyS
			p.LatencySq += q.LatencyS * q.LatencyS
		}
		if agg != nil {
			agg.Add(q)
		}
		maxStart = math.Max(maxStart, q.StartS)
		return nil
	})
	if err != nil {
		return err
	}
	if math.IsInf(r.EndS, 1) {
		r.EndS = math.Ceil(maxStart/r.WindowS) * r.WindowS
	}
	switch {
	case agg == nil:
	case r.Windows == nil:
		r.Windows = agg.Close(r.EndS)
		r.note("%s is missing: windows were rebuilt from the request log.", record.WindowsFile)
	default:
		if rebuilt := agg.Close(r.EndS); len(rebuilt) > len(r.Windows) {
			r.note("%s ends at %.1f s, before the record: later windows were rebuilt from the request log.", record.WindowsFile, float64(len(r.Windows))*r.WindowS)
			for _, w := range rebuilt[len(r.Windows):] {
				w.Series = map[string]float64{}
				for _, name := range r.Series {
					w.Series[name] = math.NaN() // no sample survived the cut
				}
				r.Windows = append(r.Windows, w)
			}
		}
	}
	return nil
}

// phases returns the periods that are scenario phases.
func (r *run) phases() []period {
	var out []period
	for _, p := range r.Periods {
		if p.Phase {
			out = append(out, p)
		}
	}
	return out
}

func (r *run) period(name string) *period {
	for i := range r.Periods {
		if r.Periods[i].Name == name {
			return &r.Periods[i]
		}
	}
	return nil
}

// phaseBounds returns a phase's start and end, clipped to the run.
func (r *run) phaseBounds(p period) (float64, float64) {
	return math.Max(p.StartS, 0), math.Min(p.EndS, r.EndS)
}

// metrics returns summary.json's metrics of a period (nil when it has none).
func (r *run) metrics(name string) *analysis.Metrics {
	s := r.Summary
	switch name {
	case periodOverall:
		return &s.Overall
	case periodFailure:
		return s.Failure
	}
	if m, ok := s.Phases[name]; ok {
		return &m
	}
	return nil
}

// fallbackSummary computes what the request log alone defines, so a run
// without summary.json still gets its tables; the rest stays NaN ("–").
func (r *run) fallbackSummary() *analysis.Summary {
	s := &analysis.Summary{SchemaVersion: provenance.SchemaVersion, Complete: true, Phases: map[string]analysis.Metrics{}}
	s.Run.Name = ""
	s.Run.DurationS = r.EndS
	s.Run.WindowS = r.WindowS
	if r.Scenario != nil {
		s.Run.Seed = r.Scenario.Seed
	}
	for _, p := range r.Periods {
		start, end := r.phaseBounds(p)
		if p.Name == periodOverall {
			start, end = 0, r.EndS
		}
		m := periodMetrics(p, end-start)
		m.StartS, m.EndS = start, end
		for _, w := range r.Windows {
			if !w.Valid && w.StartS >= start-1e-9 && w.StartS < end-1e-9 {
				m.InvalidWindows++
			}
		}
		if p.Name == periodOverall {
			s.Overall = m
			s.Run.Attempts = p.Attempts + p.GenRefused + p.CutShort
			continue
		}
		s.Phases[p.Name] = m
		s.PhaseOrder = append(s.PhaseOrder, p.Name)
	}
	return s
}

func periodMetrics(p period, seconds float64) analysis.Metrics {
	n := float64(p.Attempts)
	m := analysis.Metrics{Attempts: p.Attempts, Outcomes: map[string]int64{}, PExceed: map[string]analysis.Float{}}
	for _, o := range record.Outcomes() {
		m.Outcomes[o.String()] = p.Outcomes[o]
	}
	m.ThroughputTotal = p.Outcomes[record.OK]
	m.GenRefused, m.CutShort = p.GenRefused, p.CutShort
	m.Arrivals = p.Attempts + p.GenRefused + p.CutShort
	nan := analysis.NaN
	m.SendLagP99S, m.SendLagMaxS = nan, nan
	m.ThroughputMeanPerS, m.OfferedPerS, m.LatencyTotalS = nan, nan, analysis.Float(p.LatencySum)
	m.LatencyMeanS, m.LatencyTrimmedMeanS, m.LatencyStddevS = nan, nan, nan
	m.LatencyP50S, m.LatencyP90S, m.LatencyP99S, m.LatencyP999S, m.LatencyMaxS = nan, nan, nan, nan, nan
	m.Goodput, m.Punctuality, m.Yield, m.Demerits, m.Outliers3SigmaFrac, m.LatencyMaxTrimmed1pc = nan, nan, nan, nan, nan, nan
	if seconds > 0 {
		m.ThroughputMeanPerS = analysis.Float(float64(m.ThroughputTotal) / seconds)
		m.OfferedPerS = analysis.Float(n / seconds)
	}
	for _, t := range pExceedKeys {
		m.PExceed[t.key] = nan
	}
	if p.Attempts == 0 {
		return m
	}
	mean := p.LatencySum / n
	m.LatencyMeanS = analysis.Float(mean)
	m.LatencyStddevS = analysis.Float(math.Sqrt(math.Max(0, p.LatencySq/n-mean*mean)))
	q := func(pct float64) analysis.Float { return analysis.Float(float64(p.Hist.ValueAtPercentile(pct)) / 1e6) }
	m.LatencyP50S, m.LatencyP90S, m.LatencyP99S, m.LatencyP999S = q(50), q(90), q(99), q(99.9)
	m.LatencyMaxS = analysis.Float(float64(p.Hist.Max()) / 1e6)
	m.LatencyMaxTrimmed1pc = m.LatencyP99S
	m.Yield = analysis.Float(float64(m.ThroughputTotal) / n)
	m.Goodput = m.Yield // ok/s over offered/s of the same period
	for _, t := range pExceedKeys {
		m.PExceed[t.key] = analysis.Float(fractionAbove(p.Hist, t.seconds))
	}
	return m
}

// pExceedKeys are the thresholds of p_exceed (docs/metrics.md) in order.
var pExceedKeys = []struct {
	key     string
	seconds float64
}{{"0.1", 0.1}, {"1", 1}, {"2", 2}, {"8", 8}, {"10", 10}}

// fractionAbove is the fraction of h's values above t seconds.
func fractionAbove(h *hdrhistogram.Histogram, t float64) float64 {
	total := h.TotalCount()
	if total == 0 {
		return math.NaN()
	}
	limit := int64(math.Round(t * 1e6))
	var above int64
	for _, b := range h.Distribution() {
		if b.Count > 0 && b.From > limit {
			above += b.Count
		}
	}
	return float64(above) / float64(total)
}
