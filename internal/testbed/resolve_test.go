package testbed_test

import (
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/testbed"
	"github.com/faultbench/faultbench/internal/testbed/fake"
)

func init() {
	s := fake.System("resolve-own", nil)
	s.Defaults = func(c *scenario.ClusterSpec) {
		if c.Port == 0 {
			c.Port = 7000
		}
	}
	testbed.RegisterSystem(s)
}

// Resolve applies the descriptor's defaults: the page set's for a PageSet
// system (and the trace they imply), the system's own Defaults, and
// nothing a scenario already says; a system without a page set needs a
// trace.
func TestResolve(t *testing.T) {
	parse := func(cluster, workload string) *scenario.Scenario {
		t.Helper()
		sc, err := scenario.Parse([]byte("cluster: "+cluster+"\nworkload: "+workload+"\nphases: [{name: warmup, duration: 10s}]\n"), "r.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	sc := parse("{system: static, nodes: 2}", "{rate: 10}")
	for range 2 { // idempotent
		if err := testbed.Resolve(sc); err != nil {
			t.Fatal(err)
		}
	}
	if c := sc.Cluster; c.Pages != scenario.DefaultPages || c.PageSize != scenario.DefaultPageSize || c.Ready != "/health" || sc.Workload.Trace != "zipf:18000:1.0" {
		t.Fatalf("static not resolved: %+v trace %q", c, sc.Workload.Trace)
	}
	sc = parse("{system: static, nodes: 2, pages: 50}", "{rate: 10, trace: \"zipf:10:1.0\"}")
	if err := testbed.Resolve(sc); err != nil || sc.Cluster.Pages != 50 || sc.Workload.Trace != "zipf:10:1.0" {
		t.Fatalf("given values overridden: %v pages %d trace %q", err, sc.Cluster.Pages, sc.Workload.Trace)
	}
	sc = parse("{system: resolve-own, nodes: 2}", "{rate: 10, trace: \"zipf:10:1.0\"}")
	if err := testbed.Resolve(sc); err != nil || sc.Cluster.Port != 7000 || sc.Cluster.Pages != 0 || sc.Cluster.Ready != "" {
		t.Fatalf("own defaults: %v %+v", err, sc.Cluster)
	}
	sc = parse("{system: resolve-own, nodes: 2}", "{rate: 10}")
	if err := testbed.Resolve(sc); err == nil || !strings.Contains(err.Error(), "r.yaml:2: workload: trace is required for system: resolve-own") {
		t.Fatalf("no trace: %v", err)
	}
}

// A scenario that names no system is the registry's default one: Load
// leaves the name empty (the scenario package knows no systems) and
// Resolve fills in DefaultSystem with its defaults.
func TestResolveDefaultSystem(t *testing.T) {
	sc, err := scenario.Parse([]byte("cluster: {nodes: 2}\nworkload: {rate: 10}\nphases: [{name: warmup, duration: 10s}]\n"), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Cluster.System != "" {
		t.Fatalf("Load chose system %q", sc.Cluster.System)
	}
	if err := testbed.Resolve(sc); err != nil || sc.Cluster.System != testbed.DefaultSystem || sc.Cluster.Pages != scenario.DefaultPages {
		t.Fatalf("resolved: %v %+v", err, sc.Cluster)
	}
}

// An attached cluster that names no system is someone's own running
// containers: AttachSystem, not the page server.
func TestResolveAttachedSystem(t *testing.T) {
	sc, err := scenario.Parse([]byte("cluster: {backend: docker, attach: {project: shop}}\nworkload: {rate: 10, trace: \"zipf:10:1.0\"}\nphases: [{name: warmup, duration: 10s}]\n"), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := testbed.Resolve(sc); err != nil || sc.Cluster.System != testbed.AttachSystem {
		t.Fatalf("resolved: %v, system %q, want %q", err, sc.Cluster.System, testbed.AttachSystem)
	}
}
