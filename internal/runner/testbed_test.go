package runner

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/provenance"
	"github.com/faultbench/faultbench/internal/testbed"
	"github.com/faultbench/faultbench/internal/testbed/fake"
)

// entryCluster is a fake cluster behind a load balancer that describes
// itself, as an attached docker stack does.
type entryCluster struct{ testbed.Cluster }

func (entryCluster) Entry() []string { return []string{"127.0.0.1:18080"} }
func (entryCluster) Describe() provenance.Testbed {
	return provenance.Testbed{Backend: "docker", Detail: "(API 1.41), attached to compose project shop",
		Nodes: []provenance.TestbedNode{{Node: 1, Container: "shop_web_1", ContainerID: "0123456789abcdef", Image: "shop/web:1", ImageID: "sha256:feedfacecafe0000", RestartPolicy: "always"}}}
}

type nothingRig struct{}

func (nothingRig) Target(c testbed.Cluster) fault.Target { return c }
func (nothingRig) Close() error                          { return nil }

func TestClientsSendToTheEntryPointAndTheRecordSaysWhatRanTheNodes(t *testing.T) {
	sc := parse(t, "cluster: {system: static, nodes: 2}\nworkload: {rate: 10}\nphases: [{name: a, duration: 1s}]\n")
	nodes := startFake(t, 2)
	r := &run{sc: sc, cluster: entryCluster{nodes}, rig: nothingRig{}}
	cfg := r.workloadConfig()
	if len(cfg.Targets) != 1 || cfg.Targets[0].Addr != "127.0.0.1:18080" || cfg.Targets[0].Node != 0 {
		t.Errorf("targets %+v: want the entry point alone, as node 0", cfg.Targets)
	}
	if cfg.Verify == nil {
		t.Error("a static stack's pages are verified behind its entry point too")
	}
	tb := r.testbed()
	if tb.Backend != "docker" || len(tb.Nodes) != 1 {
		t.Errorf("testbed %+v", tb)
	}
	lines := describeLines(*tb)
	want := []string{"backend docker: (API 1.41), attached to compose project shop",
		"  node 1: container shop_web_1 (0123456789ab) image shop/web:1 (feedfacecafe), restart policy always"}
	if !slices.Equal(lines, want) {
		t.Errorf("console lines\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	// A cluster that says nothing of itself: the backend's name alone.
	r = &run{sc: sc, cluster: nodes, rig: nothingRig{}}
	if tb := r.testbed(); tb.Backend != "local" || tb.Nodes != nil {
		t.Errorf("plain testbed %+v", tb)
	}
	if cfg := r.workloadConfig(); len(cfg.Targets) != 2 || cfg.Targets[1].Node != 2 {
		t.Errorf("targets without an entry point %+v", cfg.Targets)
	}
}

func startFake(t *testing.T, nodes int) *fake.Nodes {
	t.Helper()
	b := &fake.Backend{}
	spec := testbed.Spec{System: "static", Nodes: nodes}
	plan, err := b.Plan(spec)
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.Start(context.Background(), spec, plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	return c.(*fake.Nodes)
}
