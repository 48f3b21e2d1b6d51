package analysis_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/analysis/analysistest"
	"github.com/faultbench/faultbench/internal/record"
)

// quietPoisson is a Poisson run in which nothing happens: every attempt is
// answered, and a fault that does nothing is injected after the warm-up.
// Short windows (1 s at 200/s: σ ≈ 14 ok/s) over 10 minutes give the
// arrival process many chances to leave a 99% throughput band.
func quietPoisson(seed uint64) analysistest.Spec {
	return analysistest.Spec{Seed: seed, Rate: 200, WindowS: 1, Poisson: true,
		Phases: []analysistest.Phase{{Name: "warmup", DurationS: 60}, {Name: "fault", DurationS: 540}},
		Events: analysistest.Fault("mem-alloc-fail", 1, 1, 60, 600)}
}

func TestGoodputJudgeIgnoresArrivalNoise(t *testing.T) {
	dir := analysistest.Dir(t, quietPoisson(5))
	good, _ := analyzeJSON(t, dir, analysis.Options{Complete: true})
	if good.Definitions.Judge != analysis.JudgeGoodput || good.Baseline.Judge != analysis.JudgeGoodput {
		t.Fatalf("open-loop run judged by %q (baseline %q), want goodput by default", good.Definitions.Judge, good.Baseline.Judge)
	}
	if r := float64(good.Baseline.OfferedPerS); r < 180 || r > 220 {
		t.Errorf("baseline offered rate %g/s, want about 200", r)
	}
	if len(good.Deviations) != 0 || good.Faults[0].Class != "A" || good.Faults[0].FailureDurationS != 0 {
		t.Errorf("goodput judge: %d deviations, class %q, failure %v s where nothing happened",
			len(good.Deviations), good.Faults[0].Class, good.Faults[0].FailureDurationS)
	}
	// The old figure, kept behind the flag, sees the arrival noise: 540
	// windows of a 99% band leave it about five times by chance.
	thr, _ := analyzeJSON(t, dir, analysis.Options{Complete: true, Judge: analysis.JudgeThroughput})
	if thr.Definitions.Judge != analysis.JudgeThroughput || len(thr.Deviations) == 0 {
		t.Errorf("throughput judge: %q, %d deviations; want the arrival noise seen", thr.Definitions.Judge, len(thr.Deviations))
	}
	if thr.Overall.Extra["throughput_min_trimmed_1pct_per_s"] != good.Overall.Extra["throughput_min_trimmed_1pct_per_s"] {
		t.Error("the window throughput figures moved with the judge; they measure ok/s whatever judges the band")
	}
}

// TestJudgesAgreeOnARealFailure: a failure that loses half the requests for
// 20 s has the same duration and class under either judge.
func TestJudgesAgreeOnARealFailure(t *testing.T) {
	spec := analysistest.Spec{Seed: 7, Rate: 200, WindowS: 5, Poisson: true, Phases: threePhases,
		Serve:  analysistest.OKFraction(func(t float64) float64 { return 1 - 0.5*between(t, 60, 80) }),
		Events: analysistest.Fault("link-down", 1, 1, 60, 80)}
	dir := analysistest.Dir(t, spec)
	for _, j := range []string{analysis.JudgeGoodput, analysis.JudgeThroughput} {
		sum, _ := analyzeJSON(t, dir, analysis.Options{Complete: true, Judge: j})
		f := sum.Faults[0]
		if f.FailureDurationS != 20 || f.Class != "C-1" || f.FailureStartS != 60 {
			t.Errorf("%s: failure %v s from %v, class %q; want 20 s from 60, C-1", j, f.FailureDurationS, f.FailureStartS, f.Class)
		}
	}
}

// TestGoodputBandFloor: a baseline that lost nothing has σ = 0; one lost
// request in a window is not a deviation, three are.
func TestGoodputBandFloor(t *testing.T) {
	lose := func(n int) analysistest.Spec {
		return analysistest.Spec{Seed: 1, Rate: 100, WindowS: 5, Phases: threePhases,
			Serve: func(t float64, rng *rand.Rand) (record.Outcome, float64) {
				// the first n attempts of window [90, 95)
				if t >= 90 && t < 90+float64(n)/100 {
					return record.Timeout, 6
				}
				return record.OK, 0.01
			}}
	}
	for n, want := range map[int]int{1: 0, 3: 1} {
		sum, _ := analyzeJSON(t, analysistest.Dir(t, lose(n)), analysis.Options{Complete: true, Judge: analysis.JudgeGoodput})
		if sum.Baseline.Stddev != 0 || len(sum.Deviations) != want {
			t.Errorf("%d lost: baseline σ %g, %d deviations (%+v), want %d", n, sum.Baseline.Stddev, len(sum.Deviations), sum.Deviations, want)
		}
	}
}

// TestClosedLoopKeepsThroughput: closed-loop users offer less when the
// server slows, so their goodput would hide a slowdown: throughput judges.
func TestClosedLoopKeepsThroughput(t *testing.T) {
	spec := quietPoisson(5)
	spec.Closed = true
	sum, _ := analyzeJSON(t, analysistest.Dir(t, spec), analysis.Options{Complete: true})
	if sum.Definitions.Judge != analysis.JudgeThroughput {
		t.Errorf("closed loop judged by %q, want throughput", sum.Definitions.Judge)
	}
	nsc := quietPoisson(5)
	nsc.NoScenario = true
	sum, _ = analyzeJSON(t, analysistest.Dir(t, nsc), analysis.Options{Complete: true})
	if sum.Definitions.Judge != analysis.JudgeThroughput {
		t.Errorf("a record without a scenario judged by %q, want throughput (its load model is unknown)", sum.Definitions.Judge)
	}
}

func TestUnknownJudgeIsBadInput(t *testing.T) {
	_, err := analysis.Analyze(analysistest.Dir(t, analysistest.Spec{}), analysis.Options{Judge: "latency"})
	if !errors.Is(err, analysis.ErrBadInput) {
		t.Errorf("judge latency: %v, want ErrBadInput", err)
	}
}

// TestGoodputFromBaselineRun: --baseline DIR scales by that run's offered
// rate, so a run offered the same load reads the same.
func TestGoodputFromBaselineRun(t *testing.T) {
	base := analysistest.Dir(t, analysistest.Spec{Seed: 3, Rate: 100, Poisson: true})
	run := analysistest.Dir(t, analysistest.Spec{Seed: 4, Rate: 100, Poisson: true, Phases: threePhases,
		Serve:  analysistest.OKFraction(func(t float64) float64 { return 1 - 0.6*between(t, 60, 70) }),
		Events: analysistest.Fault("app-hang", 1, 1, 60, 70)})
	sum, _ := analyzeJSON(t, run, analysis.Options{Complete: true, BaselineDir: base})
	if sum.Baseline.Judge != analysis.JudgeGoodput || sum.Baseline.Source != base {
		t.Fatalf("baseline %+v", sum.Baseline)
	}
	if f := sum.Faults[0]; f.FailureDurationS != 10 || f.Class != "C-1" {
		t.Errorf("fault %+v, want a 10 s C-1", f)
	}
}
