package press

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/faultnet"
)

type clusterTarget struct{ c *testCluster }

func (t clusterTarget) Size() int               { return len(t.c.cfgs) }
func (t clusterTarget) FaultNet() *faultnet.Net { return t.c.net }
func (t clusterTarget) PressControl(n int) (string, string, error) {
	cfg, ok := t.c.cfgs[n]
	if !ok || cfg.ControlAddr == "" {
		return "", "", fmt.Errorf("node %d has no control endpoint", n)
	}
	return cfg.ControlAddr, cfg.ControlToken, nil
}

func TestInjectorsThroughLevers(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets")
	}
	c := newTestCluster(t, Robust, 3, func(cfg *Config) {
		cfg.ControlAddr = freeAddr(t, fmt.Sprintf("127.0.0.%d", 20+cfg.Node))
		cfg.ControlToken = "tok"
	})
	c.waitMembers(2, []int{1, 2, 3}, 3*time.Second)
	target := clusterTarget{c}
	ctx := context.Background()

	revert, err := injectComm(ctx, target, fault.Occurrence{Type: "slow", Node: 2, Duration: time.Minute},
		&SlowParams{CommonParams: CommonParams{Probability: 1}, Delay: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if fs := c.nodes[2].faults.list(); len(fs) != 1 || fs[0].Type != Slow {
		t.Fatalf("node 2 faults after inject: %+v", fs)
	}
	if err := revert(); err != nil {
		t.Fatal(err)
	}
	if fs := c.nodes[2].faults.list(); len(fs) != 0 {
		t.Fatalf("node 2 faults after revert: %+v", fs)
	}
	// Validate rejects n 500 before any run; the node refuses it too.
	if _, err := injectComm(ctx, target, fault.Occurrence{Type: "bad-param-size", Node: 2},
		&BadParamParams{CommonParams: CommonParams{Probability: 1}, N: 500}); err == nil {
		t.Fatal("n=500 accepted by the node")
	}

	revert, err = injectNet(ctx, target, fault.Occurrence{Type: "partition", Group: [][]int{{1, 2}, {3}}}, faultnet.NewDownParams())
	if err != nil {
		t.Fatal(err)
	}
	if c.net.Link(1, 3).State().Down != faultnet.Hold || c.net.Link(1, 2).State().Down != faultnet.Up {
		t.Fatal("partition not applied")
	}
	revert()
	if c.net.Link(1, 3).State() != (faultnet.State{}) {
		t.Fatal("partition not reverted")
	}
	revert, err = injectNet(ctx, target, fault.Occurrence{Type: "bandwidth", Link: []int{1, 2}}, &faultnet.BandwidthParams{Rate: 512 << 10})
	if err != nil || c.net.Link(2, 1).State().Bandwidth != 512<<10 {
		t.Fatalf("bandwidth: %v %+v", err, c.net.Link(2, 1).State())
	}
	revert()
	// Validate rejects loss 2 before any run; faultnet refuses it too.
	if _, err := injectNet(ctx, target, fault.Occurrence{Type: "loss", Link: []int{1, 2}}, &faultnet.LossParams{Loss: 2}); err == nil {
		t.Fatal("loss 2 accepted by faultnet")
	}
	if _, err := injectNet(ctx, struct{ fault.Target }{target}, fault.Occurrence{Type: "switch-down"}, faultnet.NewDownParams()); err == nil {
		t.Fatal("a target without faultnet accepted a network fault")
	}
}
