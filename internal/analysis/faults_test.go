package analysis

import (
	"math"
	"testing"

	"github.com/faultbench/faultbench/internal/record"
)

// seriesOf builds a window series of 5 s windows: level(t) for each window
// start t, on a band of 100 ± 5 requests/s.
func seriesOf(n int, level func(t float64) float64, events ...record.Event) *series {
	x := make([]float64, n)
	for i := range x {
		x[i] = level(float64(i) * 5)
	}
	return &series{x: x, w: 5, b: &band{mean: 100, sd: 5 / BandZ, low: 95, high: 105}, events: events, actionS: 10, runEndS: float64(n) * 5}
}

func between(t, a, b, in, out float64) float64 {
	if t >= a && t < b {
		return in
	}
	return out
}

func TestClassify(t *testing.T) {
	inj := injection{kind: "disk-remove", node: 1, inject: 60, clear: 90}
	cases := []struct {
		name    string
		level   func(t float64) float64
		events  []record.Event
		class   string
		failure float64
	}{
		{"A: inside the band", func(t float64) float64 { return 100 + between(t, 60, 90, -3, 1) }, nil, "A", 0},
		{"A: only above the band", func(t float64) float64 { return between(t, 90, 100, 110, 100) }, nil, "A", 10},
		{"B: degraded to the end", func(t float64) float64 { return between(t, 60, 1e9, 80, 100) }, nil, "B", 240},
		{"B: back only after a repair", func(t float64) float64 { return between(t, 60, 130, 80, 100) },
			[]record.Event{{TS: 120, Kind: "operator.action", Node: 1}}, "B", 70},
		{"C-1: one dip, then back", func(t float64) float64 { return between(t, 60, 95, 80, 100) }, nil, "C-1", 35},
		{"C-2: back, then a dip during recovery", func(t float64) float64 {
			return between(t, 60, 80, 80, between(t, 90, 110, 70, 100))
		}, []record.Event{{TS: 90, Kind: "system.reconstruction"}}, "C-2", 50},
		{"C-1: a shallow one-window dip later is noise", func(t float64) float64 {
			return between(t, 60, 80, 80, between(t, 90, 95, 93, 100))
		}, nil, "C-1", 35},
		{"C-2: a later one-window dip deeper than the band's half-width", func(t float64) float64 {
			return between(t, 60, 80, 80, between(t, 90, 95, 85, 100))
		}, nil, "C-2", 35},
		{"D: stops serving", func(t float64) float64 { return between(t, 60, 90, 0, 100) }, nil, "D", 30},
		{"D: stops serving for good", func(t float64) float64 { return between(t, 60, 1e9, 0, 100) }, nil, "D", 240},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := seriesOf(60, c.level, c.events...)
			fc := s.analyseFault(inj, 300)
			if fc.res.Class != c.class || float64(fc.res.FailureDurationS) != c.failure {
				t.Errorf("class %q failure %v s, want %q %v s", fc.res.Class, fc.res.FailureDurationS, c.class, c.failure)
			}
		})
	}
}

// TestFailureDuration: a dip long after the fault's last related event is
// noise, not part of the failure (Broadwell 2004, Table 2: app hang 30 s → 35 s).
func TestFailureDuration(t *testing.T) {
	s := seriesOf(60, func(t float64) float64 {
		return between(t, 60, 95, 40, between(t, 200, 205, 80, 100))
	})
	fc := s.analyseFault(injection{kind: "app-hang", node: 2, inject: 60, clear: 90}, 300)
	r := fc.res
	if r.FaultDurationS != 30 || r.FailureDurationS != 35 || r.FailureStartS != 60 || r.FailureEndS != 95 || !r.Recovered {
		t.Errorf("got %+v, want fault 30 s, failure 35 s from 60 to 95", r)
	}
	// A fault that is never cleared has no fault duration.
	fc = s.analyseFault(injection{kind: "app-crash", node: 2, inject: 60, clear: math.NaN()}, 300)
	if fc.res.FaultDurationS.Valid() || fc.res.FailureDurationS != 35 {
		t.Errorf("uncleared: %+v", fc.res)
	}
	// Without a band there is no failure and no class.
	s.b = nil
	if fc = s.analyseFault(injection{inject: 60, clear: 90}, 300); fc.res.Class != "" || fc.res.FailureDurationS.Valid() {
		t.Errorf("no band: %+v", fc.res)
	}
}

// TestStages follows Nagaraja Fig. 1 on a series built stage by stage.
func TestStages(t *testing.T) {
	level := func(t float64) float64 {
		switch {
		case t < 60:
			return 100
		case t < 75:
			return 20 // A: until detection
		case t < 80:
			return 50 // B: reconfiguration
		case t < 90:
			return 70 // C: degraded, stable
		case t < 95:
			return 85 // D: transient after the component recovers
		case t < 120:
			return 70 // E: stable, still degraded
		case t < 130:
			return 0 // F: operator reset
		case t < 135:
			return 50 // G: transient after reset
		}
		return 100
	}
	events := []record.Event{{TS: 75, Kind: "system.membership"}, {TS: 120, Kind: "operator.action"}}
	s := seriesOf(60, level, events...)
	fc := s.analyseFault(injection{kind: "node-crash", node: 3, inject: 60, clear: 90}, 300)
	want := map[string]float64{"A": 15, "B": 5, "C": 10, "D": 5, "E": 25, "F": 10, "G": 5}
	for k, d := range want {
		if got := fc.res.Stages[k].DurationS; got != d {
			t.Errorf("stage %s: %v s, want %v s (bounds %v)", k, got, d, fc.stageBounds)
		}
	}
	if fc.res.Stages["F"].Measured || !fc.res.Stages["C"].Measured {
		t.Errorf("F's length comes from the scenario (supplied), the others are measured: %+v", fc.res.Stages)
	}
	if fc.res.FailureDurationS != 75 || fc.res.Class != "D" || !fc.res.Repaired {
		t.Errorf("failure %v class %s repaired %v, want 75 s, D (zero during the reset), repaired", fc.res.FailureDurationS, fc.res.Class, fc.res.Repaired)
	}
}

func TestSettleAndDeviations(t *testing.T) {
	x := []float64{10, 60, 99, 101, 100, 99, 100, 101, 100, 99, 101, 100}
	if got := settle(x); got != 2 {
		t.Errorf("settle dropped %d windows, want 2", got)
	}
	b := newBand(x[2:])
	devs := deviations([]float64{100, 50, 40, 100, 130, 100}, 0, 6, 5, b)
	if len(devs) != 2 || devs[0].StartS != 5 || devs[0].LengthS != 10 || devs[0].Side != "low" || devs[1].Side != "high" {
		t.Fatalf("deviations %+v", devs)
	}
	if want := (b.low - 40); math.Abs(devs[0].Depth-want) > 1e-9 {
		t.Errorf("depth %v, want %v", devs[0].Depth, want)
	}
	if want := 5 * ((b.low - 50) + (b.low - 40)); math.Abs(devs[0].Area-want) > 1e-9 {
		t.Errorf("area %v, want %v", devs[0].Area, want)
	}
	s := summariseDeviations(devs, 3600)
	if s.Count != 2 || s.PerHour != 2 || s.IntervalS.Mean != 15 || s.LengthS.Mean != 7.5 {
		t.Errorf("summary %+v", s)
	}
}

func TestPairFaults(t *testing.T) {
	ev := []record.Event{
		{TS: 10, Kind: "fault.inject", Fault: "delay", Node: 1, ID: 1},
		{TS: 12, Kind: "fault.inject", Fault: "loss", Node: 2, ID: 2},
		{TS: 20, Kind: "fault.clear", Fault: "loss", Node: 2, ID: 2},
		{TS: 30, Kind: "fault.clear", Fault: "delay", Node: 1, ID: 1},
		{TS: 40, Kind: "fault.inject", Fault: "app-crash", Node: 3},
	}
	got := pairFaults(ev)
	if len(got) != 3 || got[0].clear != 30 || got[1].clear != 20 || !math.IsNaN(got[2].clear) {
		t.Errorf("pairs %+v", got)
	}
	// A repair that finished while the fault was injected, stamped 0.6 ms
	// before it (seen in a via0 accelerated run): the fault's own clear,
	// at the injection, not a fault that never clears.
	ev = []record.Event{
		{TS: 9.001965, Kind: "fault.inject", Fault: "node-freeze", Node: 1, ID: 4},
		{TS: 9.001389, Kind: "fault.clear", Fault: "node-freeze", Node: 1, ID: 4},
		{TS: 9.5, Kind: "fault.clear", Fault: "x", Node: 2},
		{TS: 10, Kind: "fault.inject", Fault: "x", Node: 2},
	}
	got = pairFaults(ev)
	if len(got) != 2 || got[0].clear != 9.001965 || !math.IsNaN(got[1].clear) {
		t.Errorf("pairs %+v, want the early clear at the injection, and no earlier clear paired without IDs", got)
	}
}

// TestRealRunShape mirrors examples/quickstart: a hang, then a crash the
// operator repairs; node.down is the injector's report, not a detection,
// and the window holding the next injection belongs to the next fault.
func TestRealRunShape(t *testing.T) {
	level := func(t float64) float64 {
		switch {
		case t >= 17 && t < 21, t >= 30 && t < 42:
			return 70
		}
		return 100
	}
	events := []record.Event{
		{TS: 17.0017, Kind: "node.down", Node: 2}, {TS: 27.011, Kind: "node.up", Node: 2},
		{TS: 30.0037, Kind: "node.down", Node: 3}, {TS: 41.001, Kind: "operator.detect", Node: 3},
		{TS: 41.0011, Kind: "operator.action", Node: 3, Detail: "restart-failed begins"},
		{TS: 42.0012, Kind: "operator.action", Node: 3, Detail: "restart-failed done"},
		{TS: 42.028, Kind: "node.up", Node: 3},
	}
	s := &series{w: 1, b: &band{mean: 100, sd: 5 / BandZ, low: 95, high: 105}, events: events, actionS: 5, runEndS: 55}
	for i := 0; i < 55; i++ {
		s.x = append(s.x, level(float64(i)))
	}
	hang := s.analyseFault(injection{kind: "app-hang", node: 2, inject: 17.0003, clear: 27.0001}, 30.0001)
	if hang.res.Class != "C-1" || hang.res.FailureDurationS != 4 || !hang.res.Recovered {
		t.Errorf("hang: %+v", hang.res)
	}
	if a := hang.res.Stages["A"].DurationS; math.Abs(a-9.9998) > 1e-9 {
		t.Errorf("hang: stage A %v s, want until the clear (no system detection)", a)
	}
	crash := s.analyseFault(injection{kind: "app-crash", node: 3, inject: 30.0001, clear: 42.0012}, 55)
	if crash.res.Class != "B" || !crash.res.Repaired || crash.res.FailureDurationS != 12 {
		t.Errorf("crash: %+v", crash.res)
	}
	if f := crash.res.Stages["F"]; !f.Measured || math.Abs(f.DurationS-1.0001) > 1e-9 {
		t.Errorf("crash: stage F %+v, want 1.0001 s measured up to the action's done", f)
	}
	if a := crash.res.Stages["A"].DurationS; math.Abs(a-11.0009) > 1e-9 {
		t.Errorf("crash: stage A %v s, want until the operator's detection", a)
	}
}

// TestRepairOnWindowBoundary: a PRESS-ha app-crash that stays degraded
// until the operator's restart is B even when the restart lands exactly on
// (or a clock tick after) the boundary of the first window back in the band;
// an action late in that window found the service already back (C-1).
func TestRepairOnWindowBoundary(t *testing.T) {
	crash := injection{kind: "app-crash", node: 2, inject: 60, clear: math.NaN()}
	degradedUntil150 := func(t float64) float64 { return between(t, 60, 150, 75, 100) }
	cases := []struct {
		name   string
		action float64
		class  string
	}{
		{"on the boundary", 150, "B"},
		{"a clock tick after the boundary", 150.003, "B"},
		{"inside the last degraded window", 149.9, "B"},
		{"late in the first window back: recovered by itself", 154, "C-1"},
		{"in the next window", 156, "C-1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := seriesOf(60, degradedUntil150,
				record.Event{TS: c.action - 0.001, Kind: "operator.detect", Node: 2},
				record.Event{TS: c.action, Kind: "operator.action", Node: 2},
				record.Event{TS: c.action + 0.001, Kind: "fault.clear", Node: 2, Fault: "app-crash"})
			cl := crash
			cl.clear = c.action + 0.001
			fc := s.analyseFault(cl, 300)
			if fc.res.Class != c.class || fc.res.FailureDurationS != 90 {
				t.Errorf("action at %v: class %q failure %v s repaired %v, want %q, 90 s", c.action, fc.res.Class, fc.res.FailureDurationS, fc.res.Repaired, c.class)
			}
		})
	}
}

// TestClassifyWithRedundancy: with a redundancy series the classes follow
// Brown and Patterson (2000) Fig. 2, which draws it beside throughput.
func TestClassifyWithRedundancy(t *testing.T) {
	inj := injection{kind: "disk-read-correctable", node: 1, inject: 60, clear: 240}
	flat := func(float64) float64 { return 100 }
	cases := []struct {
		name       string
		level      func(t float64) float64
		redundancy func(t float64) float64
		class      string
		course     string
	}{
		{"ignored fault: A", flat, func(float64) float64 { return 1 }, "A", "kept"},
		{"rebuilt without a dip (Linux): C-1", flat, func(t float64) float64 { return between(t, 60, 120, 0, 1) }, "C-1", "restored"},
		{"rebuilt with a dip (Solaris): C-2", func(t float64) float64 { return between(t, 65, 115, 80, 100) },
			func(t float64) float64 { return between(t, 60, 120, 0, 1) }, "C-2", "restored"},
		{"a one-window shallow dip during the rebuild is noise: C-1", func(t float64) float64 { return between(t, 65, 70, 93, 100) },
			func(t float64) float64 { return between(t, 60, 120, 0, 1) }, "C-1", "restored"},
		{"disk dropped, no rebuild (Windows): B", func(t float64) float64 { return between(t, 60, 65, 85, 100) },
			func(t float64) float64 { return between(t, 60, 1e9, 0, 1) }, "B", "lost"},
		{"hang: D whatever redundancy says", func(t float64) float64 { return between(t, 60, 1e9, 0, 100) },
			func(t float64) float64 { return between(t, 60, 1e9, 0, 1) }, "D", "lost"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := seriesOf(60, c.level)
			s.redundancy = make([]float64, len(s.x))
			for i := range s.redundancy {
				s.redundancy[i] = c.redundancy(float64(i) * 5)
			}
			fc := s.analyseFault(inj, 300)
			if fc.res.Class != c.class || fc.res.Redundancy != c.course {
				t.Errorf("class %q redundancy %q, want %q %q", fc.res.Class, fc.res.Redundancy, c.class, c.course)
			}
		})
	}
	// Without the series, the throughput rules alone: the silent rebuild is A.
	s := seriesOf(60, flat)
	if fc := s.analyseFault(inj, 300); fc.res.Class != "A" || fc.res.Redundancy != "" {
		t.Errorf("no series: %+v", fc.res)
	}
}
