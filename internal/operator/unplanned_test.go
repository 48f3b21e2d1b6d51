package operator

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/testbed"
)

// exitingCluster is a fakeCluster that reports unplanned exits to whoever
// watches, as testbed.Cluster does.
type exitingCluster struct {
	fakeCluster
	mu  sync.Mutex
	obs testbed.ExitObserver
}

func (c *exitingCluster) WatchExits(o testbed.ExitObserver) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.obs = o
}

func (c *exitingCluster) exit(node int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.obs.Exited(node, "signal: killed")
}

// TestUnplannedExitIsAFaultTheOperatorRepairs: node 3's application dies at
// 40 s, outside the schedule (whose app-crash on node 2 comes at 60 s). It
// becomes fault 2 (after the schedule's one), the operator notices it after
// detect_after and restarts node 3 by its policy, and the repair clears it.
// A second unplanned exit at 200 s is still open at the end: Stop clears it.
func TestUnplannedExitIsAFaultTheOperatorRepairs(t *testing.T) {
	d := func(s float64) scenario.Duration { return scenario.D(time.Duration(s * 1e9)) }
	sc := &scenario.Scenario{
		Seed:     1,
		Cluster:  scenario.ClusterSpec{System: "static", Nodes: 4, Backend: "local", Boot: d(5)},
		Phases:   []scenario.Phase{{Name: "warmup", Duration: d(60)}, {Name: "fault", Duration: d(90)}, {Name: "post", Duration: d(60)}},
		Faults:   []scenario.Fault{{Type: "app-crash", Node: scenario.NodeRef{N: 2}, At: d(60), Duration: d(20), Mode: "transient"}},
		Operator: scenario.Operator{DetectAfter: d(30), Policy: RestartFailed, ActionTime: d(15)},
	}
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var events []string
		emit := func(e record.Event) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, fmt.Sprintf("%g %s %s n%d #%d %s", e.TS, e.Kind, e.Fault, e.Node, e.ID, e.Detail))
		}
		fc := &exitingCluster{}
		r, err := Start(context.Background(), sc, fc, clockFunc(func() time.Duration { return time.Since(start) }), emit)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(40 * time.Second)
		fc.exit(3)
		fc.exit(3) // reported twice: still one fault
		time.Sleep(160 * time.Second)
		fc.exit(1)
		time.Sleep(sc.Length() - 200*time.Second)
		r.Stop()
		fc.exit(4) // the run's own stop: not a fault
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		want := []string{
			"40 fault.inject unplanned n3 #2 not injected: the application exited on its own (signal: killed)",
			"60 fault.inject app-crash n2 #1 for 20s",
			"70 operator.detect unplanned n3 #2 noticed unplanned 30s after injection",
			"70 operator.action unplanned n3 #2 restart-failed begins on node 3",
			"80 fault.clear app-crash n2 #1 duration over",
			"85 operator.action unplanned n3 #2 restart-failed done on node 3",
			"85 fault.clear unplanned n3 #2 repaired by restart-failed",
			"200 fault.inject unplanned n1 #3 not injected: the application exited on its own (signal: killed)",
			"210 fault.clear unplanned n1 #3 run ended",
		}
		if !reflect.DeepEqual(events, want) {
			t.Errorf("events\n got %s\nwant %s", strings.Join(events, "\n     "), strings.Join(want, "\n     "))
		}
		if want := []string{"kill 2", "kill 3", "start 2", "start 3"}; !reflect.DeepEqual(fc.calls, want) {
			t.Errorf("calls %v, want %v", fc.calls, want)
		}
	})
}

// TestUnplannedClearsWhenTheNodeAnswersAgain: a node started by someone
// else (a scheduled fault's clear, a reboot) ends its unplanned fault
// before the operator notices; the operator then does nothing.
func TestUnplannedClearsWhenTheNodeAnswersAgain(t *testing.T) {
	now := time.Duration(0)
	var events []string
	u := NewUnplanned(7, clockFunc(func() time.Duration { return now }), func(e record.Event) {
		events = append(events, fmt.Sprintf("%g %s n%d #%d %s", e.TS, e.Kind, e.Node, e.ID, e.Detail))
	}, nil)
	now = 5 * time.Second
	u.Exited(2, "exit status 1")
	now = 9 * time.Second
	u.Ready(2)
	u.Ready(2)
	if got := u.Repaired(now, []int{2}, RestartFailed); len(got) != 0 {
		t.Errorf("a cleared fault was repaired again: %v", got)
	}
	want := []string{
		"5 fault.inject n2 #7 not injected: the application exited on its own (exit status 1)",
		"9 fault.clear n2 #7 the application answers again",
	}
	if !reflect.DeepEqual(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
}
