package analysis

import (
	"fmt"
	"math"

	"github.com/faultbench/faultbench/internal/record"
)

// The two passes of Analyze over the record, as scans: each splits its
// work into what the decoding goroutines count on their own (local) and
// what is counted in record order (ordered).

// phaseFinder finds the phase of a start time t: the first phase whose
// end is after t, else the last.
type phaseFinder struct {
	phases []phaseSpan
	sorted bool // ends ascend (phases are consecutive), so a guess can be checked
}

func newPhaseFinder(phases []phaseSpan) phaseFinder {
	f := phaseFinder{phases: phases, sorted: true}
	for i := 1; i < len(phases); i++ {
		if !(phases[i].end >= phases[i-1].end) {
			f.sorted = false
		}
	}
	return f
}

// find returns t's phase; guess (the previous request's phase) is tried
// first, since the record is nearly in time order.
func (f phaseFinder) find(t float64, guess int) int {
	if f.sorted && t < f.phases[guess].end && (guess == 0 || !(t < f.phases[guess-1].end)) {
		return guess
	}
	for i, p := range f.phases {
		if t < p.end {
			return i
		}
	}
	return len(f.phases) - 1
}

// firstPass is pass 1: windows, and moments, histograms and exceedances
// per period.
type firstPass struct {
	w      float64
	phases phaseFinder
	// Counted in record order.
	data    runData
	overall *periodAcc // its periodCounts are the sum of the phases', added by finish
	phase   []*periodAcc
	quant   *windowQuantiles // nil when windows.csv has every window's percentiles
	// Counted by each decoding goroutine: per worker, per phase.
	local [][]*periodCounts
	// spans are the start times of each unit of the record, by unit
	// index, for pass 2's plans; a unit's are set by the goroutine that
	// decodes it.
	spans []startSpan
}

// startSpan is the least and the greatest start time of a unit's
// requests; lo > hi when it has none.
type startSpan struct{ lo, hi float64 }

func newFirstPass(w float64, phases []phaseSpan, quant *windowQuantiles, workers, units int) *firstPass {
	p := &firstPass{w: w, phases: newPhaseFinder(phases), overall: newPeriodAcc(), quant: quant, local: make([][]*periodCounts, workers),
		spans: make([]startSpan, units)}
	for i := range p.spans {
		p.spans[i] = startSpan{math.Inf(1), math.Inf(-1)}
	}
	for range phases {
		p.phase = append(p.phase, newPeriodAcc())
	}
	for i := range p.local {
		for range phases {
			p.local[i] = append(p.local[i], newPeriodCounts())
		}
	}
	return p
}

// scan returns the pass as a scan with workers goroutines.
func (p *firstPass) scan(workers int) scan {
	return scan{workers: workers, local: p.localStep, ordered: p.orderedStep}
}

// localStep checks every request, finds its phase and window, and counts
// its period's order-free figures and its unit's span of start times.
func (p *firstPass) localStep(worker int, b *requestBatch) error {
	counts := p.local[worker]
	ph := 0
	lo, hi := math.Inf(1), math.Inf(-1)
	if b.lagZero {
		// Every lag is +0: count attempts sent, not lags (countZeroLag).
		for i := 0; i < b.n; i++ {
			start, lat, out := b.start[i], b.lat[i], b.out[i]
			if !valid(start, lat, 0, out, p.w) {
				return fmt.Errorf("request %d: %w", b.row+int64(i)+1, invalid(start, lat, 0, out, p.w))
			}
			lo, hi = min(lo, start), max(hi, start)
			ph = p.phases.find(start, ph)
			b.phase[i], b.win[i] = int32(ph), int32(start/p.w)
			counts[ph].countZeroLag(lat, out, b.ref[i], b.cut[i])
		}
		for _, c := range counts {
			c.flushZeroLags()
		}
	} else {
		for i := 0; i < b.n; i++ {
			start, lat, lag, out := b.start[i], b.lat[i], b.lag[i], b.out[i]
			if !valid(start, lat, lag, out, p.w) {
				return fmt.Errorf("request %d: %w", b.row+int64(i)+1, invalid(start, lat, lag, out, p.w))
			}
			lo, hi = min(lo, start), max(hi, start)
			ph = p.phases.find(start, ph)
			b.phase[i], b.win[i] = int32(ph), int32(start/p.w)
			counts[ph].count(lat, lag, out, b.ref[i], b.cut[i])
		}
	}
	b.maxStart, b.maxWin = hi, int(int32(hi/p.w))
	if b.unit < len(p.spans) {
		sp := &p.spans[b.unit]
		sp.lo, sp.hi = min(sp.lo, lo), max(sp.hi, hi)
	}
	return nil
}

// orderedStep counts what depends on the order of the requests: windows'
// and periods' moments, check names, window percentiles. It is runData.add
// for every request, with what is the same for the whole batch (the
// largest start time and window, the number of attempts) done once.
func (p *firstPass) orderedStep(b *requestBatch) error {
	if b.n == 0 {
		return nil
	}
	d := &p.data
	d.grow(b.maxWin)
	d.maxStart = math.Max(d.maxStart, b.maxStart)
	d.attempts += int64(b.n)
	wins := d.wins
	for i := 0; i < b.n; i++ {
		start, lat, lag, refused, cut := b.start[i], b.lat[i], b.lag[i], b.ref[i], b.cut[i]
		win := int(b.win[i])
		if p.quant != nil {
			p.quant.addAt(win, start, lat, lag, refused != record.NotRefused, cut)
		}
		ws := &wins[win]
		if refused != record.NotRefused {
			ws.refused++
			continue
		}
		if !(lag <= ws.lagMax) {
			ws.lagMax = lag
		}
		if cut {
			ws.cutShort++
			continue
		}
		ws.outcomes[b.out[i]]++
		ws.mom.add(lat)
		ph := p.phase[b.phase[i]]
		p.overall.mom.add(lat)
		ph.mom.add(lat)
		if c := b.checkAt(i); c != "" {
			p.overall.countCheck(c)
			ph.countCheck(c)
		}
	}
	return nil
}

// finish adds up the decoding goroutines' counts.
func (p *firstPass) finish() {
	for i, acc := range p.phase {
		for _, counts := range p.local {
			acc.merge(counts[i])
		}
		p.overall.merge(&acc.periodCounts)
	}
}

// secondPass is pass 2: exact 3-sigma counts, the failure interval,
// stage throughput.
type secondPass struct {
	w         float64
	phases    phaseFinder
	overall   *periodAcc
	phase     []*periodAcc
	failure   *periodAcc // nil without a failure interval
	inFailure []bool     // by window
	cases     []faultCase
	local     []*secondLocal
	// plans are, by unit index, what pass 2 knows of each unit's requests
	// before reading them (planUnits).
	plans []unitPlan
}

// unitPlan is what pass 1's span of start times says about every request
// of a unit. When uniform, all its requests have the same phase, are all
// in the failure interval or all out of it, and fall in the same stage
// (or none) of every fault: pass 2 then needs no start time, and reads
// outcomes, lags and checks only if the failure interval or a stage
// needs them.
type unitPlan struct {
	uniform bool
	phase   int
	// outliers: the run's or the phase's 3σ counts are left to pass 2
	// (periodAcc.outliersFromCounts did not decide them).
	outliers bool
	failure  bool
	stage    []int8 // by fault case: the stage 0..6, or -1 for none
	countOK  bool   // some stage counts the unit's ok requests
}

// secondLocal is what one decoding goroutine counts in pass 2.
type secondLocal struct {
	overall *periodCounts // only beyond and below
	phase   []*periodCounts
	failure *periodCounts
	stageOK [][7]int64
}

func newSecondPass(w float64, phases []phaseSpan, overall *periodAcc, phase []*periodAcc, failure *periodAcc, inFailure []bool, cases []faultCase, workers int) *secondPass {
	p := &secondPass{w: w, phases: newPhaseFinder(phases), overall: overall, phase: phase, failure: failure, inFailure: inFailure, cases: cases}
	for range workers {
		l := &secondLocal{overall: &periodCounts{}, stageOK: make([][7]int64, len(cases))}
		for range phases {
			l.phase = append(l.phase, &periodCounts{})
		}
		if failure != nil {
			l.failure = newPeriodCounts()
		}
		p.local = append(p.local, l)
	}
	return p
}

// planUnits makes the plan of every unit from pass 1's spans of start
// times, and returns the units pass 2 reads: the same, with the columns
// a uniform unit does not need skipped, and without the uniform units
// that need none.
func (p *secondPass) planUnits(units []unit, spans []startSpan) []unit {
	out := make([]unit, 0, len(units))
	p.plans = make([]unitPlan, len(units))
	for k, u := range units {
		if k >= len(spans) || !readShortcuts {
			out = append(out, u)
			continue
		}
		plan := p.plan(spans[k])
		p.plans[k] = plan
		if !plan.uniform {
			out = append(out, u)
			continue
		}
		if !plan.outliers && !plan.failure && !plan.countOK {
			continue // pass 1 counted all this unit has to count
		}
		u.skip = colStart
		if !plan.failure {
			u.skip |= colLag | colCheck
			if !plan.countOK {
				u.skip |= colOutcome
			}
			if !plan.outliers {
				u.skip |= colLatency | colMeasured
			}
		}
		out = append(out, u)
	}
	if planned != nil {
		planned(p.plans)
	}
	return out
}

// planned, when set, sees pass 2's plans (tests check they cover both kinds).
var planned func([]unitPlan)

// plan is the plan of a unit whose requests start within sp. Every test
// below holds for all of [sp.lo, sp.hi] because phase, window and stage
// are non-decreasing functions of the start time (phases and stage
// bounds ascend; otherwise the unit is not uniform).
func (p *secondPass) plan(sp startSpan) unitPlan {
	if !(sp.lo <= sp.hi) || !p.phases.sorted {
		return unitPlan{}
	}
	plan := unitPlan{uniform: true, phase: p.phases.find(sp.lo, 0)}
	if p.phases.find(sp.hi, 0) != plan.phase {
		return unitPlan{}
	}
	plan.outliers = !p.overall.noLimits() || !p.phase[plan.phase].noLimits()
	if p.failure != nil {
		from, to := p.failureWindow(sp.lo), p.failureWindow(sp.hi)
		plan.failure = p.inFailure[from]
		for j := from; j <= to; j++ {
			if p.inFailure[j] != plan.failure {
				return unitPlan{}
			}
		}
	}
	plan.stage = make([]int8, len(p.cases))
	for k := range p.cases {
		s := stageKey(&p.cases[k].stageBounds, sp.lo)
		if s == stageMixed || s != stageKey(&p.cases[k].stageBounds, sp.hi) {
			return unitPlan{}
		}
		if s < 0 || s > 6 {
			s = -1
		} else {
			plan.countOK = true
		}
		plan.stage[k] = int8(s)
	}
	return plan
}

// failureWindow is the window of inFailure that a request starting at t
// counts in.
func (p *secondPass) failureWindow(t float64) int {
	if t > 0 {
		return min(int(t/p.w), len(p.inFailure)-1)
	}
	return 0
}

// stageMixed is stageKey's answer for bounds that do not ascend.
const stageMixed = -2

// stageKey is the stage (0..6) a request starting at t counts in, -1 or 7
// before or after the stages; stageMixed when the bounds do not ascend.
func stageKey(bounds *[8]float64, t float64) int {
	for s := 0; s < 7; s++ {
		if !(bounds[s] <= bounds[s+1]) {
			return stageMixed
		}
	}
	if t < bounds[0] {
		return -1
	}
	if t >= bounds[7] {
		return 7
	}
	for s := 0; s < 7; s++ {
		if t < bounds[s+1] {
			return s
		}
	}
	return 7
}

func (p *secondPass) scan(workers int) scan {
	s := scan{workers: workers, local: p.localStep}
	if p.failure != nil {
		s.ordered = p.orderedStep
	}
	return s
}

func (p *secondPass) localStep(worker int, b *requestBatch) error {
	if b.unit < len(p.plans) && p.plans[b.unit].uniform {
		p.uniformStep(worker, b, &p.plans[b.unit])
		return nil
	}
	l := p.local[worker]
	b.pending = b.pending[:0]
	ph := 0
	for i := 0; i < b.n; i++ {
		start, lat, out := b.start[i], b.lat[i], b.out[i]
		if !valid(start, lat, b.lag[i], out, p.w) {
			continue // reported by pass 1
		}
		measured := b.ref[i] == record.NotRefused && !b.cut[i]
		ph = p.phases.find(start, ph)
		if measured {
			l.overall.outlier(lat, p.overall.sigmaLimit, p.overall.lowLimit)
			l.phase[ph].outlier(lat, p.phase[ph].sigmaLimit, p.phase[ph].lowLimit)
		}
		if p.failure != nil {
			j := p.failureWindow(start)
			if p.inFailure[j] {
				l.failure.count(lat, b.lag[i], out, b.ref[i], b.cut[i])
				if measured {
					l.failure.outlier(lat, p.failure.sigmaLimit, p.failure.lowLimit)
					if b.checkAt(i) != "" {
						b.pending = append(b.pending, int32(i))
					}
				}
			}
		}
		if out == record.OK {
			for k := range p.cases {
				bounds := &p.cases[k].stageBounds
				if start < bounds[0] || start >= bounds[7] {
					continue
				}
				for s := 0; s < 7; s++ {
					if start < bounds[s+1] {
						l.stageOK[k][s]++
						break
					}
				}
			}
		}
	}
	return nil
}

// uniformStep is localStep for a batch of a uniform unit, which holds
// only the columns plan says it needs. Every request was checked by
// pass 1.
func (p *secondPass) uniformStep(worker int, b *requestBatch, plan *unitPlan) {
	l := p.local[worker]
	b.pending = b.pending[:0]
	overall, phase := p.overall, p.phase[plan.phase]
	var beyond, below, phBeyond, phBelow int64
	// Refused and cut-short attempts are not measured; where the file
	// says there are none, the batch's flags are all clear.
	for i := 0; i < b.n && plan.outliers; i++ {
		if b.ref[i] != record.NotRefused || b.cut[i] {
			continue
		}
		lat := b.lat[i]
		if lat > overall.sigmaLimit {
			beyond++
		} else if lat < overall.lowLimit {
			below++
		}
		if lat > phase.sigmaLimit {
			phBeyond++
		} else if lat < phase.lowLimit {
			phBelow++
		}
	}
	l.overall.beyond += beyond
	l.overall.below += below
	l.phase[plan.phase].beyond += phBeyond
	l.phase[plan.phase].below += phBelow
	if plan.failure {
		for i := 0; i < b.n; i++ {
			lat := b.lat[i]
			if l.failure.count(lat, b.lag[i], b.out[i], b.ref[i], b.cut[i]) {
				l.failure.outlier(lat, p.failure.sigmaLimit, p.failure.lowLimit)
				if b.checkAt(i) != "" {
					b.pending = append(b.pending, int32(i))
				}
			}
		}
	}
	if plan.countOK {
		var ok int64
		for _, o := range b.out[:b.n] {
			if o == record.OK {
				ok++
			}
		}
		for k, s := range plan.stage {
			if s >= 0 {
				l.stageOK[k][s] += ok
			}
		}
	}
}

// orderedStep counts the failed checks of the failure interval, whose
// names are kept in the order they were first seen.
func (p *secondPass) orderedStep(b *requestBatch) error {
	for _, i := range b.pending {
		p.failure.countCheck(b.check[i])
	}
	return nil
}

// finish adds up the decoding goroutines' counts and returns the ok
// requests of every stage of every fault.
func (p *secondPass) finish() [][7]int64 {
	stageOK := make([][7]int64, len(p.cases))
	for _, l := range p.local {
		p.overall.beyond += l.overall.beyond
		p.overall.below += l.overall.below
		for i, c := range l.phase {
			p.phase[i].beyond += c.beyond
			p.phase[i].below += c.below
		}
		if p.failure != nil {
			p.failure.merge(l.failure)
		}
		for k := range stageOK {
			for s := range stageOK[k] {
				stageOK[k][s] += l.stageOK[k][s]
			}
		}
	}
	return stageOK
}

// windowsScan is a pass that counts only the window series into d.
func windowsScan(d *runData, w float64, workers int) scan {
	local := func(_ int, b *requestBatch) error {
		for i := 0; i < b.n; i++ {
			if err := checkValues(b.start[i], b.lat[i], b.lag[i], b.out[i], w); err != nil {
				return fmt.Errorf("request %d: %w", b.row+int64(i)+1, err)
			}
			b.win[i] = int32(b.start[i] / w)
		}
		return nil
	}
	ordered := func(b *requestBatch) error {
		for i := 0; i < b.n; i++ {
			d.add(int(b.win[i]), b.start[i], b.lat[i], b.lag[i], b.out[i], b.ref[i], b.cut[i])
		}
		return nil
	}
	return scan{workers: workers, local: local, ordered: ordered}
}

// grow makes d hold windows 0..i.
func (d *runData) grow(i int) {
	for len(d.wins) <= i {
		d.wins = append(d.wins, winStat{lagMax: math.NaN()})
	}
}

// add counts one request, of window i, into the window series.
func (d *runData) add(i int, start, lat, lag float64, out record.Outcome, refused record.Refusal, cutShort bool) {
	d.grow(i)
	d.maxStart = math.Max(d.maxStart, start)
	d.attempts++
	ws := &d.wins[i]
	if refused != record.NotRefused {
		ws.refused++
		return
	}
	if !(lag <= ws.lagMax) {
		ws.lagMax = lag
	}
	if cutShort {
		ws.cutShort++
		return
	}
	ws.outcomes[out]++
	ws.mom.add(lat)
}
