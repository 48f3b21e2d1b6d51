package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/record"
)

// The etcd example end to end at half its length: a real three-member
// etcd cluster, its leader killed and restarted. Every answered read is
// classified, and etcd's linearizable reads mean none may be lost or
// phantom (a stale one is logged: etcd promises none either).
func TestEtcdKVLeaderCrashEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run; skipped with -short")
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		t.Skip("etcd is not installed (apt-get install etcd-server); CI installs it")
	}
	body, err := os.ReadFile("../../examples/etcd-kv-leader-crash.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Ports of this run's own, so parallel suites do not collide.
	ports := freePorts(t, 2, "127.0.0.11", "127.0.0.12", "127.0.0.13")
	client, peer := ports[0], ports[1]
	text := strings.ReplaceAll(string(body), ":2380", ":"+strconv.Itoa(peer))
	text = strings.Replace(text, "port: 2379", "port: "+strconv.Itoa(client), 1)
	if !strings.Contains(text, "port: "+strconv.Itoa(client)) || strings.Contains(text, ":2380") {
		t.Fatal("the example no longer has the ports this test replaces")
	}
	p := writeScenario(t, text)
	dir := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := run(t, "run", p, "--time-scale", "0.5", "--quiet", "-o", dir)
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
	kv := sum.KV
	if kv == nil {
		t.Fatal("summary.json has no kv section")
	}
	tot := kv.Total
	if tot.Reads == 0 || tot.WritesAcked == 0 {
		t.Fatalf("kv %+v: want reads and acknowledged writes", tot)
	}
	if tot.OK+tot.Stale+tot.Lost+tot.Phantom != tot.Reads {
		t.Errorf("kv %+v: a read left unclassified", tot)
	}
	if tot.Lost != 0 || tot.Phantom != 0 {
		t.Errorf("kv %+v: etcd lost an acknowledged write or invented a value", tot)
	}
	t.Logf("kv: %+v; outcomes %v", tot, sum.Overall.Outcomes)
	if len(kv.Faults) != 1 || len(kv.Windows) == 0 {
		t.Errorf("kv faults %+v, %d windows: want the leader crash and a window series", kv.Faults, len(kv.Windows))
	}
	events, err := os.ReadFile(filepath.Join(dir, record.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(events), `"kind":"node.down","node":1`) || !strings.Contains(string(events), `"kind":"node.up","node":1,"detail":"application started"`) {
		t.Errorf("events lack the leader's kill and restart:\n%s", events)
	}
	if _, err := os.Stat(filepath.Join(dir, record.ReportFile)); err != nil {
		t.Error(err)
	}
	checkElectionStall(t, dir, &sum)
}

// checkElectionStall wants the leader's loss in the windows: some window
// from the kill to the end of the fault phase has fewer ok answers than
// the warm-up's median window, or has timeouts. Node 1's own attempts
// fail while it is down, and the survivors' stall until they elect a
// leader, so this holds whatever the machine's speed; it asks nothing of
// how long anything took.
func checkElectionStall(t *testing.T, dir string, sum *analysis.Summary) {
	t.Helper()
	windows, _, err := record.ReadWindows(filepath.Join(dir, record.WindowsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Faults) == 0 {
		t.Fatal("summary.json has no fault")
	}
	injectS := sum.Faults[0].InjectS
	var warmupEnd, faultEnd float64
	sc := 0.0
	for _, name := range sum.Run.Phases {
		sc += sum.Phases[name].DurationS
		switch name {
		case "warmup":
			warmupEnd = sc
		case "fault":
			faultEnd = sc
		}
	}
	var warm []int64
	for _, w := range windows {
		if w.StartS+1e-9 >= 1 && w.StartS < warmupEnd-1e-9 { // the first second: connections being made
			warm = append(warm, w.Outcomes[record.OK])
		}
	}
	if len(warm) == 0 {
		t.Fatalf("no warm-up window before %.1f s", warmupEnd)
	}
	slices.Sort(warm)
	median := warm[len(warm)/2]
	var stalled []string
	for _, w := range windows {
		if w.StartS+1e-9 < injectS-0.5 || w.StartS >= faultEnd {
			continue
		}
		if ok, to := w.Outcomes[record.OK], w.Outcomes[record.Timeout]; ok < median || to > 0 {
			stalled = append(stalled, fmt.Sprintf("%.1fs: ok %d, timeout %d, conn_error %d", w.StartS, ok, to, w.Outcomes[record.ConnError]))
		}
	}
	if len(stalled) == 0 {
		t.Errorf("no window from the leader's kill (%.1f s) to the end of the fault phase (%.1f s) has fewer ok than the warm-up's median (%d) or a timeout", injectS, faultEnd, median)
	}
	t.Logf("warm-up median ok %d per window; windows that show the stall: %s", median, strings.Join(stalled, "; "))
}

// workload.kv's bad values are bad input naming the line and key.
func TestKVValidation(t *testing.T) {
	p := writeScenario(t, `cluster: {system: command, nodes: 1, port: 2379, command: ["true"]}
workload:
  driver: kv
  rate: 10
  kv:
    api: redis
    keys: -2
    reads: 1.5
    prefix: v3
phases: [{name: warmup, duration: 10s}]
`)
	_, stderr, code := run(t, "validate", p)
	if code != ExitBadInput {
		t.Fatalf("exit %d, want %d; stderr: %s", code, ExitBadInput, stderr)
	}
	for _, want := range []string{`s.yaml:6: workload.kv.api: api "redis" is unknown`, `s.yaml:7: workload.kv.keys`, `s.yaml:8: workload.kv.reads`, `s.yaml:9: workload.kv.prefix`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	p = writeScenario(t, `cluster: {system: command, nodes: 1, port: 2379, command: ["true"]}
workload: {rate: 10, trace: "zipf:1:1.0", kv: {keys: 2}}
phases: [{name: warmup, duration: 10s}]
`)
	if _, stderr, code = run(t, "validate", p); code != ExitBadInput || !strings.Contains(stderr, "kv configures driver: kv, not driver http") {
		t.Errorf("exit %d, stderr %s; want kv refused for the http driver", code, stderr)
	}
}
