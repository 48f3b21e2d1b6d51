package model

import (
	"errors"
	"strings"
	"testing"
)

func TestFaultLoadErrors(t *testing.T) {
	for name, tc := range map[string]struct{ src, want string }{
		"bad duration":  {"normal_throughput: 10\nfaults:\n  - name: f\n    mttf: 6 months\n    stages: {A: {duration: 1s, throughput: 0}}\n", "test.yaml:4: faults[0].mttf: \"6 months\" is not a Go duration"},
		"unknown stage": {"normal_throughput: 10\nfaults:\n  - name: f\n    mttf: 1h\n    stages:\n      H: {duration: 1s, throughput: 0}\n", "test.yaml:6: faults[0].stages.H: unknown stage"},
		"unknown key":   {"normal_throughput: 10\nfautls: []\n", "test.yaml:2: fautls: unknown key"},
		"zero mttf":     {"normal_throughput: 10\nfaults:\n  - {name: f, mttf: 0s, stages: {A: {duration: 1s, throughput: 0}}}\n", "test.yaml:3: faults[0].mttf: must be > 0"},
		"negative T_n":  {"normal_throughput: -1\nfaults: []\n", "test.yaml:1: normal_throughput: must be > 0"},
		"until no mttr": {"normal_throughput: 10\nfaults:\n  - name: f\n    mttf: 1h\n    stages:\n      C: {duration: until_repair, throughput: 0}\n", "test.yaml:6: faults[0].stages.C: until_repair needs the fault's mttr"},
		"until late":    {"normal_throughput: 10\nfaults:\n  - name: f\n    mttf: 1h\n    mttr: 1m\n    stages:\n      E: {duration: until_repair, throughput: 0}\n", "test.yaml:7: faults[0].stages.E.duration: only stages A, B and C"},
		"no group":      {"normal_throughput: 10\nfaults:\n  - {name: f, group: app, share: 0.4, stages: {A: {duration: 1s, throughput: 0}}}\n", "test.yaml:3: faults[0].group: group \"app\" is not declared"},
		"not yaml":      {"normal_throughput: 1\nfaults: [\n", "test.yaml:2: not valid YAML: did not find expected node content"},
		"duplicate":     {"normal_throughput: 10\nfaults:\n  - {name: f, mttf: 1h, stages: {A: {duration: 1s, throughput: 0}}}\n  - {name: f, mttf: 1h, stages: {A: {duration: 1s, throughput: 0}}}\n", "test.yaml:4: faults[1].name: fault \"f\" named twice"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseFaultLoad("test.yaml", []byte(tc.src), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrBadInput) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestFromRun(t *testing.T) {
	summary := `{"faults": [{"type": "app-crash", "stages": {
		"A": {"duration_s": 3, "throughput": 0, "measured": true},
		"B": {"duration_s": 7, "throughput": 400, "measured": true},
		"C": {"duration_s": 80, "throughput": 600, "measured": true},
		"D": {"duration_s": 0, "throughput": null, "measured": false},
		"E": {"duration_s": 0, "throughput": null, "measured": false},
		"F": {"duration_s": 0, "throughput": null, "measured": false},
		"G": {"duration_s": 0, "throughput": null, "measured": false}}}]}`
	read := func(dir string) ([]byte, error) { return []byte(summary), nil }
	fl, err := ParseFaultLoad("t.yaml", []byte("normal_throughput: 800\nfaults:\n  - {name: c, from_run: r, mttf: 720h, mttr: 3m}\n"), read)
	if err != nil {
		t.Fatal(err)
	}
	st := EffectiveStages(&fl.Faults[0])
	if st[0].Duration != 3 || st[1].Throughput != 400 || st[2].Duration != 170 {
		t.Errorf("stages %+v", st[:3])
	}
	// Overriding a stage in the YAML; without mttr the measured C is kept.
	fl, err = ParseFaultLoad("t.yaml", []byte("normal_throughput: 800\nfaults:\n  - {name: c, from_run: r, mttf: 720h, stages: {E: {duration: 10m, throughput: 700}}}\n"), read)
	if err != nil {
		t.Fatal(err)
	}
	if st := fl.Faults[0].Stages; st[2].Duration != 80 || st[4].Duration != 600 {
		t.Errorf("stages %+v", st)
	}
	_, err = ParseFaultLoad("t.yaml", []byte("normal_throughput: 800\nfaults:\n  - {name: c, from_run: r, run_fault: 3, mttf: 720h}\n"), read)
	if err == nil || !strings.Contains(err.Error(), "t.yaml:3: faults[0].from_run") {
		t.Errorf("run_fault out of range: %v", err)
	}
}

func TestChainErrors(t *testing.T) {
	base := "states: [a, b]\n"
	for name, tc := range map[string]struct{ src, want string }{
		"undeclared": {base + "initial: a\ntransitions:\n  - {from: a, to: c, rate: 1}\n", "test.yaml:4: transitions[0].to: state \"c\" is not declared"},
		"zero rate":  {base + "initial: a\ntransitions:\n  - {from: a, to: b, rate: 0}\n", "test.yaml:4: transitions[0].rate: must be > 0"},
		"neg rate":   {base + "initial: a\ntransitions:\n  - {from: a, to: b, rate: -2}\n", "transitions[0].rate: must be > 0"},
		"initial":    {base + "initial: z\n", "test.yaml:2: initial: state \"z\" is not declared"},
		"init dist":  {base + "initial: {a: 0.5, b: 0.2}\n", "test.yaml:2: initial: probabilities sum to 0.7"},
		"unknown":    {base + "initial: a\nrewardz: {a: 1}\n", "test.yaml:3: rewardz: unknown key"},
		"absorbing":  {base + "initial: a\ntransitions: [{from: b, to: a, rate: 1}]\nabsorbing: [b]\n", "test.yaml:4: absorbing: state \"b\" is absorbing but transitions[0] leaves it"},
		"self loop":  {base + "initial: a\ntransitions: [{from: a, to: a, rate: 1}]\n", "transitions[0].to: a transition"},
		"reward key": {base + "initial: a\nrewards: {c: 1}\n", "test.yaml:3: rewards.c: state \"c\" is not declared"},
		"bad rate":   {base + "initial: a\ntransitions: [{from: a, to: b, rate: fast}]\n", "transitions[0].rate: \"fast\" is not a finite number"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseChain("test.yaml", []byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrBadInput) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// A generated chain written as YAML reads back to the same chain.
func TestChainYAMLRoundTrip(t *testing.T) {
	c, err := KofN{N: 4, K: 2, MTTF: 100, MTTR: 2}.Chain(true)
	if err != nil {
		t.Fatal(err)
	}
	c.Times = []float64{1, 10}
	back, err := ParseChain("gen.yaml", []byte(c.YAML()))
	if err != nil {
		t.Fatalf("%v\n%s", err, c.YAML())
	}
	a, _ := Solve(c)
	b, _ := Solve(back)
	if *a.MeanTimeToAbsorption != *b.MeanTimeToAbsorption || len(b.Transient) != 2 {
		t.Errorf("round trip changed the chain:\n%s", c.YAML())
	}
}

func FuzzParseFaultLoad(f *testing.F) {
	f.Add([]byte("normal_throughput: 4965\nfaults:\n  - name: l\n    mttf: 4380h\n    mttr: 3m\n    stages: {A: {duration: 15s, throughput: 0}, C: {duration: until_repair, throughput: 3700}}\n"))
	f.Add([]byte("normal_throughput: 1\ngroups: {g: {mttf: 1h}}\nfaults: [{name: a, group: g, share: 0.5, stages: {B: {duration: 0s, throughput: 1}}}]\n"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := ParseFaultLoad("fuzz.yaml", data, nil)
		if err != nil {
			if !errors.Is(err, ErrBadInput) {
				t.Fatalf("error is not bad input: %v", err)
			}
			return
		}
		p := Evaluate(fl)
		if p.AverageThroughput != p.AverageThroughput { // NaN
			t.Fatalf("NaN average throughput for %q", data)
		}
	})
}

func FuzzParseChain(f *testing.F) {
	f.Add([]byte("states: [up3, up2, up1, down]\ninitial: up3\ntransitions: [{from: up3, to: up2, rate: 0.03}, {from: up2, to: up1, rate: 0.02}, {from: up1, to: down, rate: 0.01}, {from: up2, to: up3, rate: 1}]\nabsorbing: [down]\ntimes: [10]\n"))
	f.Add([]byte("states: [a, b]\ninitial: {a: 1}\ntransitions: [{from: a, to: b, rate: 1e-7}, {from: b, to: a, rate: 1e3}]\nrewards: {a: 1}\n"))
	f.Add([]byte("states: []"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseChain("fuzz.yaml", data)
		if err != nil {
			if !errors.Is(err, ErrBadInput) {
				t.Fatalf("error is not bad input: %v", err)
			}
			return
		}
		if len(c.States) > 50 {
			return
		}
		c.Times = nil // keep each input cheap
		if _, err := Solve(c); err != nil {
			t.Fatalf("solve: %v", err)
		}
	})
}
