package operator

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
)

// fakeCluster records lever calls.
type fakeCluster struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeCluster) call(what string, n int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("%s %d", what, n))
	return nil
}
func (f *fakeCluster) Size() int                    { return 2 }
func (f *fakeCluster) KillApp(n int) error          { return f.call("kill", n) }
func (f *fakeCluster) StartApp(n int) error         { return f.call("start", n) }
func (f *fakeCluster) RestartApp(n int) error       { return f.call("restart", n) }
func (f *fakeCluster) Pause(n int) error            { return f.call("pause", n) }
func (f *fakeCluster) Resume(n int) error           { return f.call("resume", n) }
func (f *fakeCluster) HostDown(n int, _ bool) error { return f.call("down", n) }

type clockFunc func() time.Duration

func (f clockFunc) Now() time.Duration { return f() }

// TestOperatorWithScheduler runs the real-time loops of the scheduler and
// the operator together on a fake cluster, in a synctest bubble: a 5-minute
// experiment in no wall time. A sticky node freeze is noticed after 90 s and
// the node is rebooted; a 30 s hang clears before anyone notices.
func TestOperatorWithScheduler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		clock := clockFunc(func() time.Duration { return time.Since(start) })
		var mu sync.Mutex
		var events []string
		emit := func(e record.Event) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, fmt.Sprintf("%g %s %s %d %s", e.TS, e.Kind, e.Fault, e.Node, e.Detail))
		}
		d := func(s float64) scenario.Duration { return scenario.D(time.Duration(s * 1e9)) }
		occ, err := fault.Expand([]scenario.Fault{
			{Type: "node-freeze", Node: scenario.NodeRef{N: 2}, At: d(60), Mode: "sticky"},
			{Type: "app-hang", Node: scenario.NodeRef{N: 1}, At: d(100), Duration: d(30)},
		}, fault.Plan{RunLength: 300 * time.Second, Nodes: 2}, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		fc := &fakeCluster{}
		sched, err := fault.NewScheduler(occ, fc, fault.SchedulerConfig{Clock: clock, Emit: emit})
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := FromScenario(scenario.Operator{DetectAfter: d(90), Policy: RebootNode, ActionTime: d(10)}, 40*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		op, err := New(cfg, 2, rand.New(rand.NewPCG(1, 2)), fc, sched, clock, emit)
		if err != nil {
			t.Fatal(err)
		}
		sched.SetObserver(op)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); _ = sched.Run(ctx) }()
		go func() { defer wg.Done(); _ = op.Run(ctx) }()
		time.Sleep(300 * time.Second)
		cancel()
		wg.Wait()
		if err := sched.RevertAll(); err != nil {
			t.Fatal(err)
		}

		want := []string{
			"60 fault.inject node-freeze 2 until repaired",
			"100 fault.inject app-hang 1 for 30s",
			"130 fault.clear app-hang 1 duration over",
			"150 operator.detect node-freeze 2 noticed node-freeze 1m30s after injection",
			"150 operator.action node-freeze 2 reboot-node begins on node 2",
			"200 operator.action node-freeze 2 reboot-node done on node 2",
			"200 fault.clear node-freeze 2 repaired by reboot-node",
		}
		if !reflect.DeepEqual(events, want) {
			t.Errorf("events\n got %s\nwant %s", strings.Join(events, "\n     "), strings.Join(want, "\n     "))
		}
		wantCalls := []string{"pause 2", "pause 1", "resume 1", "down 2", "start 2", "resume 2"}
		if !reflect.DeepEqual(fc.calls, wantCalls) {
			t.Errorf("calls %v, want %v", fc.calls, wantCalls)
		}
	})
}
