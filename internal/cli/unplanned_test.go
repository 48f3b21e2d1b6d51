package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/record"
)

// nodePid finds the process whose command line holds marker (a node's
// --listen argument), 0 if none.
func nodePid(marker string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if strings.Contains(string(b), marker) && strings.Contains(string(b), "node\x00static") {
			return pid
		}
	}
	return 0
}

// TestUnplannedKillIsAFault kills node 3's process with SIGKILL in the
// middle of a run that injects nothing: the failure must be in summary.json
// as an unplanned fault with its durations and class, the operator must
// notice and restart node 3, and the report and the console must say so.
func TestUnplannedKillIsAFault(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	free, err := net.Listen("tcp", "127.0.0.13:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(free.Addr().(*net.TCPAddr).Port)
	free.Close()
	body := `
name: unplanned
cluster: {system: static, nodes: 3, port: ` + port + `, pages: 10, page_size: 100}
workload: {rate: 150, window: 500ms}
phases: [{name: warmup, duration: 4s}, {name: run, duration: 8s}]
operator: {detect_after: 1s, policy: restart-failed, action_time: 500ms}
`
	dir := filepath.Join(t.TempDir(), "out")
	events := filepath.Join(dir, record.EventsFile)
	killed := make(chan int, 1)
	go func() {
		// Once the second phase starts, kill node 3 as an outside hand would.
		defer close(killed)
		for range 400 {
			if b, _ := os.ReadFile(events); strings.Contains(string(b), `"detail":"run"`) {
				if pid := nodePid("--listen\x00127.0.0.13:" + port + "\x00"); pid > 0 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					killed <- pid
				}
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	var out, errb bytes.Buffer
	err = Run(context.Background(), []string{"run", writeScenario(t, body), "-o", dir}, &out, &errb)
	if pid := <-killed; pid == 0 {
		t.Fatalf("node 3 was never found to kill; run: %v\n%s", err, errb.String())
	}
	if code := ExitCode(err); code != ExitOK {
		t.Fatalf("exit %d: %v\n%s", code, err, errb.String())
	}

	sum := readSummary(t, dir)
	if len(sum.Faults) != 1 {
		t.Fatalf("summary faults %+v, want the one unplanned failure", sum.Faults)
	}
	f := sum.Faults[0]
	if !f.Unplanned() || f.Node != 3 || f.InjectS < 4 || !(float64(f.FaultDurationS) > 1) || f.Class == "" || !f.Repaired {
		t.Errorf("unplanned fault %+v: want node 3, after 4 s, lasting past detection, classified, repaired", f)
	}

	evs, err := record.ReadEvents(events)
	if err != nil {
		t.Fatal(err)
	}
	var restarted, backUp bool
	for _, e := range evs {
		if e.Kind == "operator.action" && e.Node == 3 && strings.Contains(e.Detail, "restart-failed done") {
			restarted = true
		}
		backUp = backUp || (restarted && e.Kind == "node.up" && e.Node == 3)
	}
	if !restarted || !backUp {
		t.Errorf("operator restart of node 3 (%v) or node 3 back up after it (%v) missing", restarted, backUp)
	}

	if !strings.Contains(out.String(), "unplanned (not injected") || !strings.Contains(out.String(), "on node 3") {
		t.Errorf("console summary does not name the unplanned failure:\n%s", out.String())
	}
	html, err := os.ReadFile(filepath.Join(dir, record.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"unplanned (not injected", "unplanned failure (not injected)", "unplanned n3"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report lacks %q", want)
		}
	}
}
