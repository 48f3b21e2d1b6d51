package model

import (
	"math"
	"testing"
)

func mustLoad(t *testing.T, src string) *FaultLoad {
	t.Helper()
	fl, err := ParseFaultLoad("test.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	return fl
}

// Nagaraja et al.'s (2002) equation worked by hand for one fault.
func TestPerformabilityByHand(t *testing.T) {
	fl := mustLoad(t, `
normal_throughput: 1000
faults:
  - name: f
    mttf: 10000s
    stages: {A: {duration: 10s, throughput: 0}, B: {duration: 20s, throughput: 500}, E: {duration: 70s, throughput: 900}}
`)
	p := Evaluate(fl)
	// W = 100/10000 = 0.01; AT = 0.99·1000 + (10·0 + 20·500 + 70·900)/10000 = 990 + 7.3
	relClose(t, "AT", p.AverageThroughput, 997.3, 1e-12)
	relClose(t, "AA", p.AverageAvailability, 0.9973, 1e-12)
	relClose(t, "U", p.Unavailability, 0.0027, 1e-9)
	relClose(t, "performability", float64(p.Performability), 997.3*1e-5/0.0027, 1e-9)
	relClose(t, "weight", p.Faults[0].Weight, 0.01, 1e-12)
}

// Nagaraja et al. (2002) §6.2: each nine multiplies performability by ten (at nearly the
// same average throughput).
func TestEachNineMultipliesPerformabilityByTen(t *testing.T) {
	src := func(mttf string) string {
		return `
normal_throughput: 1000
faults: [{name: f, mttf: ` + mttf + `, stages: {A: {duration: 1s, throughput: 0}}}]`
	}
	p1 := Evaluate(mustLoad(t, src("100000s")))  // U = 1e-5
	p2 := Evaluate(mustLoad(t, src("1000000s"))) // U = 1e-6
	relClose(t, "ratio", float64(p2.Performability)/float64(p1.Performability), 10*p2.AverageThroughput/p1.AverageThroughput, 1e-9)
	relClose(t, "five nines", float64(p1.Performability), p1.AverageThroughput, 1e-9)
}

// The repair rules: stages cut short by the MTTR, until_repair filling up to it.
func TestRepairCutsStagesShort(t *testing.T) {
	f := Fault{MTTR: 12, Stages: [7]Stage{{Duration: 5}, {Duration: 10}, {UntilRepair: true}, {Duration: 4}}}
	st := EffectiveStages(&f)
	want := []float64{5, 7, 0, 4}
	for i, w := range want {
		if st[i].Duration != w {
			t.Errorf("stage %c = %v, want %v", StageNames[i], st[i].Duration, w)
		}
	}
	f = Fault{MTTR: 3, Stages: [7]Stage{{Duration: 5}, {Duration: 10}, {UntilRepair: true}}}
	if st = EffectiveStages(&f); st[0].Duration != 3 || st[1].Duration != 0 || st[2].Duration != 0 {
		t.Errorf("MTTR inside A: %+v", st[:3])
	}
	f = Fault{MTTR: 180, Stages: [7]Stage{{Duration: 15}, {Duration: 5}, {UntilRepair: true}}}
	if st = EffectiveStages(&f); st[2].Duration != 160 {
		t.Errorf("until_repair: C = %v, want 160", st[2].Duration)
	}
	// An explicit C longer than the repair allows is cut too.
	f = Fault{MTTR: 30, Stages: [7]Stage{{Duration: 10}, {}, {Duration: 100}}}
	if st = EffectiveStages(&f); st[2].Duration != 20 {
		t.Errorf("explicit C = %v, want 20", st[2].Duration)
	}
}

// Per-fault unavailabilities sum to the total; groups split their rate.
func TestSharesAndGroups(t *testing.T) {
	fl := mustLoad(t, `
normal_throughput: 100
groups: {app: {mttf: 24h}}
faults:
  - {name: crash, group: app, share: 0.4, mttr: 3m, stages: {C: {duration: until_repair, throughput: 0}}}
  - {name: hang, group: app, share: 0.6, mttr: 3m, stages: {C: {duration: until_repair, throughput: 50}}}
  - {name: link, mttf: 4380h, stages: {A: {duration: 1m, throughput: 10}}}
`)
	p := Evaluate(fl)
	sum := 0.0
	for _, f := range p.Faults {
		sum += f.Unavailability
	}
	relClose(t, "Σ shares", sum, p.Unavailability, 1e-12)
	relClose(t, "crash rate", p.Faults[0].Rate, 0.4/86400, 1e-12)
	if err := fl.SetRate("app", 1.0/(30*86400)); err != nil {
		t.Fatal(err)
	}
	relClose(t, "crash rate after sweep", Evaluate(fl).Faults[0].Rate, 0.4/(30*86400), 1e-12)
}

// The bridge: phase 2 with denominator mttf+mttr equals the CTMC's steady
// reward exactly; with Nagaraja et al.'s (2002) mttf it differs by O(W²).
func TestBridgeAgreesWithPhase2(t *testing.T) {
	fl := mustLoad(t, `
normal_throughput: 5000
faults:
  - {name: a, mttf: 2h, mttr: 3m, stages: {A: {duration: 15s, throughput: 0}, B: {duration: 5s, throughput: 1800}, C: {duration: until_repair, throughput: 3700}, D: {duration: 30s, throughput: 4500}}}
  - {name: b, mttf: 30m, stages: {E: {duration: 2m, throughput: 1000}}}
`)
	res, err := Solve(BridgeChain(fl))
	if err != nil {
		t.Fatal(err)
	}
	fl.Denominator = DenomMTTFPlusMTTR
	relClose(t, "bridge vs mttf+mttr", *res.SteadyStateReward, Evaluate(fl).AverageThroughput, 1e-12)
	fl.Denominator = DenomMTTF
	queued := Evaluate(fl)
	var w float64
	for _, f := range queued.Faults {
		w += f.Weight
	}
	if d := math.Abs(*res.SteadyStateReward-queued.AverageThroughput) / 5000; d > 2*w*w || d == 0 {
		t.Errorf("mttf vs bridge differ by %v, want 0 < d ≤ 2W² = %v", d, 2*w*w)
	}
}

// With exponential stage durations the bridge chain *is* the fault model,
// so a simulation of it must match phase 2 (mttf+mttr) within noise.
func TestBridgeMatchesSimulation(t *testing.T) {
	fl := mustLoad(t, `
normal_throughput: 100
denominator: mttf+mttr
faults:
  - {name: a, mttf: 100s, stages: {A: {duration: 10s, throughput: 0}, C: {duration: 20s, throughput: 50}}}
  - {name: b, mttf: 300s, stages: {B: {duration: 30s, throughput: 20}}}
`)
	want := Evaluate(fl).AverageThroughput
	got := simulateChain(BridgeChain(fl), 2e6, 7)
	if math.Abs(got-want) > 0.01*want {
		t.Errorf("simulated reward %v, phase 2 %v", got, want)
	}
}

func TestSweepAndCrossover(t *testing.T) {
	a := mustLoad(t, `
normal_throughput: 1000
faults: [{name: f, mttf: 24h, stages: {A: {duration: 100s, throughput: 0}}}]`)
	b := mustLoad(t, `
normal_throughput: 1200
faults: [{name: f, mttf: 24h, stages: {A: {duration: 25s, throughput: 0}}}]`)
	c, err := FindCrossover(Design{"a", a}, Design{"b", b}, []string{"f"})
	if err != nil {
		t.Fatal(err)
	}
	// perf ∝ AT/U; B's U is a quarter of A's and its AT 1.2×: ≈ 4.8× (AT moves a little).
	if f := float64(c.Factor); f < 4.7 || f > 4.9 {
		t.Errorf("factor %v, want ≈ 4.8", f)
	}
	scaled := b.Clone()
	_ = scaled.Scale([]string{"f"}, float64(c.Factor))
	relClose(t, "perf at cross-over", float64(Evaluate(scaled).Performability), c.PerformabilityA, 1e-9)

	rates, err := ParseRange("1/day..1/month", 3)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Sweep([]Design{{"a", a}}, "f", rates)
	if err != nil {
		t.Fatal(err)
	}
	if s.Points[0].Label != "1/day" || s.Points[2].Label != "1/month" {
		t.Errorf("labels %q %q", s.Points[0].Label, s.Points[2].Label)
	}
	if !(float64(s.Points[0].Performance.Performability) < float64(s.Points[2].Performance.Performability)) {
		t.Error("performability should rise as faults become rarer")
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"1/day": 1.0 / 86400, "2/week": 2.0 / (7 * 86400), "1/3months": 1 / (3 * 365.25 * 86400 / 12), "720h": 1.0 / (720 * 3600), "1/s": 1} {
		got, err := ParseRate(in)
		if err != nil || math.Abs(got-want) > 1e-12*want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0/day", "1/fortnight", "-3h", "x/day"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) succeeded", bad)
		}
	}
}
