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
}

func newFirstPass(w float64, phases []phaseSpan, quant *windowQuantiles, workers int) *firstPass {
	p := &firstPass{w: w, phases: newPhaseFinder(phases), overall: newPeriodAcc(), quant: quant, local: make([][]*periodCounts, workers)}
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
// its period's order-free figures.
func (p *firstPass) localStep(worker int, b *requestBatch) error {
	counts := p.local[worker]
	ph := 0
	for i := 0; i < b.n; i++ {
		start, lat, lag, out := b.start[i], b.lat[i], b.lag[i], b.out[i]
		if !valid(start, lat, lag, out, p.w) {
			return fmt.Errorf("request %d: %w", b.row+int64(i)+1, invalid(start, lat, lag, out, p.w))
		}
		ph = p.phases.find(start, ph)
		b.phase[i], b.win[i] = int32(ph), int32(start/p.w)
		counts[ph].count(lat, lag, out, b.ref[i], b.cut[i])
	}
	return nil
}

// orderedStep counts what depends on the order of the requests: windows'
// and periods' moments, check names, window percentiles.
func (p *firstPass) orderedStep(b *requestBatch) error {
	d := &p.data
	for i := 0; i < b.n; i++ {
		start, lat, lag, refused, cut := b.start[i], b.lat[i], b.lag[i], b.ref[i], b.cut[i]
		d.add(int(b.win[i]), start, lat, lag, b.out[i], refused, cut)
		if p.quant != nil {
			p.quant.add(start, lat, lag, refused != record.NotRefused, cut)
		}
		if refused != record.NotRefused || cut {
			continue
		}
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

func (p *secondPass) scan(workers int) scan {
	s := scan{workers: workers, local: p.localStep}
	if p.failure != nil {
		s.ordered = p.orderedStep
	}
	return s
}

func (p *secondPass) localStep(worker int, b *requestBatch) error {
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
			j := 0
			if start > 0 {
				j = min(int(start/p.w), len(p.inFailure)-1)
			}
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

// add counts one request, of window i, into the window series.
func (d *runData) add(i int, start, lat, lag float64, out record.Outcome, refused record.Refusal, cutShort bool) {
	for len(d.wins) <= i {
		d.wins = append(d.wins, winStat{lagMax: math.NaN()})
	}
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
