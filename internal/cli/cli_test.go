package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/record"
)

// TestMain lets the test binary act as `faultbench node KIND`: the local
// testbed starts nodes by running its own executable with "node ...".
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "node" {
		os.Exit(ExitCode(Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)))
	}
	os.Exit(m.Run())
}

func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := Run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), ExitCode(err)
}

// readSummary reads the summary.json of results directory dir.
func readSummary(t *testing.T, dir string) analysis.Summary {
	t.Helper()
	var sum analysis.Summary
	b, err := os.ReadFile(filepath.Join(dir, record.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	return sum
}

func writeScenario(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkQuickstartRecord checks a quickstart run's record (any backend):
// the summary is complete, the hang on node 2 shows as timeouts on node 2,
// the crash on node 3 as refused connections on node 3, and nothing else
// fails. It returns the summary.
func checkQuickstartRecord(t *testing.T, dir string) analysis.Summary {
	t.Helper()
	sum := readSummary(t, dir)
	if !sum.Complete || sum.Run.Attempts == 0 {
		t.Fatalf("summary incomplete or empty: %+v", sum.Run)
	}
	var hangTimeouts, crashRefused, otherFailures int
	others := map[string]int{} // outcome/node/generator flags of the unexplained
	err := record.ReadRequests(dir, func(r record.Request) error {
		switch {
		case r.Outcome == record.OK:
		case r.Outcome == record.Timeout && r.Node == 2:
			hangTimeouts++
		case r.Outcome == record.ConnError && r.Node == 3:
			crashRefused++
		default:
			otherFailures++
			others[fmt.Sprintf("%s node %d refused=%q cut=%v", r.Outcome, r.Node, r.Refused, r.CutShort)]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if hangTimeouts == 0 || crashRefused == 0 {
		t.Errorf("fault effects missing: %d timeouts on node 2, %d refused on node 3", hangTimeouts, crashRefused)
	}
	if otherFailures > 0 {
		t.Errorf("%d failures that no fault explains: %v", otherFailures, others)
	}
	return sum
}

func TestQuickstartEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run; skipped with -short")
	}
	dir := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := run(t, "run", "../../examples/quickstart.yaml", "--time-scale", "0.25", "-o", dir)
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	for _, f := range []string{record.ScenarioFile, record.RequestsFile, record.WindowsFile, record.EventsFile, record.SummaryFile, record.ReportFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	sum := checkQuickstartRecord(t, dir)
	events, err := record.ReadEvents(filepath.Join(dir, record.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, e := range events {
		kinds[e.Kind]++
	}
	for _, k := range []string{"phase.start", "fault.inject", "fault.clear", "operator.detect", "operator.action", "node.down", "node.up"} {
		if kinds[k] == 0 {
			t.Errorf("no %s event in %v", k, kinds)
		}
	}
	if len(sum.Faults) != 2 {
		t.Errorf("summary has %d faults, want 2", len(sum.Faults))
	}

	// export --csv writes the same rows.
	csvPath := filepath.Join(t.TempDir(), "r.csv")
	if _, stderr, code := run(t, "export", dir, "--csv", "-o", csvPath); code != 0 {
		t.Fatalf("export exit %d: %s", code, stderr)
	}
	var n int64
	f, _ := os.Open(csvPath)
	defer f.Close()
	if err := record.ReadCSV(f, csvPath, func(record.Request) error { n++; return nil }); err != nil || n != sum.Run.Attempts {
		t.Errorf("export wrote %d rows (%v), summary counts %d", n, err, sum.Run.Attempts)
	}
}

const tiny = `
name: tiny
cluster: {system: static, nodes: 1, pages: 10, page_size: 100}
workload: {rate: 20}
phases: [{name: only, duration: 1s}]
`

func TestBadInputExitsTwoWithLocatedError(t *testing.T) {
	cases := map[string]string{
		strings.Replace(tiny, "rate: 20", "rate: 20, burst: 3", 1): `s.yaml:4: unknown key "burst" in workload`,
		tiny + "faults: [{type: disk-melt, node: 1, at: 0s}]\n":    `s.yaml:6: faults[0].type: unknown fault type "disk-melt"`,
		tiny + "thresholds: [\"p99 <\"]\n":                         `s.yaml:6: thresholds[0]`,
		strings.Replace(tiny, "duration: 1s", "duration: soon", 1): `s.yaml:5: "soon" is not a duration`,
	}
	for body, want := range cases {
		_, stderr, code := run(t, "validate", writeScenario(t, body))
		if code != ExitBadInput || !strings.Contains(stderr, want) {
			t.Errorf("validate: exit %d, stderr %q; want exit 2 and %q", code, stderr, want)
		}
		if strings.Contains(stderr, "goroutine") {
			t.Errorf("stack trace in %q", stderr)
		}
	}
	if _, _, code := run(t, "run", "no-such.yaml"); code != ExitBadInput {
		t.Errorf("missing file: exit %d, want 2", code)
	}
	if _, _, code := run(t, "run", writeScenario(t, tiny), "--time-scale", "-1"); code != ExitBadInput {
		t.Errorf("bad --time-scale: exit %d, want 2", code)
	}
	if _, _, code := run(t, "frobnicate"); code != ExitBadInput {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
}

func TestRunFailuresExitOne(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	busy, err := net.Listen("tcp", "127.0.0.11:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	cases := map[string]string{
		"port in use": strings.Replace(tiny, "nodes: 1,", "nodes: 1, port: "+strconv.Itoa(port)+",", 1),
		"exits at once": `
cluster: {system: command, nodes: 1, port: 18080, command: ["sh", "-c", "echo cannot start >&2; exit 3"]}
workload: {rate: 10, trace: "zipf:10:1.0"}
phases: [{name: only, duration: 1s}]
`,
		"never ready": `
cluster: {system: command, nodes: 1, port: 18081, ready: /health, ready_timeout: 1s, command: ["sleep", "30"]}
workload: {rate: 10, trace: "zipf:10:1.0"}
phases: [{name: only, duration: 1s}]
`,
	}
	for name, body := range cases {
		_, stderr, code := run(t, "run", writeScenario(t, body), "-o", filepath.Join(t.TempDir(), "out"), "--quiet")
		if code != ExitFailed || strings.Count(strings.TrimSpace(stderr), "\n") > 0 || !strings.Contains(stderr, "node 1") {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line naming node 1", name, code, stderr)
		}
	}
}

func TestInterruptRevertsFaultsAndKeepsRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	// A port of the test's own: other tests and runs on this machine may
	// listen on 127.0.0.11 too, so only this cluster's port is checked.
	free, err := net.Listen("tcp", "127.0.0.11:0")
	if err != nil {
		t.Fatal(err)
	}
	port := free.Addr().(*net.TCPAddr).Port
	free.Close()
	body := `
name: interrupted
cluster: {system: static, nodes: 2, port: ` + strconv.Itoa(port) + `, pages: 10, page_size: 100}
workload: {rate: 100, window: 500ms}
phases: [{name: warmup, duration: 1s}, {name: fault, duration: 60s}]
faults: [{type: app-hang, node: 1, at: 1s, duration: 50s}]
`
	dir := filepath.Join(t.TempDir(), "out")
	ctx, cancel := context.WithCancel(context.Background())
	events := filepath.Join(dir, record.EventsFile)
	go func() {
		// Interrupt once the hang is in effect, as a user's Ctrl-C would.
		for i := 0; i < 200; i++ {
			if b, _ := os.ReadFile(events); strings.Contains(string(b), `"fault.inject"`) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond)
		cancel()
	}()
	var out, errb bytes.Buffer
	err = Run(ctx, []string{"run", writeScenario(t, body), "-o", dir, "--quiet"}, &out, &errb)
	if code := ExitCode(err); code != ExitFailed || !strings.Contains(errb.String(), "interrupted") {
		t.Fatalf("exit %d, stderr %q; want 1 and a word that the run was interrupted", code, errb.String())
	}
	sum := readSummary(t, dir)
	if sum.Complete || sum.Run.Attempts == 0 {
		t.Fatalf("want an incomplete summary with the attempts recorded so far, got complete=%v attempts=%d", sum.Complete, sum.Run.Attempts)
	}
	evs, err := record.ReadEvents(events)
	if err != nil {
		t.Fatal(err)
	}
	var cleared, interrupted bool
	for _, e := range evs {
		cleared = cleared || (e.Kind == "fault.clear" && e.Fault == "app-hang")
		interrupted = interrupted || e.Kind == "run.interrupted"
	}
	if !cleared || !interrupted {
		t.Errorf("events lack the hang's revert (%v) or the interruption (%v)", cleared, interrupted)
	}
	if _, err := os.Stat(filepath.Join(dir, record.ReportFile)); err != nil {
		t.Errorf("no report for the interrupted run: %v", err)
	}
	// Nothing of the cluster is left listening.
	for _, addr := range []string{"127.0.0.11", "127.0.0.12"} {
		if listening(t, addr, port) {
			t.Errorf("%s:%d still has a listener after the interrupt", addr, port)
		}
	}
}

// listening reports whether /proc/net/tcp has a TCP listener on the IPv4
// address addr at port.
func listening(t *testing.T, addr string, port int) bool {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Skip("no /proc/net/tcp")
	}
	ip := net.ParseIP(addr).To4()
	local := fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], port)
	for _, line := range strings.Split(string(b), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 3 && f[1] == local && f[3] == "0A" {
			return true
		}
	}
	return false
}

// TestNginxExample runs examples/nginx.yaml against Debian's nginx: the
// hang of node 1's worker must fail requests to node 1 only.
func TestNginxExample(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nginx")
	}
	if _, err := exec.LookPath("nginx"); err != nil {
		t.Skip("nginx is not installed (apt-get install nginx-light); CI installs it")
	}
	// The example's port, made this run's own, so that nothing else on
	// 127.0.0.11-12:8080 (another suite, a user's server) can collide.
	body, err := os.ReadFile("../../examples/nginx.yaml")
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Abs("../../examples/nginx-paths.txt")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(body), "port: 8080", "port: "+freePort(t, "127.0.0.11", "127.0.0.12"), 1)
	text = strings.Replace(text, `"paths:nginx-paths.txt"`, `"paths:`+paths+`"`, 1)
	if !strings.Contains(text, paths) || strings.Contains(text, "8080") {
		t.Fatal("the example no longer has the port and trace this test replaces")
	}
	dir := filepath.Join(t.TempDir(), "out")
	if _, stderr, code := run(t, "run", writeScenario(t, text), "--time-scale", "0.3", "--quiet", "-o", dir); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	failed := map[int]int{}
	ok := map[int]int{}
	err = record.ReadRequests(dir, func(r record.Request) error {
		if r.Outcome == record.OK {
			ok[r.Node]++
		} else {
			failed[r.Node]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if failed[1] == 0 || failed[2] != 0 || ok[1] == 0 || ok[2] == 0 {
		t.Fatalf("want failures on the hung node 1 only: ok %v, failed %v", ok, failed)
	}
}

// TestEveryExampleValidates keeps examples/ in step with the scenario
// language: every example the docs point users at must pass `validate`.
func TestEveryExampleValidates(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// examples/validate: the single-fault runs of bench/press/validate.sh.
	more, err := filepath.Glob("../../examples/validate/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, more...)
	if len(files) < 10 {
		t.Fatalf("found %d examples under ../../examples; the glob is wrong", len(files))
	}
	for _, f := range files {
		if _, stderr, code := run(t, "validate", f); code != ExitOK {
			t.Errorf("%s: exit %d: %s", filepath.Base(f), code, stderr)
		}
	}
}
