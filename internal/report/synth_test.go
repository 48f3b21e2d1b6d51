package report

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/record"
)

// synth describes a synthetic run: a 4-node service at a fixed rate whose
// node 2 crashes during the fault phase. Everything derives from Seed, so
// the files are byte-identical on every call.
type synth struct {
	Name     string
	Seed     uint64
	Rate     float64 // attempts per second
	Phases   []float64
	WindowS  float64
	Fault    bool // inject app-crash on node 2 at the start of phase 2
	Summary  bool // write summary.json
	Parquet  bool // requests.parquet instead of requests.csv
	Windows  bool // write windows.csv
	Series   bool // a "redundancy" system series in windows.csv
	GapAfter float64
}

func (s synth) duration() float64 {
	var d float64
	for _, p := range s.Phases {
		d += p
	}
	return d
}

var phaseNames = []string{"warmup", "fault", "recovery", "post"}

// write creates the results directory dir.
func (s synth) write(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(s.Seed, 7))
	end := s.duration()
	faultAt, clearAt := s.Phases[0], s.Phases[0]+s.Phases[1]
	detectAt := faultAt + 0.7*s.Phases[1]

	var sink func(record.Request) error
	var closeSink func() error
	if s.Parquet {
		pw, err := record.CreateParquet(filepath.Join(dir, record.RequestsFile))
		if err != nil {
			t.Fatal(err)
		}
		sink, closeSink = pw.Write, pw.Close
	} else {
		f, err := os.Create(filepath.Join(dir, record.RequestsCSV))
		if err != nil {
			t.Fatal(err)
		}
		cw, err := record.NewCSVWriter(f)
		if err != nil {
			t.Fatal(err)
		}
		sink = cw.Write
		closeSink = func() error {
			if err := cw.Flush(); err != nil {
				return err
			}
			return f.Close()
		}
	}
	agg := record.NewWindowAggregator(s.WindowS, 20)
	step := 1 / s.Rate
	for i := 0; ; i++ {
		at := float64(i)*step + rng.Float64()*step*0.5
		if at >= end {
			break
		}
		if s.GapAfter > 0 && at > s.GapAfter && at < s.GapAfter+2*s.WindowS {
			continue // the emulator was paused: windows without attempts
		}
		node := 1 + i%4
		q := record.Request{StartS: at, Node: node, Client: i % 2, Bytes: 2048, Status: 200, Target: fmt.Sprintf("/p/%d", i%97),
			LatencyS: 0.004 * math.Exp(0.6*rng.NormFloat64()), Outcome: record.OK}
		down := s.Fault && at >= faultAt && at < clearAt
		switch {
		case down && node == 2 && at < detectAt:
			q.Outcome, q.LatencyS, q.Status, q.Bytes = record.ConnAbort, 2, 0, 0
		case down && node == 2:
			q.Outcome, q.LatencyS, q.Status, q.Bytes = record.ConnError, 0.001, 0, 0
		case down && rng.Float64() < 0.05:
			q.Outcome, q.LatencyS, q.Status, q.Bytes = record.Timeout, 8, 0, 0
		case down:
			q.LatencyS *= 3
		case s.Fault && at >= clearAt && at < clearAt+10 && rng.Float64() < 0.1:
			q.Outcome, q.Status, q.Bytes = record.HTTPError, 503, 0
		}
		if err := sink(q); err != nil {
			t.Fatal(err)
		}
		agg.Add(q)
	}
	if err := closeSink(); err != nil {
		t.Fatal(err)
	}
	if s.Series {
		for ts := 0.0; ts < end; ts += s.WindowS {
			v := 4.0
			if s.Fault && ts >= faultAt && ts < clearAt {
				v = 3
			}
			agg.AddSeries("redundancy", ts, v)
		}
	}
	windows := agg.Close(end)
	if s.Windows {
		var series []string
		if s.Series {
			series = []string{"redundancy"}
		}
		if err := record.WriteWindows(filepath.Join(dir, record.WindowsFile), windows, series); err != nil {
			t.Fatal(err)
		}
	}

	el, err := record.CreateEventLog(filepath.Join(dir, record.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	var at float64
	for i, d := range s.Phases {
		el.Add(record.Event{TS: at, Kind: "phase.start", Detail: phaseNames[i]})
		at += d
	}
	if s.Fault {
		el.Add(record.Event{TS: faultAt, Kind: "fault.inject", Node: 2, Fault: "app-crash", ID: 1})
		el.Add(record.Event{TS: detectAt, Kind: "operator.detect", Node: 2, Fault: "app-crash"})
		el.Add(record.Event{TS: detectAt + 1, Kind: "operator.action", Node: 2, Detail: "restart-failed node 2"})
		el.Add(record.Event{TS: clearAt, Kind: "fault.clear", Node: 2, Fault: "app-crash", ID: 1})
	}
	if err := el.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, record.ScenarioFile), []byte(s.scenarioYAML()), 0o644); err != nil {
		t.Fatal(err)
	}
	if s.Summary {
		s.writeSummary(t, dir, windows)
	}
}

func (s synth) scenarioYAML() string {
	y := fmt.Sprintf("name: %s\nseed: %d\ncluster: {system: press, mode: ha, nodes: 4}\n"+
		"workload: {driver: http, rate: %g, clients: 2, window: %gs}\nphases:\n", s.Name, s.Seed, s.Rate, s.WindowS)
	for i, d := range s.Phases {
		y += fmt.Sprintf("  - {name: %s, duration: %gs}\n", phaseNames[i], d)
	}
	if s.Fault {
		y += fmt.Sprintf("faults:\n  - {type: app-crash, node: 2, at: %gs, duration: %gs}\n", s.Phases[0], s.Phases[1])
	}
	return y + "thresholds: [\"p99 < 500ms\", \"goodput > 0.9\"]\n"
}

// writeSummary writes a plausible summary.json: the metrics the request log
// defines (computed as the report's own fallback does), plus a baseline, a
// fault with stages and thresholds, so every table and figure has data.
func (s synth) writeSummary(t testing.TB, dir string, windows []record.Window) {
	t.Helper()
	r := &run{Dir: dir, WindowS: s.WindowS, EndS: s.duration()}
	var err error
	if r.Events, err = record.ReadEvents(filepath.Join(dir, record.EventsFile)); err != nil {
		t.Fatal(err)
	}
	r.Periods = r.periods()
	if err := r.stream(); err != nil {
		t.Fatal(err)
	}
	sum := r.fallbackSummary()
	sum.Run.Name, sum.Run.Seed = s.Name, int64(s.Seed)
	var tp []float64
	for _, w := range windows {
		if w.StartS+s.WindowS <= s.Phases[0] && w.StartS >= s.WindowS {
			tp = append(tp, w.ThroughputOK)
		}
	}
	mean, sd := meanSD(tp)
	sum.Baseline = &analysis.Baseline{Source: "warmup", Windows: len(tp), Mean: mean, Stddev: sd, Low: mean - 2.576*sd, High: mean + 2.576*sd,
		LatencyMeanS: sum.Phases["warmup"].LatencyMeanS}
	ideal := float64(sum.Baseline.LatencyMeanS)
	fix := func(m *analysis.Metrics) {
		m.Punctuality = analysis.Float(ideal / float64(m.LatencyMeanS))
		m.Demerits = analysis.Float(2*float64(m.Outcomes["conn_abort"]) + float64(m.Outcomes["conn_error"]) + 8*float64(m.Outcomes["timeout"]))
		m.LatencyTrimmedMeanS = m.LatencyP50S
		m.Outliers3SigmaFrac = 0.01
	}
	fix(&sum.Overall)
	for n, m := range sum.Phases {
		fix(&m)
		sum.Phases[n] = m
	}
	if s.Fault {
		faultAt, clearAt := s.Phases[0], s.Phases[0]+s.Phases[1]
		f := sum.Phases["fault"]
		sum.Failure = &f
		sum.Deviations = []analysis.Deviation{{StartS: faultAt, LengthS: s.Phases[1], Depth: s.Rate / 4, Area: s.Rate / 4 * s.Phases[1]}}
		st := map[string]analysis.Stage{}
		durs := []float64{0.7 * s.Phases[1], 0, 0, 0.3 * s.Phases[1], 0, 10, 0}
		levels := []float64{0.75 * s.Rate, 0, 0, 0.75 * s.Rate, 0, 0.9 * s.Rate, s.Rate}
		for i, n := range stageNames {
			st[n] = analysis.Stage{DurationS: durs[i], Throughput: analysis.Float(levels[i]), Measured: i != 5}
		}
		sum.Faults = []analysis.FaultResult{{Type: "app-crash", Node: 2, InjectS: faultAt, ClearS: analysis.Float(clearAt),
			FaultDurationS: analysis.Float(s.Phases[1]), FailureDurationS: analysis.Float(s.Phases[1] + 10), Class: "C-1", Stages: st}}
	} else {
		sum.Deviations = []analysis.Deviation{}
	}
	sum.Thresholds = []analysis.ThresholdResult{
		{Expr: "p99 < 500ms", Value: sum.Overall.LatencyP99S, Passed: float64(sum.Overall.LatencyP99S) < 0.5},
		{Expr: "goodput > 0.9", Value: sum.Overall.Goodput, Passed: float64(sum.Overall.Goodput) > 0.9},
	}
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, record.SummaryFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func meanSD(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	var s, q float64
	for _, x := range xs {
		s += x
	}
	m := s / float64(len(xs))
	for _, x := range xs {
		q += (x - m) * (x - m)
	}
	return m, math.Sqrt(q / float64(len(xs)))
}
