package analysis

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/faultbench/faultbench/internal/record"
)

// UnplannedFault is the type of a fault nobody injected: a node's
// application that exited or was killed outside the schedule (not by a fault
// injector, not by the operator, not by the run's stop). The run records it
// as a fault.inject/fault.clear pair like any other, so it is analysed,
// classified and drawn like any other; readers tell it apart by this type.
const UnplannedFault = "unplanned"

// Unplanned reports whether f was not injected but happened by itself.
func (f FaultResult) Unplanned() bool { return f.Type == UnplannedFault }

// StageNames are the seven stages of Nagaraja et al. Fig. 1, in order.
var StageNames = []string{"A", "B", "C", "D", "E", "F", "G"}

// Tunables of the per-fault analysis (documented in docs/metrics.md).
const (
	// attributionTail: a deviation belongs to a fault when it starts no
	// later than this many windows after the last event related to it.
	attributionTail = 3
	// stoppedFraction: a window whose throughput is at most this fraction
	// of the baseline mean counts as "not serving" (class D).
	stoppedFraction = 0.05
	// stableFraction: consecutive windows within this fraction of the
	// baseline mean (or within the band's half-width, if wider) have settled.
	stableFraction = 0.05
)

// injection is one fault.inject with its matching fault.clear.
type injection struct {
	kind   string
	node   int
	inject float64
	clear  float64 // NaN when never cleared
}

// pairFaults matches every fault.inject with its fault.clear: by ID when
// the events carry one, else the first later clear of the same type and node.
func pairFaults(events []record.Event) []injection {
	var out []injection
	used := make([]bool, len(events))
	for i, e := range events {
		if e.Kind != "fault.inject" {
			continue
		}
		in := injection{kind: e.Fault, node: e.Node, inject: e.TS, clear: math.NaN()}
		for j, c := range events {
			if used[j] || c.Kind != "fault.clear" {
				continue
			}
			// A clear with the fault's own ID belongs to it even when stamped
			// a moment before the injection (a repair of the node finishing
			// while the fault was being injected: the two clocks were read
			// in the other order); it clears at the injection. Without IDs,
			// only a later clear can be the fault's.
			if e.ID != 0 && c.ID == e.ID {
				in.clear = math.Max(c.TS, e.TS)
				used[j] = true
				break
			}
			if e.ID == 0 && c.ID == 0 && c.TS >= e.TS && c.Fault == e.Fault && c.Node == e.Node {
				in.clear = c.TS
				used[j] = true
				break
			}
		}
		_ = i
		out = append(out, in)
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].inject < out[b].inject })
	return out
}

// series is the window throughput series the fault analysis works on.
type series struct {
	x       []float64 // ok per second of each complete window
	w       float64   // window length, seconds
	b       *band     // nil without a baseline
	events  []record.Event
	actionS float64 // scenario operator.action_time, supplied length of stage F
	runEndS float64
	// redundancy is the system's "redundancy" series per window (NaN where
	// not sampled); nil when the run has none.
	redundancy []float64
}

// redundancySeriesName is the system metric series the classes read: the
// number of failures the system can still tolerate (Brown and Patterson 2000, Fig. 2).
const redundancySeriesName = "redundancy"

// redundancySeries aligns windows.csv's redundancy column with the n
// windows of the throughput series; nil without one.
func redundancySeries(windows []record.Window, names []string, n int) []float64 {
	if !slices.Contains(names, redundancySeriesName) {
		return nil
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
		if i < len(windows) {
			if v, ok := windows[i].Series[redundancySeriesName]; ok {
				out[i] = v
			}
		}
	}
	return out
}

// redundancyCourse says what redundancy did in windows [from, to) relative
// to its level just before from: "kept", "lost" or "restored"; "" without
// the series or a level before the fault. lostAt/backAt bound the loss.
func (s *series) redundancyCourse(from, to int) (course string, lostAt, backAt int) {
	if s.redundancy == nil {
		return "", -1, -1
	}
	before := math.NaN()
	for i := min(from, len(s.redundancy)) - 1; i >= 0 && math.IsNaN(before); i-- {
		before = s.redundancy[i]
	}
	if math.IsNaN(before) {
		return "", -1, -1
	}
	lostAt, backAt = -1, -1
	for i := from; i < min(to, len(s.redundancy)); i++ {
		v := s.redundancy[i]
		switch {
		case math.IsNaN(v):
		case v < before && lostAt < 0:
			lostAt = i
		case v >= before && lostAt >= 0 && backAt < 0:
			backAt = i
		case v < before && backAt >= 0:
			backAt = -1 // lost again
		}
	}
	switch {
	case lostAt < 0:
		return "kept", -1, -1
	case backAt < 0:
		return "lost", lostAt, -1
	}
	return "restored", lostAt, backAt
}

func (s *series) index(t float64) int { return int(math.Floor(t / s.w)) }

// faultCase is the analysis of one injection.
type faultCase struct {
	res         FaultResult
	failFrom    int // first window of the failure, -1 if none
	failTo      int // one past the last window
	stageBounds [8]float64
}

// analyseFault computes fault vs failure duration, class and stages for
// injection in, whose span runs until spanEnd (the next injection or the
// end of the run).
func (s *series) analyseFault(in injection, spanEnd float64) faultCase {
	fc := faultCase{failFrom: -1, failTo: -1}
	r := &fc.res
	r.Type, r.Node, r.InjectS, r.ClearS = in.kind, in.node, in.inject, Float(in.clear)
	r.FaultDurationS = Float(in.clear - in.inject)
	r.FailureDurationS, r.FailureStartS, r.FailureEndS = NaN, NaN, NaN
	r.Recovered = true

	// Events of the span that say the system or the operator reacted.
	systemDetect, operatorDetect, action, actionEnd := math.NaN(), math.NaN(), math.NaN(), math.NaN()
	lastRelated := in.inject
	if !math.IsNaN(in.clear) && in.clear < spanEnd {
		lastRelated = in.clear
	}
	for _, e := range s.events {
		if e.TS <= in.inject || e.TS >= spanEnd {
			continue
		}
		k := e.Kind
		related := strings.HasPrefix(k, "system.") || strings.HasPrefix(k, "operator.") || strings.HasPrefix(k, "node.")
		if !related {
			continue
		}
		lastRelated = math.Max(lastRelated, e.TS)
		beforeClear := math.IsNaN(in.clear) || e.TS < in.clear
		if math.IsNaN(systemDetect) && strings.HasPrefix(k, "system.") && beforeClear {
			systemDetect = e.TS
		}
		if math.IsNaN(operatorDetect) && k == "operator.detect" && beforeClear {
			operatorDetect = e.TS
		}
		if !math.IsNaN(action) && math.IsNaN(actionEnd) && e.TS > action &&
			(k == "node.up" || k == "operator.action" || strings.HasPrefix(k, "system.")) {
			actionEnd = e.TS // the action's "done", the node back, or the system reacting
		}
		if math.IsNaN(action) && k == "operator.action" {
			action = e.TS
		}
	}
	// The system's own detection (a system.* event) ends stage A; without
	// one, the operator's. node.down is the injector's report, not a detection.
	detect := systemDetect
	if math.IsNaN(detect) {
		detect = operatorDetect
	}

	if s.b == nil {
		fc.stageBounds = s.stages(in, spanEnd, detect, action, actionEnd, math.NaN(), false)
		r.Stages = s.stageMap(fc.stageBounds, !math.IsNaN(action) && math.IsNaN(actionEnd))
		return fc
	}

	// Failure: from the first out-of-band window to the last one of the
	// runs that start before lastRelated + tail, within the span.
	from := max(0, s.index(in.inject))
	// The window holding the next injection belongs to the next fault.
	to := min(len(s.x), int(math.Floor(spanEnd/s.w+1e-9)))
	deadline := lastRelated + attributionTail*s.w
	first, last := -1, -1
	for i := from; i < to; i++ {
		if s.b.inside(s.x[i]) {
			continue
		}
		start := i == from || s.b.inside(s.x[i-1])
		if start && float64(i)*s.w > deadline {
			break
		}
		if first < 0 {
			first = i
		}
		last = i
	}
	r.FailureDurationS = 0
	if first >= 0 {
		fc.failFrom, fc.failTo = first, last+1
		r.FailureStartS, r.FailureEndS = Float(float64(first)*s.w), Float(float64(last+1)*s.w)
		r.FailureDurationS = r.FailureEndS - r.FailureStartS
		r.Recovered = last+1 < to
		r.Repaired = s.repairEnded(action, float64(r.FailureStartS), float64(r.FailureEndS))
	}
	r.Class = s.classify(fc, r)
	if course, lostAt, backAt := s.redundancyCourse(from, to); course != "" {
		r.Redundancy = course
		r.Class = s.classifyRedundancy(r.Class, course, lostAt, backAt)
	}
	failEnd := math.NaN()
	if first >= 0 && r.Recovered {
		failEnd = float64(fc.failTo) * s.w
	}
	fc.stageBounds = s.stages(in, spanEnd, detect, action, actionEnd, failEnd, r.Recovered)
	r.Stages = s.stageMap(fc.stageBounds, !math.IsNaN(action) && math.IsNaN(actionEnd))
	return fc
}

// repairSlack is the fraction of a window after the failure's end within
// which an operator action still counts as the repair that ended it.
const repairSlack = 0.5

// repairEnded reports whether an operator action at action (NaN: none)
// explains the end of the failure [failStart, failEnd).
//
// The failure ends at a window boundary, but the repair lands wherever the
// operator's clock put it: a restart scheduled "90 s after the inject" at
// 60 s lands at 150.00x s, just after the boundary of the first window that
// is back in the band. That window is back because most of its requests
// came after the repair, so the repair still ended the failure. An action
// in the first half of the window that follows the failure counts: most of
// that window's requests were scheduled after it. An action later than
// that found the service already back (most of an in-band window was
// served before it), so the system recovered by itself.
func (s *series) repairEnded(action, failStart, failEnd float64) bool {
	if math.IsNaN(action) {
		return false
	}
	return action >= failStart && action < failEnd+repairSlack*s.w
}

// classify applies Brown & Patterson's classes as docs/metrics.md words them.
func (s *series) classify(fc faultCase, r *FaultResult) string {
	if fc.failFrom < 0 {
		return "A"
	}
	stopped := stoppedFraction * s.b.mean
	half := s.b.high - s.b.mean
	lowRuns, significantLater, zeroRun, longestZero := 0, 0, 0, 0
	runLen, runDepth := 0, 0.0
	endRun := func() {
		// A dip after the first counts (C-2) when it is significant: two
		// windows or more, or deeper than the band's half-width below it.
		if runLen > 0 && lowRuns > 1 && (runLen >= 2 || runDepth > half) {
			significantLater++
		}
		runLen, runDepth = 0, 0
	}
	for i := fc.failFrom; i < fc.failTo; i++ {
		low := s.x[i] < s.b.low
		if low {
			if runLen == 0 {
				lowRuns++
			}
			runLen++
			runDepth = math.Max(runDepth, s.b.low-s.x[i])
		} else {
			endRun()
		}
		if s.x[i] <= stopped {
			zeroRun++
			longestZero = max(longestZero, zeroRun)
		} else {
			zeroRun = 0
		}
	}
	endRun()
	switch {
	case lowRuns == 0:
		return "A" // only above the band: users were not served worse
	case longestZero >= 2 || (zeroRun >= 1 && !r.Recovered):
		return "D"
	case !r.Recovered || r.Repaired:
		return "B"
	case significantLater > 0:
		return "C-2"
	}
	return "C-1"
}

// classifyRedundancy refines a throughput class with the redundancy curve,
// as Brown and Patterson (2000) Fig. 2 draws both: a system that takes a disk out of service
// and does not rebuild is B, one that rebuilds onto a spare is C — C-1
// when throughput stayed in the band while redundancy was down, C-2 when
// it fell below it significantly (two windows or more, or one deeper than
// the band's half-width: the rule of classify) — whatever throughput alone
// would say (Linux's rebuild of §4.1 is C-1 with no visible dip). A system
// that stopped serving stays D; kept redundancy leaves the throughput class.
func (s *series) classifyRedundancy(class, course string, lostAt, backAt int) string {
	if class == "D" || course == "kept" {
		return class
	}
	if course == "lost" {
		return "B"
	}
	low, depth := 0, 0.0
	for i := lostAt; i < backAt && i < len(s.x); i++ {
		if s.x[i] < s.b.low {
			low++
			depth = math.Max(depth, s.b.low-s.x[i])
		}
	}
	if low >= 2 || depth > s.b.high-s.b.mean {
		return "C-2"
	}
	return "C-1"
}

// stable returns the start of the first window at or after t from which
// two consecutive windows differ by at most the larger of the band's
// half-width and 5% of the baseline mean (a change point's end: throughput
// has settled), or limit if none before it.
func (s *series) stable(t, limit float64) float64 {
	half := stableFraction * math.Max(1, s.meanOr())
	if s.b != nil {
		half = math.Max(half, BandZ*s.b.sd)
	}
	for j := int(math.Ceil(t/s.w - 1e-9)); j+1 < len(s.x); j++ {
		start := float64(j) * s.w
		if start >= limit {
			break
		}
		if math.Abs(s.x[j]-s.x[j+1]) <= half {
			return start
		}
	}
	return limit
}

func (s *series) meanOr() float64 {
	if s.b != nil {
		return s.b.mean
	}
	var m moments
	for _, v := range s.x {
		m.add(v)
	}
	return m.mean
}

// stages returns the eight boundaries of stages A..G (stage k runs from
// bounds[k] to bounds[k+1]); absent stages have equal bounds.
func (s *series) stages(in injection, spanEnd, detect, action, actionEnd, failEnd float64, recovered bool) [8]float64 {
	var b [8]float64
	clear := in.clear
	if math.IsNaN(clear) || clear > spanEnd {
		clear = math.Inf(1)
	}
	act := action
	if math.IsNaN(act) {
		act = math.Inf(1)
	}
	cut := math.Min(spanEnd, act) // the operator's reset ends the fault's own stages
	next := func(k int, v float64) {
		if math.IsNaN(v) || v < b[k-1] {
			v = b[k-1]
		}
		b[k] = math.Min(v, spanEnd)
	}
	b[0] = in.inject
	// A: until the system detects the fault.
	if !math.IsNaN(detect) {
		next(1, math.Min(detect, math.Min(clear, cut)))
		// B: reconfiguration transient, until throughput settles.
		next(2, s.stable(b[1], math.Min(clear, cut)))
	} else {
		next(1, math.Min(clear, cut))
		next(2, b[1])
	}
	// C: degraded but stable, until the component recovers.
	next(3, math.Min(clear, cut))
	// D: transient after the component recovered.
	if clear < cut {
		lim := cut
		if !math.IsNaN(failEnd) {
			lim = math.Min(lim, math.Max(failEnd, b[3]))
		}
		next(4, s.stable(b[3], lim))
	} else {
		next(4, b[3])
	}
	// E: stable after recovery, while still degraded: until the operator
	// resets, or until back in the band.
	switch {
	case act < spanEnd:
		next(5, act)
	case !math.IsNaN(failEnd):
		next(5, failEnd)
	case !recovered:
		next(5, spanEnd)
	default:
		next(5, b[4])
	}
	// F: the operator's reset; G: transient after it, until back in the band.
	if act < spanEnd {
		end := actionEnd
		if math.IsNaN(end) {
			end = act + s.actionS
		}
		next(6, end)
		switch {
		case !math.IsNaN(failEnd):
			next(7, failEnd)
		case !recovered:
			next(7, spanEnd)
		default:
			next(7, b[6])
		}
	} else {
		next(6, b[5])
		next(7, b[6])
	}
	return b
}

// stageMap turns bounds into Stages; throughput is filled in after pass 2.
func (s *series) stageMap(b [8]float64, fSupplied bool) map[string]Stage {
	m := make(map[string]Stage, len(StageNames))
	for k, n := range StageNames {
		m[n] = Stage{DurationS: b[k+1] - b[k], Throughput: NaN, Measured: !(n == "F" && fSupplied)}
	}
	return m
}
