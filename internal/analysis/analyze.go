package analysis

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"

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
}

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

// winStat is one window's attempts.
type winStat struct {
	outcomes [record.NumOutcomes]int64
	mom      moments
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
	i := int(r.StartS / w)
	for len(d.wins) <= i {
		d.wins = append(d.wins, winStat{})
	}
	d.wins[i].outcomes[r.Outcome]++
	d.wins[i].mom.add(r.LatencyS)
	d.maxStart = math.Max(d.maxStart, r.StartS)
	d.attempts++
}

// checkRequest rejects what no recorder writes; w is the window length.
func checkRequest(r *record.Request, w float64) error {
	if math.IsNaN(r.StartS) || math.IsInf(r.StartS, 0) || r.StartS < 0 {
		return fmt.Errorf("t_start_s %v is not a non-negative number", r.StartS)
	}
	if r.StartS/w >= maxWindows {
		return fmt.Errorf("t_start_s %v is more than %d windows of %g s after the start of the run", r.StartS, maxWindows, w)
	}
	if math.IsNaN(r.LatencyS) || math.IsInf(r.LatencyS, 0) || r.LatencyS < 0 {
		return fmt.Errorf("latency_s %v is not a non-negative number", r.LatencyS)
	}
	if int(r.Outcome) >= record.NumOutcomes {
		return fmt.Errorf("unknown outcome %d", r.Outcome)
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
	phaseOf := func(t float64) int {
		for i, p := range phases {
			if t < p.end {
				return i
			}
		}
		return len(phases) - 1
	}

	// Pass 1: windows, and moments, histograms and exceedances per period.
	overall := newPeriodAcc()
	phaseAcc := make([]*periodAcc, len(phases))
	for i := range phaseAcc {
		phaseAcc[i] = newPeriodAcc()
	}
	var data runData
	var winAgg *record.WindowAggregator
	if csvWindows == nil {
		horizon := 60.0
		if sc != nil {
			horizon = sc.Workload.ConnectTimeout.Seconds() + sc.Workload.ResponseTimeout.Seconds() + 2*w
		}
		winAgg = record.NewWindowAggregator(w, horizon)
	}
	err = readRequests(dir, func(r *record.Request) error {
		if err := checkRequest(r, w); err != nil {
			return fmt.Errorf("request %d: %w", data.attempts+1, err)
		}
		data.addWindow(r, w)
		overall.add(r)
		phaseAcc[phaseOf(r.StartS)].add(r)
		if winAgg != nil {
			winAgg.Add(*r)
		}
		return nil
	})
	if err != nil {
		return nil, badInput(err)
	}

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
		data.wins = append(data.wins, winStat{})
	}
	// Complete windows lie wholly inside [0, runEnd].
	nComplete := min(len(data.wins), int(math.Floor(runEnd/w+1e-9)))
	x := make([]float64, nComplete)
	for i := range x {
		x[i] = float64(data.wins[i].outcomes[record.OK]) / w
	}

	injections := pairFaults(events)

	// Baseline band.
	var base *Baseline
	var bnd *band
	if opts.BaselineDir != "" {
		base, bnd, err = baselineFromDir(opts.BaselineDir)
		if err != nil {
			return nil, err
		}
	} else {
		bi := 0
		if sc != nil && sc.Baseline != "" {
			for i, p := range phases {
				if p.name == sc.Baseline {
					bi = i
				}
			}
		}
		base, bnd = baselineFromWindows(data.wins[:nComplete], w, phases[bi].start, phases[bi].end, injections, phases[bi].name)
	}
	ideal := math.NaN()
	if base != nil {
		ideal = float64(base.LatencyMeanS)
	}

	// Deviations, from the first window inside the band (steady state) or
	// the first injection, whichever comes first.
	sum := &Summary{Complete: opts.Complete, Phases: map[string]Metrics{}, PhaseOrder: []string{}, Deviations: []Deviation{}, Faults: []FaultResult{}}
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
		}
	}

	// Pass 2: exact 3-sigma counts, the failure interval, stage throughput.
	overall.setSigmaLimit()
	for _, p := range phaseAcc {
		p.setSigmaLimit()
	}
	stageOK := make([][7]int64, len(cases))
	err = readRequests(dir, func(r *record.Request) error {
		if checkRequest(r, w) != nil {
			return nil // reported by pass 1
		}
		overall.addOutlier(r.LatencyS)
		phaseAcc[phaseOf(r.StartS)].addOutlier(r.LatencyS)
		if failure != nil {
			i := 0
			if r.StartS > 0 {
				i = min(int(r.StartS/w), len(inFailure)-1)
			}
			if inFailure[i] {
				failure.add(r)
				failure.addOutlier(r.LatencyS)
			}
		}
		if r.Outcome == record.OK {
			for k := range cases {
				b := &cases[k].stageBounds
				if r.StartS < b[0] || r.StartS >= b[7] {
					continue
				}
				for s := 0; s < 7; s++ {
					if r.StartS < b[s+1] {
						stageOK[k][s]++
						break
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, badInput(err)
	}

	weights := demeritWeights(sc)
	res := &Result{Summary: sum, WindowS: w, Series: seriesNames, Events: events, Phases: map[string]*Distribution{}}
	sum.Overall, res.Overall = overall.metrics(0, runEnd, runEnd, ideal, weights)
	throughputExtras(&sum.Overall, x, func(int) bool { return true })
	for i, p := range phases {
		end := math.Min(p.end, runEnd)
		if p.start >= runEnd && phaseAcc[i].mom.n == 0 {
			continue // the run ended before this phase began
		}
		m, d := phaseAcc[i].metrics(p.start, end, end-p.start, ideal, weights)
		throughputExtras(&m, x, func(j int) bool { return float64(j)*w >= p.start-1e-9 && float64(j+1)*w <= end+1e-9 })
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
		throughputExtras(&m, x, func(j int) bool { return inFailure[j] })
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

	name := filepath.Base(filepath.Clean(dir))
	var seed int64
	if sc != nil {
		name, seed = sc.Name, sc.Seed
	}
	sum.Run = RunInfo{Name: name, DurationS: runEnd, Attempts: data.attempts, Seed: seed, WindowS: w}

	if sc != nil {
		for _, expr := range sc.Thresholds {
			t, err := ParseThreshold(expr)
			if err != nil {
				return nil, badInput(err)
			}
			sum.Thresholds = append(sum.Thresholds, t.Eval(&sum.Overall))
		}
	}
	res.Windows = buildWindows(data.wins, w, csvWindows, winAgg, runEnd)
	if winAgg != nil {
		res.Series = nil
	}
	return res, nil
}

// buildWindows merges the recomputed counts with latency percentiles and
// series from windows.csv or the window aggregator.
func buildWindows(wins []winStat, w float64, csvWindows []record.Window, agg *record.WindowAggregator, runEnd float64) []record.Window {
	var lat []record.Window
	if csvWindows != nil {
		lat = csvWindows
	} else if agg != nil {
		lat = agg.Close(runEnd)
	}
	out := make([]record.Window, len(wins))
	for i, ws := range wins {
		win := record.Window{StartS: float64(i) * w, Outcomes: ws.outcomes, LatencyMean: math.NaN(), LatencyP50: math.NaN(),
			LatencyP90: math.NaN(), LatencyP99: math.NaN(), LatencyMax: math.NaN()}
		win.Offered = ws.mom.n
		win.ThroughputOK = float64(ws.outcomes[record.OK]) / w
		if ws.mom.n > 0 {
			win.LatencyMean = ws.mom.mean
		}
		if i < len(lat) {
			win.LatencyP50, win.LatencyP90, win.LatencyP99, win.LatencyMax = lat[i].LatencyP50, lat[i].LatencyP90, lat[i].LatencyP99, lat[i].LatencyMax
			win.Series = lat[i].Series
		}
		out[i] = win
	}
	return out
}

// baselineFromWindows takes the complete windows of the baseline phase that
// no fault touches, drops the warm-up (settle) and forms the band.
func baselineFromWindows(wins []winStat, w, start, end float64, injections []injection, source string) (*Baseline, *band) {
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
		if faulty {
			continue
		}
		xs = append(xs, float64(wins[i].outcomes[record.OK])/w)
		idx = append(idx, i)
	}
	drop := settle(xs)
	xs, idx = xs[drop:], idx[drop:]
	b := newBand(xs)
	if b == nil {
		return nil, nil
	}
	for _, i := range idx {
		lat.merge(wins[i].mom)
	}
	base := &Baseline{Source: source, Windows: len(xs), Mean: b.mean, Stddev: b.sd, Low: b.low, High: b.high, LatencyMeanS: NaN}
	if lat.n > 0 {
		base.LatencyMeanS = Float(lat.mean)
	}
	return base, b
}

// baselineFromDir forms the band from a fault-free run: all its complete
// windows outside any fault it recorded, warm-up dropped by the same rule.
func baselineFromDir(dir string) (*Baseline, *band, error) {
	sc, err := loadScenario(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("baseline %s: %w", dir, err)
	}
	events, err := record.ReadEvents(filepath.Join(dir, record.EventsFile))
	if err != nil {
		return nil, nil, badInput(fmt.Errorf("baseline: %w", err))
	}
	w := DefaultWindowS
	if sc != nil && sc.Workload.Window.Duration > 0 {
		w = sc.Workload.Window.Seconds()
	}
	var data runData
	err = readRequests(dir, func(r *record.Request) error {
		if err := checkRequest(r, w); err != nil {
			return fmt.Errorf("request %d: %w", data.attempts+1, err)
		}
		data.addWindow(r, w)
		return nil
	})
	if err != nil {
		return nil, nil, badInput(fmt.Errorf("baseline: %w", err))
	}
	end := math.Ceil(data.maxStart/w-1e-9) * w
	if sc != nil {
		end = math.Min(sc.Length().Seconds(), end)
	}
	n := min(len(data.wins), int(math.Floor(end/w+1e-9)))
	base, b := baselineFromWindows(data.wins[:n], w, 0, math.Inf(1), pairFaults(events), dir)
	if base == nil {
		return nil, nil, badInput(fmt.Errorf("baseline %s: fewer than two fault-free windows", dir))
	}
	return base, b, nil
}

// DefaultDemerits are the weights of seed 000 §5.6; the scenario's demerits
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
	d := newDistribution(p.hist, p.mom, p.min, p.max)
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
	m.LatencyMaxTrimmed1pc = Float(d.MaxTrimmed(0.01))
	return m, d
}

func sortFloats(x []float64) { sort.Float64s(x) }

// throughputExtras adds the magical-1% figures of window throughput, whose
// unbounded side is the bottom (seed 002 §3.1): the minimum after trimming
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
