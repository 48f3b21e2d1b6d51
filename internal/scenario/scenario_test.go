package scenario

import (
	"strings"
	"testing"
	"time"
)

const good = `name: t
seed: 7
cluster: {system: static, nodes: 4}
workload: {rate: 100, clients: 2}
phases:
  - {name: warmup, duration: 10s}
  - {name: fault, duration: 20s}
faults:
  - {type: app-hang, node: 2, at: 12s, duration: 5s}
  - {type: app-crash, node: any, at: 20s, mode: sticky, every: "poisson(30s)"}
operator: {detect_after: 3s, response: "exponential(2s)"}
`

func TestParseFillsDefaults(t *testing.T) {
	sc, err := Parse([]byte(good), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Seed != 7 || sc.Workload.Window.Duration != DefaultWindow || sc.Workload.ConnectTimeout.Duration != 2*time.Second ||
		sc.Workload.ResponseTimeout.Duration != 6*time.Second || sc.Workload.Arrivals != "poisson" || sc.Operator.Policy != "restart-failed" {
		t.Fatalf("defaults not applied: %+v", sc)
	}
	if sc.Baseline != "warmup" || sc.Faults[0].Mode != "transient" {
		t.Fatalf("defaults not applied: baseline %q mode %q", sc.Baseline, sc.Faults[0].Mode)
	}
	// The page set and the trace it implies are the system's defaults
	// (testbed.Resolve): Load leaves them, and CheckTrace says so.
	if sc.Cluster.Pages != 0 || sc.Workload.Trace != "" {
		t.Fatalf("system defaults applied by Load: pages %d trace %q", sc.Cluster.Pages, sc.Workload.Trace)
	}
	if err := sc.CheckTrace(); err == nil || !strings.Contains(err.Error(), "t.yaml:4: workload: trace is required for system: static") {
		t.Fatalf("CheckTrace before resolving: %v", err)
	}
	if !sc.Faults[1].Node.Any || sc.Length() != 30*time.Second || sc.PhaseAt(12*time.Second) != 1 {
		t.Fatalf("bad node/length/phase: %+v", sc)
	}
	noSeed, err := Parse([]byte(strings.Replace(good, "seed: 7\n", "", 1)), "t.yaml")
	if err != nil || noSeed.Seed != DefaultSeed {
		t.Fatalf("seed default: %v %v", noSeed, err)
	}
	// Marshalled and parsed again, it is the same scenario.
	b, err := sc.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(b, "t.yaml")
	if err != nil {
		t.Fatalf("re-parse of marshalled scenario: %v\n%s", err, b)
	}
	b2, _ := back.Marshal()
	if string(b) != string(b2) {
		t.Fatalf("marshal not stable:\n%s\n---\n%s", b, b2)
	}
}

func TestErrorsNameLineAndKey(t *testing.T) {
	cases := []struct{ edit, want string }{
		{"clients: 2}", "t.yaml:4: unknown key \"clientz\" in workload"},
		{"rate: 100", "t.yaml:4: workload.rate: rate -5"},
		{"duration: 20s}", "t.yaml:7: \"20\" has no unit"},
		{"type: app-hang", "t.yaml:9: faults[0].type: unknown fault type \"app-hung\""},
		{"node: 2,", "t.yaml:9: faults[0].node: node 9 does not exist"},
		{"at: 12s", "t.yaml:9: faults[0].at: 40s is at or after the end"},
		{`"poisson(30s)"`, "t.yaml:10: faults[1].every: law \"weekly(30s)\""},
		{"detect_after: 3s", "t.yaml:11: \"3\" has no unit"},
		{"nodes: 4", "t.yaml:3: \"four\" is a str, want a whole number"},
	}
	repl := map[string]string{
		"clients: 2}":      "clientz: 2}",
		"rate: 100":        "rate: -5",
		"duration: 20s}":   "duration: 20}",
		"type: app-hang":   "type: app-hung",
		"node: 2,":         "node: 9,",
		"at: 12s":          "at: 40s",
		`"poisson(30s)"`:   `"weekly(30s)"`,
		"detect_after: 3s": "detect_after: 3",
		"nodes: 4":         "nodes: four",
	}
	for _, c := range cases {
		in := strings.Replace(good, c.edit, repl[c.edit], 1)
		_, err := Parse([]byte(in), "t.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("edit %q: got error %v, want it to contain %q", c.edit, err, c.want)
		}
	}
}

func TestEveryProblemIsReported(t *testing.T) {
	in := "cluster: {nodes: 0}\nworkload: {rate: 0}\nphases: []\n"
	_, err := Parse([]byte(in), "x.yaml")
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"x.yaml:1: cluster.nodes", "x.yaml:2: workload.rate", "x.yaml:3: phases"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestScaled(t *testing.T) {
	sc, err := Parse([]byte(good), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := sc.Scaled(0.1)
	if s.Length() != 3*time.Second || s.Faults[0].At.Duration != 1200*time.Millisecond || s.Faults[1].Every != "poisson(3s)" ||
		s.Operator.Response != "exponential(200ms)" || s.Workload.Window.Duration != 500*time.Millisecond || s.Workload.Rate != 100 {
		t.Fatalf("scaled wrongly: %+v", s)
	}
	if sc.Length() != 30*time.Second {
		t.Fatal("Scaled changed the original")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte("cluster: {system: command, nodes: 2, command: [x], port: 80}\nworkload: {rate: 1, trace: \"paths:a\"}\nphases: [{name: a, duration: 1s}]\n"))
	f.Add([]byte("- 1\n- 2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse(data, "fuzz.yaml")
		if err != nil {
			return
		}
		// A valid scenario marshals and parses again.
		b, err := sc.Marshal()
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		if _, err := Parse(b, "fuzz.yaml"); err != nil {
			t.Fatalf("valid scenario does not re-parse: %v\n%s", err, b)
		}
	})
}

// pacing_tick is read, kept through --time-scale (it is the generator's
// resolution, not the experiment's length), and bounded.
func TestPacingTick(t *testing.T) {
	in := strings.Replace(good, "workload: {rate: 100, clients: 2}", "workload: {rate: 100, clients: 2, pacing_tick: 1ms}", 1)
	sc, err := Parse([]byte(in), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Workload.PacingTick.Duration != time.Millisecond || sc.Scaled(0.1).Workload.PacingTick.Duration != time.Millisecond {
		t.Fatalf("pacing_tick %v, scaled %v; want 1ms both", sc.Workload.PacingTick, sc.Scaled(0.1).Workload.PacingTick)
	}
	for tick, want := range map[string]string{
		"1s":   "t.yaml:4: workload.pacing_tick: 1s: want a tick between 10µs and 100ms",
		"1us":  "t.yaml:4: workload.pacing_tick: 1µs: want a tick between",
		"-1ms": "t.yaml:4: -1ms is negative",
	} {
		in := strings.Replace(good, "clients: 2}", "clients: 2, pacing_tick: "+tick+"}", 1)
		if _, err := Parse([]byte(in), "t.yaml"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("pacing_tick %s: got %v, want …%s…", tick, err, want)
		}
	}
	closed := "cluster: {system: static, nodes: 1}\nphases: [{name: a, duration: 10s}]\nworkload: {model: closed, pacing_tick: 1ms, trace: \"zipf:10:1.0\"}\n"
	if _, err := Parse([]byte(closed), "c.yaml"); err == nil || !strings.Contains(err.Error(), "c.yaml:3: workload.pacing_tick: pacing_tick paces scheduled arrivals") {
		t.Errorf("closed loop with pacing_tick: %v", err)
	}
}
