package operator

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
)

// TestStart runs a scenario's faults and operator end to end on a fake
// cluster in simulated time: the paper's app-crash, noticed after 90 s and
// repaired by restarting the failed node.
func TestStart(t *testing.T) {
	d := func(s float64) scenario.Duration { return scenario.D(time.Duration(s * 1e9)) }
	sc := &scenario.Scenario{
		Seed:     1,
		Cluster:  scenario.ClusterSpec{System: "static", Nodes: 4, Backend: "local", Boot: d(5)},
		Phases:   []scenario.Phase{{Name: "warmup", Duration: d(60)}, {Name: "fault", Duration: d(90)}, {Name: "post", Duration: d(60)}},
		Faults:   []scenario.Fault{{Type: "app-crash", Node: scenario.NodeRef{N: 2}, At: d(60), Mode: "transient"}},
		Operator: scenario.Operator{DetectAfter: d(90), Policy: RestartFailed, ActionTime: d(15)},
	}
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var kinds []string
		emit := func(e record.Event) {
			mu.Lock()
			defer mu.Unlock()
			kinds = append(kinds, fmt.Sprintf("%g %s %d", e.TS, e.Kind, e.Node))
		}
		fc := &fakeCluster{}
		r, err := Start(context.Background(), sc, fc, clockFunc(func() time.Duration { return time.Since(start) }), emit)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(sc.Length())
		r.Stop()
		r.Stop()
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		want := []string{"60 fault.inject 2", "150 operator.detect 2", "150 operator.action 2", "165 operator.action 2", "165 fault.clear 2"}
		if !reflect.DeepEqual(kinds, want) {
			t.Errorf("events %v, want %v", kinds, want)
		}
		if want := []string{"kill 2", "kill 2", "start 2"}; !reflect.DeepEqual(fc.calls, want) {
			t.Errorf("calls %v, want %v", fc.calls, want)
		}
	})
}

func TestStartRejectsUnsupportedFault(t *testing.T) {
	sc := &scenario.Scenario{
		Cluster: scenario.ClusterSpec{System: "static", Nodes: 2, Backend: "local"},
		Phases:  []scenario.Phase{{Name: "all", Duration: scenario.D(time.Minute)}},
		Faults:  []scenario.Fault{{Type: "partition", Group: [][]int{{1}, {2}}, At: scenario.D(time.Second), Duration: scenario.D(time.Second)}},
	}
	_, err := Start(context.Background(), sc, &fakeCluster{}, clockFunc(func() time.Duration { return 0 }), nil)
	if err == nil || err.Error() != "faults[0].type: fault partition cannot be injected by backend local into system static (it supports app-crash, app-hang, node-crash, node-freeze, node-reboot, restart-all, restart-node)" {
		t.Fatalf("got %v", err)
	}
}
