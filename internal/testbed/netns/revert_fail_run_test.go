package netns

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/warden"
)

const revertFailScenario = `name: revert-fails
seed: 1
cluster: {system: static, backend: netns, nodes: 3, pages: 50, page_size: 1024}
workload: {rate: 20, arrivals: poisson, clients: 2, trace: "zipf:50:1.0", connect_timeout: 1s, response_timeout: 2s, window: 1s}
phases:
  - {name: warmup, duration: 2s}
  - {name: fault, duration: 18s}
faults:
  - {type: bandwidth, node: 2, scope: client, at: 1s, duration: 15s, params: {rate: 64K}}
  - {type: link-down, link: [1, 3], at: 1s, duration: 15s}
`

// TestAFailedRevertMakesTheRunIncomplete runs `faultbench run` on netns
// with a bandwidth fault on node 2 and a link-down between nodes 1 and 3,
// and renames node 2's eth0 while the tbf is on it, so that the tbf's
// revert (tc qdisc del dev eth0) fails, through the warden and directly.
// The run must exit 1 with one line naming the fault and the node, keep
// its results with "complete": false and an incomplete_reason naming them,
// still revert the link-down, and leave nothing behind.
func TestAFailedRevertMakesTheRunIncomplete(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("-short: builds faultbench and runs it")
	}
	bin := buildFaultbench(t)
	dir := t.TempDir()
	scen := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scen, []byte(revertFailScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command(bin, "run", scen, "-o", out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	runID := ""
	var exitErr error
	done := false
	t.Cleanup(func() {
		if !done {
			_ = cmd.Process.Kill()
			exitErr = <-exited
		}
		if runID != "" {
			_, _ = warden.RemoveRun(runID) // whatever a failed test left
		}
	})
	events := func() string { b, _ := os.ReadFile(filepath.Join(out, "events.jsonl")); return string(b) }
	err := waitFor(60*time.Second, func() (bool, error) {
		select {
		case err := <-exited:
			done, exitErr = true, err
			return false, errors.New("the run ended before its faults took effect")
		default:
		}
		ev := events()
		return strings.Contains(ev, `"fault.effective","node":2,"fault":"bandwidth"`) && strings.Contains(ev, `"fault.effective","node":1,"fault":"link-down"`), nil
	})
	if err != nil {
		t.Fatalf("faults not in effect: %v\n%s\n%s", err, stderr.String(), events())
	}
	runID = provenanceRunID(t, out)
	ns := newNetwork(runID, 0, 3).ns(2)
	for _, args := range [][]string{{"-n", ns, "link", "set", "eth0", "down"}, {"-n", ns, "link", "set", "eth0", "name", "eth9"}, {"-n", ns, "link", "set", "eth9", "up"}} {
		if err := ip(args...); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case exitErr = <-exited:
		done = true
	case <-time.After(60 * time.Second):
		t.Fatalf("the run did not end within 60s of its planned end\n%s", stderr.String())
	}

	var ee *exec.ExitError
	if !errors.As(exitErr, &ee) || ee.ExitCode() != 1 {
		t.Errorf("exit %v, want 1", exitErr)
	}
	msg := strings.TrimSpace(stderr.String())
	t.Logf("stderr: %s", msg)
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "incomplete") || !strings.Contains(msg, "bandwidth on node 2") || !strings.Contains(msg, out) {
		t.Errorf("stderr %q: want one line saying the run is incomplete, naming bandwidth on node 2 and the results", msg)
	}
	var sum struct {
		Complete         bool   `json:"complete"`
		IncompleteReason string `json:"incomplete_reason"`
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatalf("results not kept: %v", err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	t.Logf("incomplete_reason: %s", sum.IncompleteReason)
	if sum.Complete || !strings.Contains(sum.IncompleteReason, "bandwidth on node 2") {
		t.Errorf("summary.json complete %v, incomplete_reason %q: want false, naming bandwidth on node 2", sum.Complete, sum.IncompleteReason)
	}
	if !strings.Contains(events(), `"fault.reverted","node":1,"fault":"link-down"`) {
		t.Errorf("the link-down was not reverted:\n%s", events())
	}
	n := newNetwork(runID, 0, 3)
	left := func() string {
		s := leftovers(runID, n)
		if p := processesOf(bin); p != "" {
			s += " processes " + p
		}
		return s
	}
	if err := waitFor(warden.DefaultLease+2*time.Second, func() (bool, error) { return left() == "", nil }); err != nil {
		t.Errorf("the run left %s", left())
	}
}
