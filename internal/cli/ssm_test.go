package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/record"
)

// An SSM scenario with a write quota above the write group, a read group
// above it, an option the rig sets itself, a bad Pinpoint switch and a
// bit flip aimed at the front end is bad input, each named with its line.
func TestSSMValidation(t *testing.T) {
	p := writeScenario(t, `cluster:
  system: ssm
  nodes: 4
  options:
    w: "2"
    wq: "3"
    r: "4"
    control_token: "x"
    pinpoint: maybe
workload: {driver: ssm, rate: 10}
phases: [{name: warmup, duration: 10s}]
faults:
  - {type: bitflip, node: 1, at: 1s, duration: 1s}
`)
	_, stderr, code := run(t, "validate", p)
	if code != ExitBadInput {
		t.Fatalf("exit %d, want %d; stderr: %s", code, ExitBadInput, stderr)
	}
	for _, want := range []string{
		`s.yaml:6: cluster.options.wq: wq 3 > w 2`,
		`s.yaml:7: cluster.options.r: r 4 > w 2`,
		`s.yaml:8: cluster.options.control_token: option control_token is set by faultbench`,
		`s.yaml:9: cluster.options.pinpoint: pinpoint "maybe"`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	p = writeScenario(t, `cluster: {system: ssm, nodes: 3}
workload: {rate: 10, trace: "zipf:10:1.0"}
phases: [{name: warmup, duration: 10s}]
`)
	if _, stderr, code = run(t, "validate", p); code != ExitBadInput || !strings.Contains(stderr, "workload.driver: driver http: an ssm cluster's front ends serve the session protocol") {
		t.Errorf("exit %d, stderr %s; want the http driver refused for ssm", code, stderr)
	}
	p = writeScenario(t, `cluster: {system: ssm, nodes: 2, options: {wq: "2", aimd: perhaps}}
workload: {driver: ssm, rate: 10}
phases: [{name: warmup, duration: 10s}]
faults: [{type: bitflip, node: 1, at: 1s, duration: 1s}]
`)
	_, stderr, code = run(t, "validate", p)
	if code != ExitBadInput || !strings.Contains(stderr, "cluster.options.wq: wq 2 needs at least 2 bricks; the cluster has 1") {
		t.Errorf("exit %d, stderr %s; want too few bricks for wq", code, stderr)
	}
	// The passive style: wq and r do not apply, and a style is one of two.
	p = writeScenario(t, `cluster:
  system: ssm
  nodes: 4
  options: {style: passive, wq: "2", r: "1", w: "3", replicas: "127.0.0.1:1", pinpoint: "on"}
workload: {driver: ssm, rate: 10}
phases: [{name: warmup, duration: 10s}]
`)
	_, stderr, code = run(t, "validate", p)
	for _, want := range []string{
		`s.yaml:4: cluster.options.wq: wq "2" does not apply to style passive`,
		`s.yaml:4: cluster.options.replicas: option replicas is set by faultbench`,
		`s.yaml:4: cluster.options.pinpoint: pinpoint compares every brick's reads and writes`,
	} {
		if code != ExitBadInput || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, stderr lacks %q:\n%s", code, want, stderr)
		}
	}
	if strings.Contains(stderr, "cluster.options.r:") {
		t.Errorf("r: \"1\" refused for style passive:\n%s", stderr)
	}
	p = writeScenario(t, `cluster: {system: ssm, nodes: 4, options: {style: warm}}
workload: {driver: ssm, rate: 10}
phases: [{name: warmup, duration: 10s}]
`)
	if _, stderr, code = run(t, "validate", p); code != ExitBadInput || !strings.Contains(stderr, `s.yaml:1: cluster.options.style: style "warm": want active`) {
		t.Errorf("exit %d, stderr %s; want style warm refused", code, stderr)
	}
	p = writeScenario(t, `cluster: {system: ssm, nodes: 4, options: {style: passive, w: "2", backup_interval: 5ms}}
workload: {driver: ssm, rate: 10}
phases: [{name: warmup, duration: 10s}]
`)
	if _, stderr, code = run(t, "validate", p); code != ExitOK {
		t.Errorf("a passive scenario: exit %d, stderr %s", code, stderr)
	}
	p = writeScenario(t, `cluster: {system: ssm, nodes: 3, options: {aimd: perhaps}}
workload: {driver: ssm, rate: 10}
phases: [{name: warmup, duration: 10s}]
faults: [{type: bitflip, node: 1, at: 1s, duration: 1s}]
`)
	_, stderr, code = run(t, "validate", p)
	for _, want := range []string{"s.yaml:1: cluster.options:", "aimd", "s.yaml:4: faults[0].node: bitflip acts on a brick's memory, and node 1 is a front end"} {
		if code != ExitBadInput || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, stderr lacks %q:\n%s", code, want, stderr)
		}
	}
}

// ssmTestPort keeps the end-to-end runs off the default 8080.
const ssmTestPort = "28190"

// §5.1 end to end: four bricks, one killed and restarted under load; no
// session is lost or corrupt (a lost session would be a data_error).
//
// The paper's performance claims — no request fails, the fault phase's
// throughput within 10% of the warm-up's — hold in the example's own runs
// (docs/ssm.md) but depend on the machine keeping up with SSM's unscaled
// 60 ms timeout; a CI run under -race at load average 14 saw 0.6% of
// requests fail, a later one 8%. So the test runs with a longer timeout
// and a lower rate, logs them and only bounds the failures
// loosely; what it insists on is the design's: no data_error, ever.
func TestSSMBrickKillEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run; skipped with -short")
	}
	body, err := os.ReadFile("../../examples/ssm-brick-kill.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(body), "\n  nodes: 5", "\n  nodes: 5\n  port: "+ssmTestPort, 1)
	// The bricks are this test binary, race-built: give them a stub timeout
	// and a rate a starved host can keep (with the example's 60 ms and
	// 450/s, 8% of requests failed under -race). Neither changes what W=3,
	// WQ=2, R=2 guarantee, which is what this test insists on.
	text = strings.Replace(text, "timeout: 60ms", "timeout: 500ms", 1)
	text = strings.Replace(text, "\n  rate: 450\n", "\n  rate: 200\n", 1)
	if !strings.Contains(text, "timeout: 500ms") || !strings.Contains(text, "rate: 200") {
		t.Fatal("the example no longer has the timeout and rate this test lowers")
	}
	p := writeScenario(t, text)
	dir := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := run(t, "run", p, "--time-scale", "0.25", "--quiet", "-o", dir)
	// The example's goodput threshold is the paper's shape, which a starved
	// host (or -race) can miss: exit 3 still leaves results to bound below.
	if code != ExitOK && code != ExitThreshold {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	raw, err := os.ReadFile(filepath.Join(dir, record.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var sum analysis.Summary
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	o := sum.Overall.Outcomes
	if o["data_error"] != 0 || o["ok"] == 0 {
		t.Fatalf("outcomes %+v: want no lost or corrupt session", o)
	}
	if failed := sum.Overall.Attempts - o["ok"]; failed*10 > sum.Overall.Attempts {
		t.Errorf("outcomes %+v: more than 10%% of requests failed", o)
	} else {
		t.Logf("%d of %d requests failed (the paper: none)", failed, sum.Overall.Attempts)
	}
	warm, fault := float64(sum.Phases["warmup"].ThroughputMeanPerS), float64(sum.Phases["fault"].ThroughputMeanPerS)
	t.Logf("fault-phase throughput %.1f/s, warm-up %.1f/s (ratio %.3f; the paper: within 10%%)", fault, warm, fault/warm)
	events, err := os.ReadFile(filepath.Join(dir, record.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(events), `"kind":"node.down","node":3`) || !strings.Contains(string(events), `"kind":"node.up","node":3,"detail":"application started"`) {
		t.Errorf("events lack brick 3's kill and restart:\n%s", events)
	}
}
