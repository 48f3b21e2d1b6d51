package testbed

import (
	"testing"
	"time"
)

func TestPlainRig(t *testing.T) {
	rig, err := System{Name: "plain"}.Rig(&Spec{System: "plain", Nodes: 1}, Plan{Hosts: []string{"h1"}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	var c Cluster = stoppedCluster{}
	if rig.Target(c) != c || rig.Close() != nil {
		t.Error("a system without Prepare should run the cluster as it is")
	}
}

// stoppedCluster is a Cluster with no nodes.
type stoppedCluster struct{}

func (stoppedCluster) Size() int           { return 0 }
func (stoppedCluster) Nodes() []Node       { return nil }
func (stoppedCluster) Host(int) string     { return "" }
func (stoppedCluster) Boot() time.Duration { return 0 }
func (stoppedCluster) Dir() string         { return "" }
func (stoppedCluster) Stop() error         { return nil }
