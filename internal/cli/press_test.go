package cli

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/record"
)

// A press scenario with a single node, an unknown mode, an option the rig
// sets itself, a bad option value and a fault press cannot take is bad
// input, and every problem is named with its line.
func TestPressValidation(t *testing.T) {
	p := writeScenario(t, `cluster:
  system: press
  mode: fast
  nodes: 1
  options: {intra: "127.0.0.1:1", heartbeat: soon}
workload: {rate: 10}
phases: [{name: warmup, duration: 10s}]
faults:
  - {type: bitflip, node: 1, at: 1s, duration: 1s}
`)
	_, stderr, code := run(t, "validate", p)
	if code != ExitBadInput {
		t.Fatalf("exit %d, want %d; stderr: %s", code, ExitBadInput, stderr)
	}
	for _, want := range []string{
		"s.yaml:3: cluster.mode: press mode \"fast\"",
		"s.yaml:4: cluster.nodes: press needs at least 2 nodes",
		"cluster.options.intra: option intra is set by faultbench",
		"faults[0].type: fault bitflip cannot be injected by backend local into system press",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	// With the structural problems fixed, a bad option value is caught too.
	p = writeScenario(t, `cluster: {system: press, mode: ha, nodes: 2, options: {heartbeat: soon}}
workload: {rate: 10}
phases: [{name: warmup, duration: 10s}]
faults: [{type: link-down, node: 2, at: 1s, duration: 1s}]
`)
	if _, stderr, code = run(t, "validate", p); code != ExitBadInput || !strings.Contains(stderr, "s.yaml:1: cluster.options:") || !strings.Contains(stderr, "heartbeat") {
		t.Errorf("exit %d, stderr %s; want a cluster.options error naming heartbeat", code, stderr)
	}
}

// `faultbench node press` with a bad configuration is bad input (exit 2).
func TestPressNodeBadConfig(t *testing.T) {
	_, stderr, code := run(t, "node", "press", "--listen", "127.0.0.1:0", "--peers", "127.0.0.1:1,127.0.0.1:2", "--mode", "fast")
	if code != ExitBadInput || !strings.Contains(stderr, "press: bad config") {
		t.Errorf("exit %d, stderr %q; want exit %d and press: bad config", code, stderr, ExitBadInput)
	}
}

// pressTestPort picks the press nodes' base port for one end-to-end run:
// off the default 8080, where a user's own press run may be listening, and
// free on every node address at the three offsets press uses (clients,
// peers, control), so that two copies of this suite on one machine do not
// collide as they did on a fixed port.
func pressTestPort(t *testing.T) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(time.Now().UnixNano())))
	for try := 0; try < 50; try++ {
		port := 20000 + rng.IntN(7000)
		if pressPortFree(port) {
			return port
		}
	}
	t.Fatal("no free press base port in 20000-27000 after 50 tries")
	return 0
}

func pressPortFree(port int) bool {
	for i := 1; i <= 4; i++ {
		for _, off := range []int{0, 1000, 2000} {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.%d:%d", 10+i, port+off))
			if err != nil {
				return false
			}
			ln.Close()
		}
	}
	return true
}

// runPressExample runs examples/NAME.yaml at a time scale and 200 req/s on a
// free base port and returns its summary and directory, checking that no
// node process and no port is left behind.
func runPressExample(t *testing.T, name string, scale float64) (*analysis.Summary, string) {
	t.Helper()
	port := pressTestPort(t)
	body, err := os.ReadFile(filepath.Join("../../examples", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(body), "\n  nodes: 4", fmt.Sprintf("\n  nodes: 4\n  port: %d", port), 1)
	// A quarter of the examples' rate: the nodes are this test binary,
	// which under -race cannot serve 800 req/s on a shared 2-core machine;
	// the assertions are ratios, so the rate does not change them.
	text = strings.Replace(text, "\n  rate: 800\n", "\n  rate: 200\n", 1)
	p := writeScenario(t, text)
	dir := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := run(t, "run", p, "--time-scale", fmt.Sprint(scale), "--quiet", "-o", dir)
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	sum := readSummary(t, dir)
	if !sum.Complete {
		t.Fatal("summary marked incomplete")
	}
	if tok := controlToken(t, dir); tok != "" {
		t.Errorf("the control token appears in the results: %s", tok)
	}
	// Nothing left behind: no node process, every node port free.
	marker := fmt.Sprintf("127.0.0.11:%d", port)
	if pids := processesWith(marker); len(pids) > 0 {
		t.Errorf("node processes left behind: %v", pids)
	}
	for i := 1; i <= 4; i++ {
		for _, off := range []int{0, 1000, 2000} {
			addr := fmt.Sprintf("127.0.0.%d:%d", 10+i, port+off)
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				t.Errorf("port left in use after the run: %v", err)
				continue
			}
			ln.Close()
		}
	}
	return &sum, dir
}

// controlToken returns a 32-hex-digit string found in the run's events or
// scenario, if any: the per-run token must stay out of the results.
func controlToken(t *testing.T, dir string) string {
	for _, f := range []string{record.EventsFile, record.ScenarioFile} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		if i := strings.Index(string(b), "token"); i >= 0 {
			return string(b[i:min(len(b), i+60)])
		}
	}
	return ""
}

func processesWith(s string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			out = append(out, e.Name())
		}
	}
	return out
}

func phaseYield(t *testing.T, sum *analysis.Summary, phase string) float64 {
	t.Helper()
	m, ok := sum.Phases[phase]
	if !ok || m.Attempts == 0 {
		t.Fatalf("no attempts in phase %s", phase)
	}
	return float64(m.Outcomes["ok"]) / float64(m.Attempts)
}

// HA-PRESS loses one server of four: the others reconfigure and serve, so
// about 3/4 of the requests succeed until the operator's restart, after
// which the node rejoins and all succeed again (Broadwell 2004, Fig. 10).
func TestPressHAAppCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run; skipped with -short")
	}
	sum, _ := runPressExample(t, "press-ha-app-crash", 0.15)
	fault := phaseYield(t, sum, "fault")
	if fault < 0.6 || fault > 0.85 {
		t.Errorf("fault phase: %.3f of requests ok, want about 3/4", fault)
	}
	// Nearly all before and after; the bound is loose (and relative to the
	// fault phase) because the nodes are this test binary under -race on a
	// shared machine: at load average 14, 0.96 of the warm-up's requests
	// were ok.
	for _, ph := range []string{"warmup", "post"} {
		if y := phaseYield(t, sum, ph); y < 0.9 || y < fault+0.1 {
			t.Errorf("%s phase: %.3f of requests ok, want nearly all (fault phase %.3f)", ph, y, fault)
		}
	}
}

// A hang of one Perf-PRESS server stalls every server that waits on it:
// the whole cluster's throughput falls to about zero for the hang and
// returns once it ends (Broadwell 2004, Fig. 13).
func TestPressPerfAppHang(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run; skipped with -short")
	}
	sum, dir := runPressExample(t, "press-perf-app-hang", 0.2)
	// Requests scheduled during the hang (60 s..90 s, scaled), to any node.
	var during, ok int
	err := record.ReadRequests(dir, func(r record.Request) error {
		if r.StartS >= 0.2*62 && r.StartS < 0.2*88 {
			during++
			if r.Outcome == record.OK {
				ok++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if during == 0 || float64(ok)/float64(during) > 0.15 {
		t.Errorf("during the hang %d of %d requests ok, want about none", ok, during)
	}
	// Back once the hang ends. Loosely: at load average 14 only 0.88 of
	// the post phase's requests were ok (the nodes run under -race).
	if y := phaseYield(t, sum, "post"); y < 0.75 {
		t.Errorf("post phase: %.3f of requests ok, want most", y)
	}
}
