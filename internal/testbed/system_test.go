package testbed

import (
	"slices"
	"testing"
)

// NodeOptions are merged over Options per node, and a key it returns wins.
func TestNodeOptionsMerge(t *testing.T) {
	spec := Spec{System: "static", Nodes: 2, Options: map[string]string{"shared": "1", "intra": "from-scenario"},
		NodeOptions: func(i int) map[string]string { return map[string]string{"intra": spec2addr(i)} }}
	c := &Cluster{spec: spec, exe: "/bin/faultbench"}
	for i := 1; i <= 2; i++ {
		c.nodes = append(c.nodes, &nodeProc{c: c, id: i, addr: spec.Host(i) + ":80"})
	}
	for _, n := range c.nodes {
		args := c.command(n).Args
		for _, want := range []string{"shared=1", "intra=" + spec2addr(n.id)} {
			if !slices.Contains(args, want) {
				t.Errorf("node %d: argv %q lacks --option %s", n.id, args, want)
			}
		}
	}
	if spec.Options["intra"] != "from-scenario" {
		t.Errorf("the shared Options map was modified: %v", spec.Options)
	}
}

func spec2addr(i int) string { return (&Spec{}).Host(i) + ":9080" }

func TestPlainRig(t *testing.T) {
	spec := Spec{System: "no-such-system", Nodes: 1}
	rig, err := PrepareSystem(&spec, 1)
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{}
	if rig.Target(c) != c || rig.Close() != nil {
		t.Error("a system without an adapter should run the cluster as it is")
	}
}
