package local

import (
	"slices"
	"testing"

	"github.com/faultbench/faultbench/internal/testbed"
)

// NodeOptions are merged over Options per node, and a key it returns wins.
func TestNodeOptionsMerge(t *testing.T) {
	spec := Spec{System: "static", Nodes: 2, Options: map[string]string{"shared": "1", "intra": "from-scenario"},
		NodeOptions: func(i int) map[string]string { return map[string]string{"intra": spec2addr(i)} }}
	plan, err := Backend{}.Plan(spec)
	if err != nil {
		t.Fatal(err)
	}
	c := &Processes{spec: spec, plan: plan, exe: "/bin/faultbench"}
	for i := 1; i <= 2; i++ {
		c.nodes = append(c.nodes, &nodeProc{c: c, id: i, addr: plan.Host(i) + ":80"})
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

func spec2addr(i int) string {
	plan, _ := Backend{}.Plan(Spec{System: "static", Nodes: i})
	return plan.Host(i) + ":9080"
}

// The plan numbers hosts from FirstHost and refuses a cluster leaving the /24.
func TestPlan(t *testing.T) {
	plan, err := Backend{}.Plan(Spec{System: "static", Nodes: 3, FirstHost: 41})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"127.0.0.41", "127.0.0.42", "127.0.0.43"}; !slices.Equal(plan.Hosts, want) {
		t.Errorf("hosts %v, want %v", plan.Hosts, want)
	}
	if _, err := (Backend{}).Plan(Spec{System: "static", Nodes: 200, FirstHost: 100}); err == nil {
		t.Error("a plan past 127.0.0.254 was accepted")
	}
	if _, err := testbed.LookupBackend(Name); err != nil {
		t.Errorf("local is not registered: %v", err)
	}
}

// Every process of a run carries its id in the environment.
func TestRunIDInEnvironment(t *testing.T) {
	spec := Spec{System: "static", Nodes: 1, RunID: "0123456789ab"}
	plan, err := Backend{}.Plan(spec)
	if err != nil {
		t.Fatal(err)
	}
	c := &Processes{spec: spec, plan: plan, exe: "/bin/faultbench"}
	c.nodes = append(c.nodes, &nodeProc{c: c, id: 1, addr: plan.Host(1) + ":80"})
	if env := c.command(c.nodes[0]).Env; !slices.Contains(env, testbed.RunIDEnv+"=0123456789ab") {
		t.Errorf("node environment lacks %s: %q", testbed.RunIDEnv, env[len(env)-1])
	}
}
