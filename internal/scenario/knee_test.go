package scenario

import (
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/knee"
)

const withKnee = `name: k
cluster: {system: static, nodes: 2}
workload:
  clients: 2
  knee:
    start: 100
    step_time: 2s
phases: [{name: warmup, duration: 10s}]
`

func TestKneeDefaultsAndScaling(t *testing.T) {
	sc, err := Parse([]byte(withKnee), "k.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := *sc.KneeConfig()
	want := knee.Default
	want.Start, want.StepTime = 100, 2*time.Second
	if got != want {
		t.Fatalf("knee %+v, want %+v", got, want)
	}
	if sc.Workload.Rate != 0 {
		t.Errorf("rate %v before the search, want 0", sc.Workload.Rate)
	}
	s := sc.Scaled(0.1)
	if k := s.Workload.Knee; k.StepTime.Duration != 200*time.Millisecond || k.P99.Duration != 100*time.Millisecond || k.Start != 100 {
		t.Errorf("scaled knee %+v: durations scale, rates do not", k)
	}
	if sc.Workload.Knee.StepTime.Duration != 2*time.Second {
		t.Error("Scaled changed the original's knee")
	}
	// validate's output shows every setting and parses again to the same.
	b, err := sc.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"start: 100", "max: 20000", "factor: 1.5", "refine: 3", "step_time: 2s", "goodput: 0.99", "p99: 1s", "fraction: 0.9"} {
		if !strings.Contains(string(b), key) {
			t.Errorf("marshalled scenario lacks %q:\n%s", key, b)
		}
	}
	back, err := Parse(b, "k.yaml")
	if err != nil || *back.KneeConfig() != got {
		t.Fatalf("re-parse: %v, %+v", err, back.KneeConfig())
	}
	// `knee:` alone is a search with every default.
	bare, err := Parse([]byte(strings.Replace(withKnee, "    start: 100\n    step_time: 2s\n", "", 1)), "k.yaml")
	if err != nil || *bare.KneeConfig() != knee.Default {
		t.Fatalf("bare knee: %v %+v", err, bare)
	}
	if n, bound := got.MaxSteps(), sc.KneeBound(); n != 25 || bound != time.Duration(n)*(2*time.Second+8*time.Second) {
		t.Errorf("bound %v", bound)
	}
}

func TestKneeErrorsNameLineAndKey(t *testing.T) {
	cases := []struct{ edit, repl, want string }{
		{"    start: 100\n", "    start: 0\n", "k.yaml:6: workload.knee.start: 0: want the first rate"},
		{"    start: 100\n", "    start: 100\n    max: 50\n", "k.yaml:7: workload.knee.max: 50"},
		{"    start: 100\n", "    factor: 1\n", "k.yaml:6: workload.knee.factor: 1:"},
		{"    start: 100\n", "    refine: 11\n", "k.yaml:6: workload.knee.refine: 11"},
		{"    step_time: 2s\n", "    step_time: 0s\n", "k.yaml:7: workload.knee.step_time: want a positive duration"},
		{"    step_time: 2s\n", "    step_time: 2\n", "k.yaml:7: \"2\" has no unit"},
		{"    start: 100\n", "    goodput: 1.2\n", "k.yaml:6: workload.knee.goodput: 1.2"},
		{"    start: 100\n", "    p99: 9s\n", "k.yaml:6: workload.knee.p99: 9s: want a latency bound above 0 and below connect_timeout + response_timeout (8s)"},
		{"    start: 100\n", "    fraction: 0\n", "k.yaml:6: workload.knee.fraction: 0"},
		{"    start: 100\n", "    strat: 100\n", "k.yaml:6: unknown key \"strat\" in workload.knee"},
		{"    start: 100\n", "    start: 1\n    max: 1000000\n    factor: 1.1\n", "k.yaml:5: workload.knee: start 1, max 1e+06, factor 1.1 and refine 3 could take"},
		{"  clients: 2\n", "  clients: 2\n  rate: 300\n", "k.yaml:5: workload.rate: rate 300 and knee are both given"},
	}
	for _, c := range cases {
		in := strings.Replace(withKnee, c.edit, c.repl, 1)
		_, err := Parse([]byte(in), "k.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got error %v, want it to contain %q", c.repl, err, c.want)
		}
	}
	// Without knee, a missing rate says how to get one.
	_, err := Parse([]byte(strings.Replace(withKnee, "  knee:\n    start: 100\n    step_time: 2s\n", "", 1)), "k.yaml")
	if err == nil || !strings.Contains(err.Error(), "or a knee: section to find it") {
		t.Errorf("no rate, no knee: %v", err)
	}
}
