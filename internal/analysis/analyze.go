package analysis

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/faultbench/faultbench/internal/provenance"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
)

// Options configure Analyze.
type Options struct {
	// BaselineDir is a fault-free run whose settled windows form the
	// baseline band (--baseline); empty: the run's own baseline phase.
	BaselineDir string
	// Complete is copied to Summary.Complete; the runner passes false for
	// an interrupted run, which also makes the run end where the record ends.
	Complete bool
	// Scenario overrides DIR/scenario.yaml; nil loads it when present.
	Scenario *scenario.Scenario
	// BaselineWindow, when set, is the fault-free stretch of the run's own
	// record whose complete windows form the band (--baseline-window),
	// instead of the scenario's baseline phase. Exclusive with BaselineDir.
	BaselineWindow *Span
	// Judge is how a window is held against the band: JudgeThroughput or
	// JudgeGoodput (--judge); empty: DefaultJudge of the scenario.
	Judge string
}

// Span is a stretch [StartS, EndS) of the run clock, in seconds.
type Span struct{ StartS, EndS float64 }

// Validate checks that s is a non-empty stretch at or after 0.
func (s Span) Validate() error {
	if math.IsNaN(s.StartS) || math.IsNaN(s.EndS) || s.StartS < 0 || math.IsInf(s.EndS, 0) || s.EndS <= s.StartS {
		return fmt.Errorf("baseline window %g:%g: want 0 <= START < END, in seconds of the run", s.StartS, s.EndS)
	}
	return nil
}

// selfBaselineNote is the note of a summary whose band came from the whole
// record, faults and all.
const selfBaselineNote = "no fault-free period was known (no scenario, no --baseline run, no --baseline-window), so the whole record was its own baseline: " +
	"punctuality near 1.000 and an empty list of deviations mean nothing here; give --baseline-window START:END or --baseline DIR"

// ErrBadInput is wrapped by every error Analyze returns because of the
// results directory's content (missing, truncated or malformed files), as
// opposed to failures of the machine.
var ErrBadInput = errors.New("bad input")

// DefaultWindowS is the window length when no scenario says otherwise.
const DefaultWindowS = 5.0

// Result is everything Analyze computes: the Summary plus the per-period
// data figures need. Callers own it; nothing in it is shared.
type Result struct {
	Summary *Summary
	WindowS float64
	// Windows is the window series: counts and throughput recomputed from
	// the requests; latency percentiles and system series from windows.csv
	// when present, else recomputed (µs HDR, as the recorder does).
	Windows []record.Window
	Series  []string // names of the system metric series in Windows
	Events  []record.Event
	// Latency distributions per period, for box plots and CDFs.
	Overall *Distribution
	Phases  map[string]*Distribution
	Failure *Distribution // nil when Summary.Failure is nil
}

// Analyze reads the results directory dir and computes its Summary.
func Analyze(dir string, opts Options) (*Summary, error) {
	res, err := AnalyzeDetail(dir, opts)
	if err != nil {
		return nil, err
	}
	return res.Summary, nil
}

func badInput(err error) error {
	if err == nil || errors.Is(err, ErrBadInput) {
		return err
	}
	return badInputError{err}
}

// badInputError matches ErrBadInput but prints only what was wrong.
type badInputError struct{ err error }

func (e badInputError) Error() string   { return e.err.Error() }
func (e badInputError) Unwrap() []error { return []error{ErrBadInput, e.err} }

type phaseSpan struct {
	name       string
	start, end float64
}

// winStat is one window's attempts: the measured ones (outcomes, mom) and
// what the generator refused or cut short.
type winStat struct {
	outcomes [record.NumOutcomes]int64
	mom      moments
	refused  int64
	cutShort int64
	lagMax   float64 // largest send lag of an attempt sent; NaN if none
	invalid  bool    // not a valid measurement of the service (record.Window.Judge)
}

// runData is what pass 1 learns about a directory's requests.
type runData struct {
	wins     []winStat
	maxStart float64
	attempts int64
}

// maxWindows bounds the window series (116 days of 5 s windows, 160 MB):
// a start time beyond it is a data error, not a reason to exhaust memory.
const maxWindows = 1 << 21

func (d *runData) addWindow(r *record.Request, w float64) {
	d.add(int(r.StartS/w), r.StartS, r.LatencyS, r.SendLagS, r.Outcome, r.Refused, r.CutShort)
}

// checkRequest rejects what no recorder writes; w is the window length.
func checkRequest(r *record.Request, w float64) error {
	return checkValues(r.StartS, r.LatencyS, r.SendLagS, r.Outcome, w)
}

// checkValues is checkRequest of a request's start, latency, send lag
// and outcome.
func checkValues(start, lat, lag float64, out record.Outcome, w float64) error {
	if valid(start, lat, lag, out, w) {
		return nil
	}
	return invalid(start, lat, lag, out, w)
}

// valid is checkValues without the error: small enough to be inlined in
// the scans' loops.
func valid(start, lat, lag float64, out record.Outcome, w float64) bool {
	return start >= 0 && start/w < maxWindows && lat >= 0 && lat <= math.MaxFloat64 && lag >= 0 && lag <= math.MaxFloat64 && int(out) < record.NumOutcomes
}

// invalid says what checkValues rejects.
func invalid(start, lat, lag float64, out record.Outcome, w float64) error {
	if !(start >= 0 && start <= math.MaxFloat64) {
		return fmt.Errorf("t_start_s %v is not a non-negative number", start)
	}
	if start/w >= maxWindows {
		return fmt.Errorf("t_start_s %v is more than %d windows of %g s after the start of the run", start, maxWindows, w)
	}
	if !(lat >= 0 && lat <= math.MaxFloat64) {
		return fmt.Errorf("latency_s %v is not a non-negative number", lat)
	}
	if !(lag >= 0 && lag <= math.MaxFloat64) {
		return fmt.Errorf("send_lag_s %v is not a non-negative number", lag)
	}
	if int(out) >= record.NumOutcomes {
		return fmt.Errorf("unknown outcome %d", out)
	}
	return nil
}

func loadScenario(dir string) (*scenario.Scenario, error) {
	path := filepath.Join(dir, record.ScenarioFile)
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	sc, err := scenario.Load(path)
	if err != nil {
		return nil, badInput(err)
	}
	return sc, nil
}

// AnalyzeDetail is Analyze that also returns the window series and the
// latency distributions of every period.
func AnalyzeDetail(dir string, opts Options) (*Result, error) {
	if info, err := os.Stat(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, badInput(fmt.Errorf("%s: no such results directory", dir))
		}
		return nil, badInput(err)
	} else if !info.IsDir() {
		return nil, badInput(fmt.Errorf("%s is not a directory", dir))
	}
	if err := checkJudge(opts.Judge); err != nil {
		return nil, badInput(err)
	}
	if opts.BaselineWindow != nil {
		if opts.BaselineDir != "" {
			return nil, badInput(errors.New("a baseline run and a baseline window exclude each other: give one"))
		}
		if err := opts.BaselineWindow.Validate(); err != nil {
			return nil, badInput(err)
		}
	}
	prov, err := provenance.Read(dir)
	if err != nil {
		return nil, badInput(err)
	}
	sc := opts.Scenario
	if sc == nil {
		var err error
		if sc, err = loadScenario(dir); err != nil {
			return nil, err
		}
	}
	events, err := record.ReadEvents(filepath.Join(dir, record.EventsFile))
	if err != nil {
		return nil, badInput(err)
	}
	// The files say whether the run ended cleanly, whatever the caller
	// believes: a killed controller left no summary to say so.
	state, err := record.RunState(dir)
	if err != nil {
		return nil, badInput(err)
	}
	incompleteReason := state.Reason
	if !state.Complete {
		opts.Complete = false
	} else if !opts.Complete {
		incompleteReason = "the run was interrupted before its planned end"
	}
	aborted := abortOf(events)
	if aborted != nil {
		opts.Complete = false
		incompleteReason = fmt.Sprintf("stopped by the steady-state guard: %s held at %.1f s; every fault was reverted and the load kept for the cooldown", aborted.By, aborted.AtS)
	}
	w := DefaultWindowS
	if sc != nil && sc.Workload.Window.Duration > 0 {
		w = sc.Workload.Window.Seconds()
	}
	var csvWindows []record.Window
	var seriesNames []string
	if _, err := os.Stat(filepath.Join(dir, record.WindowsFile)); err == nil {
		if csvWindows, seriesNames, err = record.ReadWindows(filepath.Join(dir, record.WindowsFile)); err != nil {
			return nil, badInput(err)
		}
	}

	// Phases: the scenario's, consecutive from 0; else one phase "all".
	var phases []phaseSpan
	if sc != nil {
		t := 0.0
		for _, p := range sc.Phases {
			phases = append(phases, phaseSpan{p.Name, t, t + p.Duration.Seconds()})
			t += p.Duration.Seconds()
		}
	}
	if len(phases) == 0 {
		phases = []phaseSpan{{"all", 0, math.Inf(1)}}
	}
	// Pass 1: windows, and moments, histograms and exceedances per period.
	var quant *windowQuantiles
	// A cut run's windows.csv holds only the windows settled before the
	// cut: the others' percentiles are recomputed from the requests.
	if csvWindows == nil || !state.Complete {
		horizon := 60.0
		if sc != nil {
			horizon = sc.Workload.ConnectTimeout.Seconds() + sc.Workload.ResponseTimeout.Seconds() + 2*w
		}
		quant = newWindowQuantiles(w, horizon)
	}
	workers := scanWorkers()
	units, err := recordUnits(dir)
	if err != nil {
		return nil, badInput(err)
	}
	first := newFirstPass(w, phases, quant, workers, len(units))
	if err := first.scan(workers).runUnits(units); err != nil {
		return nil, badInput(err)
	}
	first.finish()
	data, overall, phaseAcc := first.data, first.overall, first.phase

	// Where the run ends: the scenario's length for a complete run, else
	// where the record ends (rounded up to a whole window without a scenario).
	lastEvent := 0.0
	for _, e := range events {
		lastEvent = math.Max(lastEvent, e.TS)
	}
	runEnd := math.Max(data.maxStart, lastEvent)
	switch {
	case sc != nil && opts.Complete:
		runEnd = sc.Length().Seconds()
	case sc == nil:
		runEnd = math.Ceil(runEnd/w-1e-9) * w
		if runEnd <= data.maxStart {
			runEnd += w
		}
	}
	if len(phases) == 1 && phases[0].name == "all" {
		phases[0].end = runEnd
	}
	nWin := int(math.Ceil(runEnd/w - 1e-9))
	for len(data.wins) < nWin {
		data.wins = append(data.wins, winStat{lagMax: math.NaN()})
	}
	// Which windows measure the service: needed by the baseline (which
	// leaves the others out) and by every period's invalid_windows.
	windows := buildWindows(data.wins, w, csvWindows, quant, runEnd)
	for i := range windows {
		data.wins[i].invalid = !windows[i].Valid
	}
	// Complete windows lie wholly inside [0, runEnd]. thr is their ok
	// throughput; x (below) the figure the band judges.
	nComplete := min(len(data.wins), int(math.Floor(runEnd/w+1e-9)))
	thr := judge{by: JudgeThroughput, w: w}.series(data.wins[:nComplete])
	jd := judge{by: opts.Judge, w: w}
	if jd.by == "" {
		jd.by = DefaultJudge(sc)
	}

	injections := pairFaults(events)

	// Baseline band.
	var base *Baseline
	var bnd *band
	defs := &Definitions{WindowS: w, ConnectTimeoutS: NaN, ResponseTimeoutS: NaN, Demerits: demeritWeights(sc), Baseline: "phase", Judge: jd.by}
	if sc != nil {
		defs.ConnectTimeoutS, defs.ResponseTimeoutS = Float(sc.Workload.ConnectTimeout.Seconds()), Float(sc.Workload.ResponseTimeout.Seconds())
	}
	var notes []string
	switch {
	case opts.BaselineDir != "":
		defs.Baseline = "run"
		base, bnd, jd, err = baselineFromDir(opts.BaselineDir, jd.by)
		if err != nil {
			return nil, err
		}
	case opts.BaselineWindow != nil:
		bw := *opts.BaselineWindow
		defs.Baseline, defs.BaselineWindowS = "window", []float64{bw.StartS, bw.EndS}
		source := fmt.Sprintf("window %g:%g", bw.StartS, bw.EndS)
		base, bnd, jd = baselineFromWindows(data.wins[:nComplete], jd, bw.StartS, bw.EndS, injections, source)
		if base == nil {
			return nil, badInput(fmt.Errorf("baseline window %g:%g s holds fewer than two complete fault-free windows of %g s of a %g s record: "+
				"widen it or move it before the first fault", bw.StartS, bw.EndS, w, runEnd))
		}
	default:
		bi := 0
		if sc != nil && sc.Baseline != "" {
			for i, p := range phases {
				if p.name == sc.Baseline {
					bi = i
				}
			}
		}
		base, bnd, jd = baselineFromWindows(data.wins[:nComplete], jd, phases[bi].start, phases[bi].end, injections, phases[bi].name)
		if sc == nil && len(injections) == 0 {
			defs.Baseline = "self"
			notes = append(notes, selfBaselineNote)
		}
	}
	x := jd.series(data.wins[:nComplete])
	ideal := math.NaN()
	if base != nil {
		ideal = float64(base.LatencyMeanS)
	}

	// Deviations, from the first window inside the band (steady state) or
	// the first injection, whichever comes first.
	sum := &Summary{SchemaVersion: provenance.SchemaVersion, Complete: opts.Complete, IncompleteReason: incompleteReason, Aborted: aborted, Provenance: prov, Definitions: defs, Notes: notes, Phases: map[string]Metrics{}, PhaseOrder: []string{}, Deviations: []Deviation{}, Faults: []FaultResult{}}
	if bnd != nil {
		scan := nComplete
		for i, v := range x {
			if bnd.inside(v) {
				scan = i
				break
			}
		}
		if len(injections) > 0 {
			scan = min(scan, int(injections[0].inject/w))
		}
		if scan < nComplete {
			sum.Deviations = deviations(x, scan, nComplete, w, bnd)
		}
		sum.DeviationSummary = summariseDeviations(sum.Deviations, float64(nComplete-scan)*w)
	}

	// Per-fault analysis and the failure interval.
	ser := &series{x: x, w: w, b: bnd, events: events, runEndS: runEnd, redundancy: redundancySeries(csvWindows, seriesNames, len(x))}
	if sc != nil {
		ser.actionS = sc.Operator.ActionTime.Seconds()
	}
	cases := make([]faultCase, len(injections))
	inFailure := make([]bool, len(data.wins))
	anyFailure := false
	for i, in := range injections {
		spanEnd := runEnd
		if i+1 < len(injections) {
			spanEnd = math.Max(in.inject, injections[i+1].inject)
		}
		cases[i] = ser.analyseFault(in, spanEnd)
		for j := max(0, cases[i].failFrom); j < cases[i].failTo; j++ {
			inFailure[j], anyFailure = true, true
		}
	}
	if len(injections) == 0 && len(sum.Deviations) > 0 {
		first, last := sum.Deviations[0], sum.Deviations[len(sum.Deviations)-1]
		for j := int(math.Round(first.StartS / w)); j < int(math.Round(last.EndS/w)); j++ {
			inFailure[j], anyFailure = true, true
		}
	}
	var failure *periodAcc
	var failMom moments
	if anyFailure {
		failure = newPeriodAcc()
		for j, in := range inFailure {
			if in {
				failMom.merge(data.wins[j].mom)
			}
		}
		if sd := failMom.stddev(); !math.IsNaN(sd) {
			failure.sigmaLimit = failMom.mean + 3*sd
			failure.lowLimit = failMom.mean - 3*sd
		}
	}

	// Pass 2: exact 3-sigma counts, the failure interval, stage throughput.
	overall.setSigmaLimit()
	for _, p := range phaseAcc {
		p.setSigmaLimit()
	}
	if readShortcuts {
		// Where pass 1's histogram decides a period's 3σ counts, pass 2
		// need not read its latencies.
		overall.outliersFromCounts()
		for _, p := range phaseAcc {
			p.outliersFromCounts()
		}
	}
	second := newSecondPass(w, phases, overall, phaseAcc, failure, inFailure, cases, workers)
	if err := second.scan(workers).runUnits(second.planUnits(units, first.spans)); err != nil {
		return nil, badInput(err)
	}
	stageOK := second.finish()

	countInvalid := func(p *periodAcc, in func(j int) bool) {
		for j := range data.wins {
			if data.wins[j].invalid && in(j) {
				p.invalidWindows++
			}
		}
	}
	countInvalid(overall, func(int) bool { return true })
	for i, p := range phases {
		countInvalid(phaseAcc[i], func(j int) bool { return float64(j)*w >= p.start-1e-9 && float64(j)*w < p.end-1e-9 })
	}
	if failure != nil {
		countInvalid(failure, func(j int) bool { return inFailure[j] })
	}

	weights := demeritWeights(sc)
	res := &Result{Summary: sum, WindowS: w, Series: seriesNames, Events: events, Phases: map[string]*Distribution{}}
	sum.Overall, res.Overall = overall.metrics(0, runEnd, runEnd, ideal, weights)
	throughputExtras(&sum.Overall, thr, func(int) bool { return true })
	for i, p := range phases {
		end := math.Min(p.end, runEnd)
		if p.start >= runEnd && phaseAcc[i].mom.n == 0 {
			continue // the run ended before this phase began
		}
		m, d := phaseAcc[i].metrics(p.start, end, end-p.start, ideal, weights)
		throughputExtras(&m, thr, func(j int) bool { return float64(j)*w >= p.start-1e-9 && float64(j+1)*w <= end+1e-9 })
		sum.Phases[p.name] = m
		res.Phases[p.name] = d
		sum.PhaseOrder = append(sum.PhaseOrder, p.name)
	}
	if failure != nil {
		first, last, covered := -1, -1, 0
		for j, in := range inFailure {
			if in {
				if first < 0 {
					first = j
				}
				last = j
				covered++
			}
		}
		failure.mom = failMom // identical attempts; the window merge is what set the 3σ limit
		m, d := failure.metrics(float64(first)*w, float64(last+1)*w, float64(covered)*w, ideal, weights)
		throughputExtras(&m, thr, func(j int) bool { return inFailure[j] })
		sum.Failure, res.Failure = &m, d
	}
	for k, c := range cases {
		fr := c.res
		for s, n := range StageNames {
			st := fr.Stages[n]
			if st.DurationS > 0 {
				st.Throughput = Float(float64(stageOK[k][s]) / st.DurationS)
			}
			fr.Stages[n] = st
		}
		sum.Faults = append(sum.Faults, fr)
	}
	sum.Baseline = base
	if sum.Trace = traceFromEvents(events); sum.Trace != nil {
		sum.Notes = append(sum.Notes, fmt.Sprintf("the replayed trace had %d malformed line(s), skipped: the load is the log without them", sum.Trace.CLFSkippedLines))
	}

	if sum.KV, err = kvFromHistory(dir, w, runEnd, injections); err != nil {
		return nil, err
	}
	if note := kvNote(sum.KV); note != "" {
		sum.Notes = append(sum.Notes, note)
	}

	name := filepath.Base(filepath.Clean(dir))
	var seed int64
	if sc != nil {
		name, seed = sc.Name, sc.Seed
	}
	sum.Run = RunInfo{Name: name, DurationS: runEnd, Attempts: data.attempts, Seed: seed, WindowS: w, Phases: slices.Clone(sum.PhaseOrder)}
	if prov != nil {
		sum.Run.Placement = prov.Placement
	}

	if sc != nil {
		for _, expr := range sc.Thresholds {
			t, err := ParseThreshold(expr)
			if err != nil {
				return nil, badInput(err)
			}
			sum.Thresholds = append(sum.Thresholds, t.Eval(&sum.Overall))
		}
	}
	res.Windows = windows
	if quant != nil {
		res.Series = nil
	}
	return res, nil
}

// buildWindows merges the recomputed counts with latency percentiles and
// series from windows.csv or the window aggregator.
func buildWindows(wins []winStat, w float64, csvWindows []record.Window, quant *windowQuantiles, runEnd float64) []record.Window {
	// Percentiles and series from windows.csv where it has the window,
	// else recomputed (a cut run's windows.csv ends before its record).
	lat := csvWindows
	if quant != nil {
		if rebuilt := quant.close(runEnd); len(rebuilt) > len(lat) {
			lat = append(append([]record.Window(nil), lat...), rebuilt[len(lat):]...)
		}
	}
	out := make([]record.Window, len(wins))
	for i, ws := range wins {
		win := record.Window{StartS: float64(i) * w, Outcomes: ws.outcomes, LatencyMean: math.NaN(), LatencyP50: math.NaN(),
			LatencyP90: math.NaN(), LatencyP99: math.NaN(), LatencyMax: math.NaN(),
			GenRefused: ws.refused, CutShort: ws.cutShort, SendLagP99: math.NaN(), SendLagMax: ws.lagMax}
		win.Offered = ws.mom.n + ws.refused + ws.cutShort
		win.ThroughputOK = float64(ws.outcomes[record.OK]) / w
		if ws.mom.n > 0 {
			win.LatencyMean = ws.mom.mean
		}
		if i < len(lat) {
			win.LatencyP50, win.LatencyP90, win.LatencyP99, win.LatencyMax = lat[i].LatencyP50, lat[i].LatencyP90, lat[i].LatencyP99, lat[i].LatencyMax
			win.SendLagP99 = lat[i].SendLagP99
			win.Series = lat[i].Series
		}
		win.Judge(w)
		out[i] = win
	}
	return out
}

// baselineFromWindows takes the complete windows of the baseline phase that
// no fault touches, drops the warm-up (settle) and forms the band of j's
// figure. It returns j with its rate set: the kept windows' mean offered
// rate, which scales a goodput judge's figure to ok/s.
func baselineFromWindows(wins []winStat, j judge, start, end float64, injections []injection, source string) (*Baseline, *band, judge) {
	w := j.w
	var xs []float64
	var lat moments
	var idx []int
	for i := range wins {
		ws, we := float64(i)*w, float64(i+1)*w
		if ws < start-1e-9 || we > end+1e-9 {
			continue
		}
		faulty := false
		for _, in := range injections {
			clear := in.clear
			if math.IsNaN(clear) {
				clear = math.Inf(1)
			}
			if in.inject < we && clear > ws {
				faulty = true
			}
		}
		if faulty || wins[i].invalid {
			continue
		}
		xs = append(xs, j.share(&wins[i]))
		idx = append(idx, i)
	}
	drop := settle(xs)
	xs, idx = xs[drop:], idx[drop:]
	var offered moments
	for _, i := range idx {
		offered.add(float64(wins[i].offered()) / w)
	}
	if j.by == JudgeGoodput {
		j.rate = offered.mean
		for k := range xs {
			xs[k] *= j.rate
		}
	}
	b := newBand(xs)
	if b == nil {
		return nil, nil, j
	}
	j.widen(b)
	for _, i := range idx {
		lat.merge(wins[i].mom)
	}
	base := &Baseline{Source: source, Windows: len(xs), Mean: b.mean, Stddev: b.sd, Low: b.low, High: b.high, LatencyMeanS: NaN,
		Judge: j.by, OfferedPerS: Float(offered.mean)}
	if lat.n > 0 {
		base.LatencyMeanS = Float(lat.mean)
	}
	return base, b, j
}

// baselineFromDir forms the band from a fault-free run: all its complete
// windows outside any fault it recorded, warm-up dropped by the same rule.
func baselineFromDir(dir string, by string) (*Baseline, *band, judge, error) {
	sc, err := loadScenario(dir)
	if err != nil {
		return nil, nil, judge{}, fmt.Errorf("baseline %s: %w", dir, err)
	}
	events, err := record.ReadEvents(filepath.Join(dir, record.EventsFile))
	if err != nil {
		return nil, nil, judge{}, badInput(fmt.Errorf("baseline: %w", err))
	}
	w := DefaultWindowS
	if sc != nil && sc.Workload.Window.Duration > 0 {
		w = sc.Workload.Window.Seconds()
	}
	var data runData
	if err := windowsScan(&data, w, scanWorkers()).run(dir); err != nil {
		return nil, nil, judge{}, badInput(fmt.Errorf("baseline: %w", err))
	}
	end := math.Ceil(data.maxStart/w-1e-9) * w
	if sc != nil {
		end = math.Min(sc.Length().Seconds(), end)
	}
	n := min(len(data.wins), int(math.Floor(end/w+1e-9)))
	base, b, j := baselineFromWindows(data.wins[:n], judge{by: by, w: w}, 0, math.Inf(1), pairFaults(events), dir)
	if base == nil {
		return nil, nil, j, badInput(fmt.Errorf("baseline %s: fewer than two fault-free windows", dir))
	}
	return base, b, j, nil
}

// DefaultDemerits are the weights of Broadwell (2004) §5.6; the scenario's demerits
// map overrides any of them.
var DefaultDemerits = map[string]float64{"conn_abort": 2, "conn_error": 1, "timeout": 8, "http_error": 0, "data_error": 0,
	"latency_second": 1, "latency_scale": 1}

func demeritWeights(sc *scenario.Scenario) map[string]float64 {
	w := make(map[string]float64, len(DefaultDemerits))
	for k, v := range DefaultDemerits {
		w[k] = v
	}
	if sc != nil {
		for k, v := range sc.Demerits {
			w[k] = v
		}
	}
	return w
}

// metrics turns the accumulator into M for a period [start, end) covering
// durationS seconds; ideal is the baseline mean latency (NaN if none).
func (p *periodAcc) metrics(start, end, durationS, ideal float64, weights map[string]float64) (Metrics, *Distribution) {
	d := newDistribution(p.lat.histogram(), p.mom, p.min, p.max)
	n := float64(p.mom.n)
	m := Metrics{StartS: start, EndS: end, DurationS: durationS, Attempts: p.mom.n, Outcomes: map[string]int64{},
		PExceed: map[string]Float{}}
	for _, o := range record.Outcomes() {
		m.Outcomes[o.String()] = p.outcomes[o]
	}
	ok := p.outcomes[record.OK]
	m.ThroughputTotal = ok
	perS := func(v float64) Float {
		if durationS <= 0 {
			return NaN
		}
		return Float(v / durationS)
	}
	frac := func(v float64) Float {
		if n == 0 {
			return NaN
		}
		return Float(v / n)
	}
	m.ThroughputMeanPerS, m.OfferedPerS = perS(float64(ok)), perS(n)
	m.LatencyTotalS = Float(p.mom.sum)
	m.LatencyMeanS = frac(p.mom.sum)
	if p.mom.n > 0 {
		m.LatencyMeanS = Float(p.mom.mean)
	}
	m.LatencyTrimmedMeanS = Float(d.TrimmedMean(0.025))
	m.LatencyStddevS = Float(p.mom.stddev())
	m.LatencyP50S, m.LatencyP90S = Float(d.Quantile(0.5)), Float(d.Quantile(0.9))
	m.LatencyP99S, m.LatencyP999S = Float(d.Quantile(0.99)), Float(d.Quantile(0.999))
	m.LatencyMaxS = Float(d.MaxS)
	m.Goodput = NaN
	if m.ThroughputMeanPerS.Valid() && m.OfferedPerS.Valid() && m.OfferedPerS > 0 {
		m.Goodput = m.ThroughputMeanPerS / m.OfferedPerS
	}
	m.Yield = frac(float64(ok))
	m.Punctuality = NaN
	if !math.IsNaN(ideal) && m.LatencyMeanS.Valid() && m.LatencyMeanS > 0 {
		m.Punctuality = Float(ideal / float64(m.LatencyMeanS))
	}
	events := weights["conn_abort"]*float64(p.outcomes[record.ConnAbort]) + weights["conn_error"]*float64(p.outcomes[record.ConnError]) +
		weights["timeout"]*float64(p.outcomes[record.Timeout]) + weights["http_error"]*float64(p.outcomes[record.HTTPError]) +
		weights["data_error"]*float64(p.outcomes[record.DataError])
	latency := 0.0
	if !math.IsNaN(ideal) && m.LatencyMeanS.Valid() {
		latency = weights["latency_second"] * weights["latency_scale"] * math.Max(0, float64(m.LatencyMeanS)-ideal)
	}
	m.Demerits = Float(events + latency)
	m.Extra = map[string]float64{}
	setExtra(&m, "demerits_events", events)
	setExtra(&m, "demerits_latency", latency)
	for i, t := range ExceedThresholds {
		m.PExceed[t.Key] = frac(float64(p.exceed[i]))
	}
	m.Outliers3SigmaFrac = frac(float64(p.beyond))
	m.Outliers3SigmaTwoSidedFrac = frac(float64(p.beyond + p.below))
	m.LatencyMaxTrimmed1pc = Float(d.MaxTrimmed(0.01))

	m.GenRefusedBy = map[string]int64{}
	for f := record.Refusal(1); int(f) < record.NumRefusals; f++ {
		m.GenRefused += p.refused[f]
		m.GenRefusedBy[f.String()] = p.refused[f]
	}
	m.CutShort = p.cutShort
	if len(p.checks) > 0 {
		m.CheckFailures = maps.Clone(p.checks)
	}
	m.Arrivals = m.Attempts + m.GenRefused + m.CutShort
	m.SendLagP99S, m.SendLagMaxS = NaN, NaN
	if !p.lag.empty() {
		m.SendLagP99S = Float(lagQuantile(p.lag, 99))
		m.SendLagMaxS = Float(p.lagMax)
	}
	m.InvalidWindows = p.invalidWindows
	return m, d
}

func sortFloats(x []float64) { sort.Float64s(x) }

// throughputExtras adds the magical-1% figures of window throughput, whose
// unbounded side is the bottom (Dumitras and Narasimhan 2005, §3.1): the minimum after trimming
// the lowest ⌊1%⌋ of windows, and the fraction of windows below mean − 3σ.
// They go to Extra, and only when the period has complete windows.
func throughputExtras(m *Metrics, x []float64, in func(int) bool) {
	var v []float64
	var mom moments
	for j := range x {
		if in(j) {
			v = append(v, x[j])
			mom.add(x[j])
		}
	}
	if len(v) == 0 {
		return
	}
	sortFloats(v)
	setExtra(m, "throughput_min_trimmed_1pct_per_s", v[int(math.Floor(0.01*float64(len(v))))])
	if sd := mom.stddev(); !math.IsNaN(sd) {
		n := 0
		for _, t := range v {
			if t < mom.mean-3*sd {
				n++
			}
		}
		setExtra(m, "throughput_outliers_3sigma_fraction", float64(n)/float64(len(v)))
	}
}

// setExtra stores a finite value in m.Extra (plain float64s: JSON cannot
// hold NaN or ±Inf, so undefined values are left out).
func setExtra(m *Metrics, key string, v float64) {
	if !math.IsNaN(v) && !math.IsInf(v, 0) {
		m.Extra[key] = v
	}
}

// abortOf finds the guard's abort event (docs/guard.md): its detail starts
// with guard "RULE".
func abortOf(events []record.Event) *Aborted {
	for _, e := range events {
		if e.Kind != "abort" {
			continue
		}
		by := e.Detail
		if rest, ok := strings.CutPrefix(by, "guard "); ok {
			if q, err := strconv.QuotedPrefix(rest); err == nil {
				by, _ = strconv.Unquote(q)
			}
		}
		return &Aborted{By: by, AtS: e.TS}
	}
	return nil
}
