package reproduce

import (
	"strings"
	"testing"
)

func TestRegistryLoads(t *testing.T) {
	papers, err := Papers()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"brown00", "nagaraja02", "broadwell04", "ling04", "dumitras05"}
	if got := strings.Join(Keys(papers), ","); got != strings.Join(want, ",") {
		t.Fatalf("papers %s, want %s (in the order of their years)", got, strings.Join(want, ","))
	}
	for _, p := range papers {
		if len(p.Experiments) == 0 || len(p.Claims) == 0 {
			t.Errorf("%s: %d experiments, %d claims", p.Key, len(p.Experiments), len(p.Claims))
		}
		for _, e := range p.Experiments {
			if e.Kind() != KindModel && e.Repetitions < 3 {
				t.Errorf("%s/%s: %d repetitions; runs are repeated at least three times", p.Key, e.ID, e.Repetitions)
			}
		}
		for _, c := range p.Claims {
			// Every experiment's claims must be judgeable: a measured
			// claim names a run (Parse filled it in) and a why.
			if c.Measure != nil && (c.Measure.Run == "" || c.Tolerance.Why == "") {
				t.Errorf("%s %s: measure without run or why", p.Key, c.ID)
			}
		}
	}
}

const goodPaper = `paper: test99
cite: Test (1999)
title: A paper
experiments:
  - id: runs
    examples: [examples/a.yaml, examples/b.yaml]
    time_scale: 0.2
  - id: models
    model:
      - {id: loss, args: [session-loss, --wq, "2", --rho, "10"]}
claims:
  - id: cls
    location: "Table 1, row"
    published: C-1
    rule: class
    tolerance: {why: same letter is close}
    measure: {experiment: runs, run: a, key: faults.0.class}
  - id: num
    location: "§3"
    published: 0.5
    rule: number
    tolerance: {rel: 0.1, why: a tenth}
    measure: {experiment: models, key: p_loss}
  - id: rng
    location: "§4"
    published: [7, .inf]
    rule: range
    tolerance: {close_rel: 0.25, why: over seven}
    measure:
      experiment: runs
      run: a
      events: {from: fault.inject, to: system.x}
      per: {experiment: runs, run: b, events: {from: fault.inject, to: system.x}}
  - id: built
    location: "§5"
    published: paranoid
    basis: the policy
  - id: missing
    location: "§6"
    published: 3
    missing: no example yet
`

func TestParseGood(t *testing.T) {
	p, err := Parse([]byte(goodPaper), "papers/test99.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p.Experiment("runs").Repetitions != DefaultRepetitions || p.Experiment("models").Repetitions != 1 {
		t.Errorf("default repetitions: %d, %d", p.Experiment("runs").Repetitions, p.Experiment("models").Repetitions)
	}
	if got := p.Claims[1].Measure.Run; got != "loss" {
		t.Errorf("the only run of an experiment is filled in: %q", got)
	}
	if s := p.Claims[2].Published.String(); s != "≥ 7" {
		t.Errorf("open range prints %q", s)
	}
	if p.Claims[0].Line != 12 {
		t.Errorf("claim line %d, want 12", p.Claims[0].Line)
	}
}

func TestParseErrorsNameLineAndKey(t *testing.T) {
	cases := []struct {
		name, from, to, want string
	}{
		{"unknown key", "    rule: class\n", "    rule: class\n    colour: red\n", "line 16: field colour not found"},
		{"unknown experiment", "experiment: runs, run: a, key: faults.0.class", "experiment: nope, run: a, key: faults.0.class", `test99.yaml:17: claims[0] (cls).measure.experiment: "nope" is not an experiment of test99 (have: runs, models)`},
		{"unknown run", "experiment: runs, run: a, key", "experiment: runs, run: c, key", `claims[0] (cls).measure.run: "c" is not a run of experiment runs (have: a, b)`},
		{"run needed", "experiment: runs, run: a, key", "experiment: runs, key", "test99.yaml:17: claims[0] (cls).measure.run: missing: experiment runs has 2 runs (a, b): name one"},
		{"bad class", "published: C-1", "published: C-3", `"C-3": rule class wants a behaviour class`},
		{"number without tolerance", "tolerance: {rel: 0.1, why: a tenth}", "tolerance: {why: a tenth}", "rule number wants abs or rel"},
		{"no why", "tolerance: {rel: 0.1, why: a tenth}", "tolerance: {rel: 0.1}", "tolerance.why: missing"},
		{"two modes", "    basis: the policy\n", "    basis: the policy\n    missing: also\n", "test99.yaml:34: claims[3] (built): give exactly one of measure"},
		{"bad path", "key: faults.0.class", "key: faults..class", "empty step"},
		{"bad range", "published: [7, .inf]", "published: [8, 7]", "a range is [lo, hi] with lo ≤ hi"},
		{"model repetitions", "  - id: models\n", "  - id: models\n    repetitions: 3\n", "a model command is deterministic"},
		{"json flag", `args: [session-loss, --wq, "2", --rho, "10"]`, `args: [session-loss, --json]`, "--json is added by reproduce"},
		{"duplicate experiment", "  - id: models\n", "  - id: runs\n", `"runs" is used twice`},
		{"bad scale", "time_scale: 0.2", "time_scale: -1", "time_scale: -1: want a factor above 0"},
		{"paper key", "paper: test99", "paper: Test", `paper: "Test": want the first author's name`},
		{"key and answered", "key: faults.0.class}", "key: faults.0.class, answered: {from: fault.inject, to: system.x}}", "claims[0] (cls).measure: give key (a path into the run's JSON), events (from, to), answered (from, to), drop (from, to), largest (param, key, bound) or falls (param, key, at_most), one of them"},
		{"largest on examples", "key: faults.0.class}", "largest: {param: workload.users, key: throughput_mean_per_s, at_least: 1}}", "measure.largest: a capacity is read from a sweep's configurations"},
		{"largest without bound", "experiment: models, key: p_loss}", "experiment: models, largest: {param: workload.users, key: throughput_mean_per_s}}", "give at_least or at_most, one of them"},
		{"falls on examples", "key: faults.0.class}", "falls: {param: workload.users, key: throughput_mean_per_s, at_most: 0.5}}", "measure.falls: a fall is read from a sweep's configurations"},
		{"falls without share", "experiment: models, key: p_loss}", "experiment: models, falls: {param: workload.users, key: throughput_mean_per_s}}", "measure.falls.at_most: 0: want the share of the peak"},
		{"config on examples", "key: faults.0.class}", "key: faults.0.class, config: 2}", "measure.config: 2: want a configuration's number (1, 2, ...) with key, on an experiment of a sweep"},
		{"answered on models", "experiment: models, key: p_loss}", "experiment: models, answered: {from: fault.inject, to: system.x}}", "measure.answered: want from and to (event kinds), on an experiment of examples"},
		{"events on models", "events: {from: fault.inject, to: system.x}}", "events: {from: fault.inject, to: system.x}}\n      unscale: true", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := strings.Replace(goodPaper, tc.from, tc.to, 1)
			if data == goodPaper {
				t.Fatalf("the case changes nothing: %q not in the paper", tc.from)
			}
			_, err := Parse([]byte(data), "papers/test99.yaml")
			if err == nil {
				if tc.want == "" {
					return
				}
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "test99.yaml:") {
				t.Fatalf("error %q, want it to contain %q and the file", err, tc.want)
			}
		})
	}
}
