package raid

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/node"
	"github.com/faultbench/faultbench/internal/systems/raid/control"
)

// controlTarget is a fault.Target of one live node's control API, as the
// rig's Cluster is for a run.
type controlTarget struct{ addr string }

func (controlTarget) Size() int { return 1 }

func (c controlTarget) RaidControl(int) (*control.Client, error) {
	return control.NewClient(c.addr, testToken), nil
}

// liveNode serves a node on ln until the returned stop is called.
func liveNode(t *testing.T, ln net.Listener, cfg node.Config) (c *control.Client, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveOn(ctx, ln, cfg) }()
	stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}
	c = control.NewClient(ln.Addr().String(), testToken)
	for range 1000 {
		if _, err := c.Status(ctx); err == nil {
			return c, stop
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	t.Fatal("node did not come up")
	return nil, nil
}

func diskFaults(t *testing.T, c *control.Client, bay int) []int {
	t.Helper()
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, f := range st.Disks[bay-1].Faults {
		ids = append(ids, f.ID)
	}
	return ids
}

func TestFaultIDsDifferAcrossStarts(t *testing.T) {
	a, b := faultIDBase(), faultIDBase()
	if a == b || a <= 0 || b <= 0 || a >= 1<<52 || b >= 1<<52 || a%(1<<faultIDBits) != 0 {
		t.Fatalf("bases %d, %d", a, b)
	}
}

// TestRevertAfterRestart: the rig's revert of a fault injected before its
// node restarted must not clear a fault of the restarted node — whose ids
// used to start at 1 again, so the old fault 1 was the new fault 1 — and
// a revert while the node is down has nothing to do.
func TestRevertAfterRestart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	cfg := testNodeConfig(t, nil)
	target := controlTarget{addr}
	bay := 2
	occ := fault.Occurrence{Type: "disk-read-correctable", Node: 1, Disk: &bay, Sticky: true}

	c, stop := liveNode(t, ln, cfg)
	ctx := context.Background()
	revertWhileDown, err := injectDisk(ctx, target, occ)
	if err != nil {
		t.Fatal(err)
	}
	revertAfterRestart, err := injectDisk(ctx, target, occ)
	if err != nil {
		t.Fatal(err)
	}
	before := diskFaults(t, c, bay)
	stop()

	if err := revertWhileDown(); err != nil {
		t.Errorf("revert while the node is down: %v", err)
	}
	if ln, err = net.Listen("tcp", addr); err != nil {
		t.Fatal(err)
	}
	c, stop = liveNode(t, ln, cfg)
	defer stop()
	// As many faults as before the restart, so that with ids counted from
	// 1 at every start they would carry the same ids.
	for range before {
		if _, err := c.InjectFault(ctx, control.FaultRequest{Type: "disk-write-correctable", Disk: bay, Mode: "sticky"}); err != nil {
			t.Fatal(err)
		}
	}
	after := diskFaults(t, c, bay)
	for _, id := range after {
		for _, old := range before {
			if id == old {
				t.Fatalf("fault id %d given before and after the restart (before %v, after %v)", id, before, after)
			}
		}
	}
	if err := revertAfterRestart(); err != nil {
		t.Errorf("revert after the restart: %v", err)
	}
	if got := diskFaults(t, c, bay); len(got) != len(after) {
		t.Fatalf("the revert of a fault from before the restart cleared one of the restarted node's: faults %v, want %v", got, after)
	}
}
