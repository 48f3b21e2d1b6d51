package ssm

import (
	"testing"

	"github.com/faultbench/faultbench/internal/testbed"
)

// On kernel links (plan.KernelLinks, as the netns backend plans) a front
// end dials every brick at its own address, with no proxy, and Close has
// nothing to close.
func TestRigOnKernelLinksDialsBricksDirectly(t *testing.T) {
	spec := testbed.Spec{System: ClusterKind, Nodes: 3}
	plan := testbed.Plan{Hosts: []string{"10.213.5.11", "10.213.5.12", "10.213.5.13"}, Proxy: "10.213.5.1:0", KernelLinks: true}
	r, err := system{}.Prepare(&spec, plan, 7)
	if err != nil {
		t.Fatal(err)
	}
	opts := spec.NodeOptions(1)
	for j, want := range map[string]string{"brick.2": "10.213.5.12:", "brick.3": "10.213.5.13:"} {
		if got := opts[j]; len(got) <= len(want) || got[:len(want)] != want {
			t.Errorf("front end 1's %s = %q, want brick's own address %s<port>", j, got, want)
		}
	}
	if r.(*rig).net != nil {
		t.Error("a faultnet on kernel links")
	}
	if err := r.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}
