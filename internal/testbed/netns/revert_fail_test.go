package netns

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/kernelfault"
	"github.com/faultbench/faultbench/internal/warden"
)

// TestAWardenThatDoesNotAnswerStillRevertsEveryFault stops the warden
// (SIGSTOP: it holds its socket but answers nothing) under three faults.
// Each revert must fail with one line naming its fault and node, yet
// leave the fault reverted (the controller does it itself); the lease
// counts as lost (warden.lost, so the run is incomplete) and Stop still
// removes everything.
func TestAWardenThatDoesNotAnswerStillRevertsEveryFault(t *testing.T) {
	needRoot(t)
	spec := testSpec(t.TempDir(), newRunID(t), 3)
	plan, err := Backend{}.Plan(spec)
	if err != nil {
		t.Fatal(err)
	}
	ev := &events{}
	tc, err := Backend{}.Start(context.Background(), spec, plan, ev.add)
	if err != nil {
		t.Fatal(err)
	}
	c := tc.(*Namespaces)
	defer func() { _ = c.Stop(); assertGone(t, spec.RunID, c.net) }()
	undoLink, err := c.Filter(kernelfault.Label{Fault: "link-down", ID: 1}, 1, kernelfault.Block{Peers: kernelfault.Peers{Nodes: []int{2}}})
	if err != nil {
		t.Fatal(err)
	}
	undoBW, err := c.Shape(kernelfault.Label{Fault: "bandwidth", ID: 2}, 2, kernelfault.Peers{Client: true}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Pause(3); err != nil {
		t.Fatal(err)
	}
	old := callTimeout.Get()
	callTimeout.Set(500 * time.Millisecond) // the reverts' wait for a silent warden
	t.Cleanup(func() { callTimeout.Set(old) })
	pid := c.WardenPid()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGCONT)

	for _, tc := range []struct {
		undo         func() error
		fault, node  string
		stillApplied func() bool
	}{
		{undoLink, "link-down", "node 1", func() bool { out, _ := inNS(c.net.ns(1), "nft", "list", "tables"); return strings.Contains(out, "fbf") }},
		{undoBW, "bandwidth", "node 2", func() bool {
			out, _ := inNS(c.net.ns(2), "tc", "qdisc", "show", "dev", "eth0")
			return strings.Contains(out, "tbf")
		}},
		{func() error { return c.Resume(3) }, "thaw", "node 3", func() bool { f, _ := c.nodes[2].cg.frozen(); return f }},
	} {
		err := tc.undo()
		if err == nil || !strings.Contains(err.Error(), tc.fault) || !strings.Contains(err.Error(), tc.node) || strings.Contains(err.Error(), "\n") {
			t.Errorf("revert of %s with a silent warden: %v; want one line naming %s and %s", tc.fault, err, tc.fault, tc.node)
		}
		if tc.stillApplied() {
			t.Errorf("%s on %s is still applied after its revert failed", tc.fault, tc.node)
		}
	}
	if err := waitFor(5*time.Second, func() (bool, error) { return ev.has("warden.lost", ""), nil }); err != nil {
		t.Errorf("no warden.lost event (the run would count as complete): %v", err)
	}
	_ = syscall.Kill(pid, syscall.SIGCONT)
}

// TestTheWardenIsSparedByTheOOMKiller checks the running warden's
// oom_score_adj: node-crash, node-freeze or mem-pressure must never take
// it down. A kernel that refuses to lower it (some VMs answer EIO even to
// root) must at least have the warden say so in warden.log.
func TestTheWardenIsSparedByTheOOMKiller(t *testing.T) {
	c, _ := startCluster(t, 1)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/oom_score_adj", c.WardenPid()))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(b)); got == "-1000" {
		return
	}
	if lowerable() {
		t.Fatalf("warden oom_score_adj = %s, want -1000 (this kernel lets root lower it)", strings.TrimSpace(string(b)))
	}
	if err := waitFor(5*time.Second, func() (bool, error) {
		log, _ := os.ReadFile(filepath.Join(c.Dir(), "warden.log"))
		return strings.Contains(string(log), "oom_score_adj -1000"), nil
	}); err != nil {
		t.Fatalf("the kernel refused oom_score_adj -1000 and warden.log does not say so")
	}
	t.Logf("this kernel refuses to lower oom_score_adj (EIO even for root); the warden reported it in warden.log")
}

// lowerable reports whether this kernel lets a process lower its own
// oom_score_adj (it restores the value).
func lowerable() bool {
	old, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return false
	}
	err = os.WriteFile("/proc/self/oom_score_adj", []byte("-1"), 0o644)
	_ = os.WriteFile("/proc/self/oom_score_adj", old, 0o644)
	return err == nil
}

// TestALapsedLeaseRevertsEveryFault stops (SIGSTOP) a controller holding
// a rule, a tbf, a balloon, a burner, a delay and a flaky link (NFQUEUE
// rules and bound queues), a crashed host's black hole and a frozen
// cgroup: once the lease lapses the warden must revert every one of them
// while the namespaces stay (the pipe is still open); SIGKILL then
// removes the rest.
func TestALapsedLeaseRevertsEveryFault(t *testing.T) {
	needRoot(t)
	runID := newRunID(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), holderEnv+"="+runID, holderDirEnv+"="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_, _ = warden.RemoveRun(runID)
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "held" {
		t.Fatalf("holder: %q %v", line, err)
	}
	n := newNetwork(runID, 0, holderNodes)
	faulted := func() string {
		var left []string
		for i := 1; i <= holderNodes; i++ {
			tables, _ := inNS(n.ns(i), "nft", "list", "tables")
			if strings.Contains(tables, "fbf") {
				left = append(left, fmt.Sprintf("nft table in node %d", i))
			}
			if strings.Contains(tables, "fbdown") {
				left = append(left, fmt.Sprintf("black hole in node %d", i))
			}
			if o, _ := inNS(n.ns(i), "tc", "qdisc", "show", "dev", "eth0"); strings.Contains(o, "tbf") {
				left = append(left, fmt.Sprintf("tbf on node %d", i))
			}
			if o, _ := inNS(n.ns(i), "iptables-nft", "-t", "mangle", "-S"); strings.Contains(o, "fbq") {
				left = append(left, fmt.Sprintf("NFQUEUE chain in node %d", i))
			}
			if o, _ := inNS(n.ns(i), "cat", "/proc/net/netfilter/nfnetlink_queue"); strings.TrimSpace(o) != "" {
				left = append(left, fmt.Sprintf("queue bound in node %d", i))
			}
		}
		if m, _ := filepath.Glob(filepath.Join(cgroupRoot, "freezer", "faultbench", runID, "node-1", "freezer.state")); len(m) == 1 {
			if b, _ := os.ReadFile(m[0]); strings.Contains(string(b), "FROZEN") {
				left = append(left, "node 1 frozen")
			}
		}
		if m, _ := filepath.Glob(filepath.Join(cgroupRoot, "faultbench", runID, "node-1", "cgroup.freeze")); len(m) == 1 {
			if b, _ := os.ReadFile(m[0]); strings.TrimSpace(string(b)) == "1" {
				left = append(left, "node 1 frozen")
			}
		}
		if auxCount(runID) > 0 {
			left = append(left, fmt.Sprintf("%d burner/balloon", auxCount(runID)))
		}
		return strings.Join(left, ", ")
	}
	before := faulted()
	for _, want := range []string{"nft table", "black hole", "tbf", "NFQUEUE chain", "queue bound", "frozen", "burner/balloon"} {
		if !strings.Contains(before, want) {
			t.Fatalf("the holder's faults are not in place: %q lacks %s", before, want)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The lease lapses 5 s after the last renewal; the reverts then run a
	// few dozen nft, tc and iptables commands in the namespaces, which a
	// busy machine (a whole CI run beside) has stretched past 3 s.
	if err := waitFor(warden.DefaultLease+10*time.Second, func() (bool, error) { return faulted() == "", nil }); err != nil {
		t.Fatalf("lease+10s after the controller stopped, still: %s", faulted())
	}
	if o, _ := exec.Command("ip", "netns", "list").Output(); !strings.Contains(string(o), runID) {
		t.Error("the lapse removed the namespaces; only the pipe's closing should")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if err := waitFor(warden.DefaultLease+2*time.Second, func() (bool, error) { return leftovers(runID, n) == "", nil }); err != nil {
		t.Fatalf("after SIGKILL the run still left %s", leftovers(runID, n))
	}
}

// auxCount counts burner and balloon processes in run id's cgroups.
func auxCount(runID string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	count := 0
	for _, p := range procs {
		cmdline, _ := os.ReadFile(p)
		cg, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cgroup"))
		if strings.Contains(string(cg), "/faultbench/"+runID+"/") && (strings.Contains(string(cmdline), "burner") || strings.Contains(string(cmdline), "balloon")) {
			count++
		}
	}
	return count
}
