package netns

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/kernelfault"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/warden"
)

// needRoot skips a test that needs the kernel objects only root creates.
func needRoot(t *testing.T) {
	t.Helper()
	if err := usable(); err != nil {
		t.Skipf("netns backend unavailable here: %v", err)
	}
}

type events struct {
	mu  sync.Mutex
	all []record.Event
}

func (e *events) add(ev record.Event) { e.mu.Lock(); e.all = append(e.all, ev); e.mu.Unlock() }

// has reports whether an event of kind for fault f was emitted.
func (e *events) has(kind, f string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.all {
		if ev.Kind == kind && (f == "" || ev.Fault == f) {
			return true
		}
	}
	return false
}

func newRunID(t *testing.T) string {
	b := make([]byte, 6)
	f, _ := os.Open("/dev/urandom")
	defer f.Close()
	_, _ = f.Read(b)
	const hex = "0123456789abcdef"
	out := make([]byte, 12)
	for i, x := range b {
		out[2*i], out[2*i+1] = hex[x>>4], hex[x&15]
	}
	return string(out)
}

// startCluster starts a static cluster and stops it at the end of the test.
func startCluster(t *testing.T, nodes int) (*Namespaces, *events) {
	t.Helper()
	needRoot(t)
	spec := testSpec(t.TempDir(), newRunID(t), nodes)
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
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
		assertGone(t, spec.RunID, c.net)
	})
	return c, ev
}

// assertGone fails unless nothing of run id is left: namespaces, host
// link, cgroups, journal.
func assertGone(t *testing.T, runID string, n *network) {
	t.Helper()
	err := waitFor(10*time.Second, func() (bool, error) { return leftovers(runID, n) == "", nil })
	if err != nil {
		t.Errorf("run %s left %s", runID, leftovers(runID, n))
	}
}

func leftovers(runID string, n *network) string {
	var left []string
	out, _ := exec.Command("ip", "netns", "list").Output()
	if strings.Contains(string(out), runID) {
		left = append(left, "namespaces")
	}
	if _, err := os.Stat("/sys/class/net/" + n.hostIf); err == nil {
		left = append(left, "link "+n.hostIf)
	}
	if m, _ := filepath.Glob(filepath.Join(cgroupRoot, "*", "faultbench", runID)); len(m) > 0 {
		left = append(left, "cgroups "+strings.Join(m, " "))
	}
	if _, err := os.Stat(warden.Path(runID)); err == nil {
		left = append(left, "journal")
	}
	if _, err := os.Stat(warden.SocketPath(runID)); err == nil {
		left = append(left, "socket")
	}
	return strings.Join(left, ", ")
}

// dialFrom reports whether a TCP connection from node from's namespace
// (0: the controller) to addr succeeds within 300 ms.
func dialFrom(c *Namespaces, from int, addr string) bool {
	dial := func() error {
		conn, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
		if err == nil {
			conn.Close()
		}
		return err
	}
	if from == 0 {
		return dial() == nil
	}
	return inNetns(c.net.ns(from), dial) == nil
}

func TestClientReachesNodesOverTheBridge(t *testing.T) {
	c, _ := startCluster(t, 2)
	for _, n := range c.Nodes() {
		if !dialFrom(c, 0, n.Addr) {
			t.Errorf("controller cannot reach node %d at %s", n.ID, n.Addr)
		}
	}
	if !dialFrom(c, 1, c.Nodes()[1].Addr) {
		t.Errorf("node 1 cannot reach node 2 over the bridge")
	}
}

func TestFilterTakesEffectAndReverts(t *testing.T) {
	c, ev := startCluster(t, 2)
	n2 := c.Nodes()[1].Addr
	cases := []struct {
		name  string
		block kernelfault.Block
		from  int // where the measurement dials node 2 from
	}{
		{"partition", kernelfault.Block{Peers: kernelfault.Peers{Nodes: []int{1}}}, 1},
		{"reject", kernelfault.Block{Peers: kernelfault.Peers{Nodes: []int{1}}, Reject: true}, 1},
		{"client", kernelfault.Block{Peers: kernelfault.Peers{Client: true}}, 0},
		{"nic", kernelfault.Block{Peers: kernelfault.Peers{All: true}}, 1},
	}
	for _, tc := range cases {
		undo, err := c.Filter(kernelfault.Label{Fault: tc.name, ID: 1}, 2, tc.block)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if dialFrom(c, tc.from, n2) {
			t.Errorf("%s: node 2 still reachable from %d with the rule in place", tc.name, tc.from)
		}
		if err := undo(); err != nil {
			t.Fatalf("%s: revert: %v", tc.name, err)
		}
		if !dialFrom(c, tc.from, n2) {
			t.Errorf("%s: node 2 unreachable from %d after the revert", tc.name, tc.from)
		}
		if !ev.has("fault.effective", tc.name) || !ev.has("fault.reverted", tc.name) {
			t.Errorf("%s: missing fault.effective or fault.reverted", tc.name)
		}
	}
}

func TestLossCountsDroppedPackets(t *testing.T) {
	c, ev := startCluster(t, 2)
	undo, err := c.Filter(kernelfault.Label{Fault: "loss", ID: 1}, 1, kernelfault.Block{Peers: kernelfault.Peers{Nodes: []int{2}}, Loss: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	if !ev.has("fault.effective", "loss") || !ev.has("fault.reverted", "loss") {
		t.Error("missing evidence events")
	}
}

func TestShapeInstallsTokenBucket(t *testing.T) {
	c, ev := startCluster(t, 2)
	undo, err := c.Shape(kernelfault.Label{Fault: "bandwidth", ID: 1}, 1, kernelfault.Peers{Nodes: []int{2}}, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	out, err := inNS(c.net.ns(1), "tc", "qdisc", "show", "dev", "eth0")
	if err != nil || !strings.Contains(out, "tbf 30:") {
		t.Fatalf("no tbf on eth0: %s %v", out, err)
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	if out, _ := inNS(c.net.ns(1), "tc", "qdisc", "show", "dev", "eth0"); strings.Contains(out, "tbf") {
		t.Errorf("tbf still installed after the revert: %s", out)
	}
	if !ev.has("fault.effective", "bandwidth") || !ev.has("fault.reverted", "bandwidth") {
		t.Error("missing evidence events")
	}
}

func TestFreezeAndCrash(t *testing.T) {
	c, ev := startCluster(t, 2)
	addr := c.Nodes()[0].Addr
	if err := c.Pause(1); err != nil {
		t.Fatal(err)
	}
	if f, _ := c.nodes[0].cg.frozen(); !f {
		t.Error("cgroup not frozen")
	}
	if err := c.Resume(1); err != nil {
		t.Fatal(err)
	}
	if err := c.HostDown(1, false); err != nil {
		t.Fatal(err)
	}
	if pids, _ := c.nodes[0].cg.pids(); len(pids) != 0 {
		t.Errorf("processes left in a crashed node's cgroup: %v", pids)
	}
	if dialFrom(c, 0, addr) {
		t.Error("a crashed node's address answers")
	}
	if err := c.StartApp(1); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(10*time.Second, func() (bool, error) { return dialFrom(c, 0, addr), nil }); err != nil {
		t.Errorf("node 1 did not come back after boot: %v", err)
	}
	if !ev.has("fault.effective", "") || !ev.has("fault.reverted", "") {
		t.Error("missing evidence events")
	}
}

func TestBurnerAndBalloonRunInTheNodesCgroup(t *testing.T) {
	c, ev := startCluster(t, 1)
	burn, err := c.Burn(kernelfault.Label{Fault: "cpu-hog", ID: 1}, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := burn(); err != nil {
		t.Fatal(err)
	}
	bal, err := c.Balloon(kernelfault.Label{Fault: "mem-pressure", ID: 2}, 1, 32<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := bal(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"cpu-hog", "mem-pressure"} {
		if !ev.has("fault.effective", f) || !ev.has("fault.reverted", f) {
			t.Errorf("%s: missing evidence events", f)
		}
	}
}

// TestSIGKILLOfTheControllerLeavesNothing kills a controller holding a
// fault of every mechanism (runHolder); the warden must remove all of it
// within the lease plus 2 s.
func TestSIGKILLOfTheControllerLeavesNothing(t *testing.T) {
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
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_, _ = warden.RemoveRun(runID) // whatever a failed test left
	})
	sc := bufio.NewScanner(out)
	held := make(chan string, 1)
	go func() {
		for sc.Scan() {
			held <- sc.Text()
		}
		close(held)
	}()
	select {
	case line := <-held:
		if line != "held" {
			t.Fatalf("holder: %s", line)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("holder did not set up its faults within 60s")
	}
	n := newNetwork(runID, 0, holderNodes)
	if leftovers(runID, n) == "" {
		t.Fatal("the holder's run has no kernel objects to leave")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if err := waitFor(warden.DefaultLease+2*time.Second, func() (bool, error) { return leftovers(runID, n) == "", nil }); err != nil {
		t.Fatalf("within lease+2s of SIGKILL the run still left %s", leftovers(runID, n))
	}
}

// TestALostWardenIsReported kills the warden under a running cluster: the
// controller must say so on the timeline and in Stop's error, and still
// remove everything itself.
func TestALostWardenIsReported(t *testing.T) {
	needRoot(t)
	spec := testSpec(t.TempDir(), newRunID(t), 1)
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
	// SIGSTOP would be a starved warden; SIGKILL a dead one: both end the
	// renewals. The journal must survive for the controller's own cleanup.
	if err := syscall.Kill(c.WardenPid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(10*time.Second, func() (bool, error) { return ev.has("warden.lost", ""), nil }); err != nil {
		t.Fatalf("no warden.lost event: %v", err)
	}
	if err := c.Stop(); err == nil || !strings.Contains(err.Error(), "warden was lost") {
		t.Errorf("Stop = %v, want it to report the lost warden", err)
	}
	assertGone(t, spec.RunID, c.net)
}
