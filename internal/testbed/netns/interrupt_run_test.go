package netns

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/warden"
)

// manyFaultsScenario holds a fault of every mechanism at once, all in
// effect from 1 s on for a minute: an nft rule, a tbf, an NFQUEUE delay, a
// frozen cgroup, a burner and a balloon.
const manyFaultsScenario = `name: %s
seed: 1
cluster: {system: static, backend: netns, nodes: 3, pages: 50, page_size: 1024}
workload: {rate: 20, arrivals: poisson, clients: 2, trace: "zipf:50:1.0", connect_timeout: 1s, response_timeout: 2s, window: 1s}
phases:
  - {name: warmup, duration: 2s}
  - {name: fault, duration: 70s}
faults:
  - {type: link-down, link: [1, 2], at: 1s, duration: 60s}
  - {type: bandwidth, node: 3, scope: client, at: 1s, duration: 60s, params: {rate: 64K}}
  - {type: delay, node: 1, scope: client, at: 1s, duration: 60s, params: {delay: 10ms}}
  - {type: node-freeze, node: 2, at: 1s, duration: 60s}
  - {type: cpu-hog, node: 1, at: 1s, duration: 60s, params: {cpus: 1}}
  - {type: mem-pressure, node: 3, at: 1s, duration: 60s, params: {size: 16M}}
`

// manyFaults is how many fault.effective events manyFaultsScenario's
// faults emit.
const manyFaults = 6

// faultedRun is a `faultbench run` of manyFaultsScenario, started in a
// process group of its own (as a shell starts a foreground job), with
// every fault in effect.
type faultedRun struct {
	bin, out, runID string
	cmd             *exec.Cmd
	stderr          bytes.Buffer
	exited          chan struct{}
	exitErr         error
}

// startFaultedRun starts the run and waits (bounded) until every fault
// is in effect. Whatever the test leaves, cleanup removes.
func startFaultedRun(t *testing.T, name string) *faultedRun {
	t.Helper()
	needRoot(t)
	if testing.Short() {
		t.Skip("-short: builds faultbench and runs it")
	}
	r := &faultedRun{bin: buildFaultbench(t), exited: make(chan struct{})}
	dir := t.TempDir()
	scen := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scen, []byte(fmt.Sprintf(manyFaultsScenario, name)), 0o644); err != nil {
		t.Fatal(err)
	}
	r.out = filepath.Join(dir, "out")
	r.cmd = exec.Command(r.bin, "run", scen, "-o", r.out)
	r.cmd.Stdout, r.cmd.Stderr = &r.stderr, &r.stderr
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.exitErr = r.cmd.Wait(); close(r.exited) }()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		<-r.exited
		if r.runID != "" {
			_, _ = warden.RemoveRun(r.runID) // whatever a failed test left
		}
	})
	err := waitFor(90*time.Second, func() (bool, error) {
		select {
		case <-r.exited:
			return false, errors.New("the run ended before its faults took effect")
		default:
		}
		return strings.Count(r.events(), `"fault.effective"`) >= manyFaults, nil
	})
	if err != nil {
		t.Fatalf("not every fault in effect: %v\n%s\n%s", err, r.stderr.String(), r.events())
	}
	r.runID = provenanceRunID(t, r.out)
	return r
}

func (r *faultedRun) events() string {
	b, _ := os.ReadFile(filepath.Join(r.out, "events.jsonl"))
	return string(b)
}

// left is what the run left: kernel objects and processes of the binary.
func (r *faultedRun) left() string {
	s := leftovers(r.runID, newNetwork(r.runID, 0, 3))
	if p := processesOf(r.bin); p != "" {
		s += " processes " + p
	}
	return s
}

// TestCtrlCOfARealRunMidFaultLeavesNothing sends SIGINT, as Ctrl-C does,
// to the process group of a `faultbench run` on netns while an nft rule, a
// tbf, an NFQUEUE delay, a frozen cgroup, a burner and a balloon are in
// effect. The run must revert every fault, keep its record (summary.json
// marked incomplete, requests.parquet, run.interrupted) and, once it has
// exited, leave no namespace (so no rule, chain, qdisc, veth end or bridge
// in one), host link, cgroup, journal, socket, or process of the binary,
// running or stopped.
func TestCtrlCOfARealRunMidFaultLeavesNothing(t *testing.T) {
	r := startFaultedRun(t, "ctrl-c")
	if err := syscall.Kill(-r.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("the run did not end within 60s of SIGINT\n%s", r.stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(r.exitErr, &ee) || ee.ExitCode() != 1 || !strings.Contains(r.stderr.String(), "interrupted") {
		t.Errorf("exit %v, stderr %q: want 1 and a line saying the run was interrupted", r.exitErr, r.stderr.String())
	}
	if n := strings.Count(r.events(), `"fault.reverted"`); n < manyFaults {
		t.Errorf("%d fault.reverted events, want %d (one per fault):\n%s", n, manyFaults, r.events())
	}
	for _, f := range []string{"summary.json", "requests.parquet", "report.html"} {
		if _, err := os.Stat(filepath.Join(r.out, f)); err != nil {
			t.Errorf("record not kept: %v", err)
		}
	}
	sum, _ := os.ReadFile(filepath.Join(r.out, "summary.json"))
	if !strings.Contains(r.events(), `"run.interrupted"`) || !bytes.Contains(sum, []byte(`"complete": false`)) {
		t.Errorf("the record does not say the run was interrupted: summary %.200s", sum)
	}
	if err := waitFor(warden.DefaultLease+2*time.Second, func() (bool, error) { return r.left() == "", nil }); err != nil {
		t.Fatalf("after Ctrl-C the run left %s", r.left())
	}
}

// TestCleanupRemovesWhatADeadRunLeft kills a `faultbench run` on netns
// mid-fault with SIGKILL, its warden first, so that nothing is reverted by
// the lease or the pipe: the namespaces, cgroups, journal, the frozen
// node, the burner and the balloon are left. `faultbench cleanup --run`
// must remove all of it and say what it removed.
func TestCleanupRemovesWhatADeadRunLeft(t *testing.T) {
	r := startFaultedRun(t, "cleanup")
	wardenPid := wardenOf(r.bin, r.runID)
	if wardenPid == 0 {
		t.Fatalf("no warden of run %s among %s", r.runID, processesOf(r.bin))
	}
	if err := syscall.Kill(wardenPid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-r.exited
	before := r.left()
	for _, want := range []string{"namespaces", "cgroups", "journal", "processes"} {
		if !strings.Contains(before, want) {
			t.Fatalf("the dead run left only %q, no %s: nothing for cleanup to do", before, want)
		}
	}
	t.Logf("left by the dead run: %s", before)
	cmd := exec.Command(r.bin, "cleanup", "--run", r.runID)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cleanup: %v\n%s", err, out)
	}
	t.Logf("cleanup said:\n%s", out)
	for _, want := range []string{
		"removed run " + r.runID + ": netns fb-" + r.runID + "-n1",
		"removed run " + r.runID + ": netns fb-" + r.runID + "-br",
		"removed run " + r.runID + ": link fb" + r.runID[:8],
		"removed run " + r.runID + ": cgroup ",
		"removed run " + r.runID + ": journal ", "removed run " + r.runID + ": socket ",
		"NFQUEUE chains", "burner", "balloon", "THAWED",
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("cleanup's output does not say %q", want)
		}
	}
	if err := waitFor(2*time.Second, func() (bool, error) { return r.left() == "", nil }); err != nil {
		t.Fatalf("after cleanup the run still left %s", r.left())
	}
	if out, err := exec.Command(r.bin, "cleanup", "--run", r.runID).CombinedOutput(); err != nil || !bytes.Contains(out, []byte("nothing to remove")) {
		t.Errorf("a second cleanup: %v, %s; want nothing to remove", err, out)
	}
}

// wardenOf is the pid of run id's warden (a process of bin), or 0.
func wardenOf(bin, runID string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		exe, _ := os.Readlink(filepath.Join(filepath.Dir(p), "exe"))
		cmdline, _ := os.ReadFile(p)
		if exe == bin && bytes.Contains(cmdline, []byte("warden\x00")) && bytes.Contains(cmdline, []byte("run="+runID)) {
			var pid int
			fmt.Sscan(filepath.Base(filepath.Dir(p)), &pid)
			return pid
		}
	}
	return 0
}
