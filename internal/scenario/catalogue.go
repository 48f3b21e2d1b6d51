package scenario

import "slices"

// Target kinds: what a fault type aims at.
const (
	TargetNode    = "node"    // node: N | nodes: [..] | node: any
	TargetLink    = "link"    // link: [a, b], or node: N for every link of the node
	TargetGroup   = "group"   // group: [[..], [..]]
	TargetDisk    = "disk"    // node plus disk: N
	TargetCluster = "cluster" // the whole cluster, no target
)

// FaultType describes one fault type of docs/scenario.md.
type FaultType struct {
	Name     string
	Category string // node | application | network | resource | bug | disk | workload | maintenance
	Target   string // one of the Target* kinds
	Instant  bool   // a maintenance event: no duration, no clear
}

// Catalogue is every fault type faultbench knows, in docs/scenario.md
// order, category by category: the one list the scenario loader, the
// fault package (which registers injectors for them) and the report read.
// Knowing a type does not mean every backend and system can inject it:
// the fault package checks that.
var Catalogue = func() []FaultType {
	var ts []FaultType
	add := func(category, target string, instant bool, names ...string) {
		for _, n := range names {
			ts = append(ts, FaultType{Name: n, Category: category, Target: target, Instant: instant})
		}
	}
	add("node", TargetNode, false, "node-crash", "node-freeze", "node-reboot")
	add("application", TargetNode, false, "app-crash", "app-hang")
	add("network", TargetLink, false, "link-down", "link-flaky")
	add("network", TargetCluster, false, "switch-down")
	add("network", TargetGroup, false, "partition")
	add("network", TargetLink, false, "delay", "loss", "bandwidth")
	add("network", TargetNode, false, "disconnect")
	add("resource", TargetNode, false, "mem-alloc-fail", "mem-pin-fail", "mem-pressure", "cpu-hog", "slow")
	add("bug", TargetNode, false, "bad-param-null", "bad-param-offset", "bad-param-size", "bitflip")
	add("disk", TargetDisk, false, "disk-read-correctable", "disk-read-uncorrectable", "disk-write-correctable",
		"disk-write-uncorrectable", "disk-hw-error", "disk-illegal-command", "disk-hang-read", "disk-hang-write",
		"disk-hang-idle", "disk-power-fail", "disk-remove")
	add("workload", TargetCluster, false, "load-spike")
	add("maintenance", TargetDisk, true, "replace-disk", "start-reconstruction", "remove-wrong-disk")
	add("maintenance", TargetNode, true, "restart-node")
	add("maintenance", TargetCluster, true, "restart-all")
	return ts
}()

// LookupFault returns the catalogue entry of a fault type.
func LookupFault(name string) (FaultType, bool) {
	i := slices.IndexFunc(Catalogue, func(t FaultType) bool { return t.Name == name })
	if i < 0 {
		return FaultType{}, false
	}
	return Catalogue[i], true
}

// IsFaultType reports whether t is a fault type of docs/scenario.md.
func IsFaultType(t string) bool { _, ok := LookupFault(t); return ok }

// FaultTypes lists the catalogue's names by category, in its order.
var FaultTypes = func() map[string][]string {
	m := map[string][]string{}
	for _, t := range Catalogue {
		m[t.Category] = append(m[t.Category], t.Name)
	}
	return m
}()

// needsNode reports whether a fault of type t aims at one node (node: N).
func needsNode(t string) bool {
	ft, ok := LookupFault(t)
	return ok && ft.Target == TargetNode
}
