package local

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/faultbench/faultbench/internal/placement"
)

// nodePid is node id's current process (the leader of its group).
func nodePid(t *testing.T, c *Processes, id int) int {
	t.Helper()
	n, err := c.node(id)
	if err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		t.Fatalf("node %d has no process", id)
	}
	return n.proc.pgid
}

// threadsAllowed returns Cpus_allowed_list of every thread of pid.
func threadsAllowed(t *testing.T, pid int) map[int]string {
	t.Helper()
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	out := map[int]string{}
	for _, e := range ents {
		tid, _ := strconv.Atoi(e.Name())
		if l, err := placement.AllowedList(tid); err == nil {
			out[tid] = l
		}
	}
	return out
}

// TestNodesPinned: with Spec.CPUs every node process — each of its
// threads — runs on those CPUs only, and so does a node restarted later.
func TestNodesPinned(t *testing.T) {
	own, err := placement.Allowed()
	if err != nil {
		t.Skip(err)
	}
	last := strconv.Itoa(own[len(own)-1])
	spec := testSpec(t.TempDir())
	spec.CPUs = last
	c, err := Start(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	check := func(when string) {
		for id := 1; id <= 2; id++ {
			for tid, got := range threadsAllowed(t, nodePid(t, c, id)) {
				if got != last {
					t.Errorf("%s: node %d thread %d: Cpus_allowed_list %q, want %q", when, id, tid, got, last)
				}
			}
		}
	}
	check("at start")
	if err := c.RestartApp(1); err != nil {
		t.Fatal(err)
	}
	check("after node 1 restarted")
	if got, _ := placement.AllowedList(os.Getpid()); got != placement.FormatCPUList(own) {
		t.Errorf("the controller itself moved: %q, want %q", got, placement.FormatCPUList(own))
	}
}

// TestNodesNotDraggedByThePinnedController: without Spec.CPUs the nodes
// keep the CPUs the controller had when the cluster started, even when
// they restart after the controller was pinned elsewhere (workload.cpus).
func TestNodesNotDraggedByThePinnedController(t *testing.T) {
	own, err := placement.Allowed()
	if err != nil || len(own) < 2 {
		t.Skipf("needs two CPUs (%v, %v)", own, err)
	}
	c, err := Start(context.Background(), testSpec(t.TempDir()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	restore, err := placement.PinProcess(own[:1])
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	if err := c.RestartApp(2); err != nil {
		t.Fatal(err)
	}
	want := placement.FormatCPUList(own)
	for tid, got := range threadsAllowed(t, nodePid(t, c, 2)) {
		if got != want {
			t.Errorf("restarted node 2, thread %d: %q, want the cluster's %q", tid, got, want)
		}
	}
}

func TestBadCPUsRefused(t *testing.T) {
	spec := testSpec(t.TempDir())
	spec.CPUs = "4000"
	if _, err := Start(context.Background(), spec, nil); err == nil {
		t.Fatal("a CPU the machine lacks was accepted")
	}
}
