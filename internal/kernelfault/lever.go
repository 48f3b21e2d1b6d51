package kernelfault

// Lever names (fault.Support.Levers, testbed.Backend.Levers).
const (
	LeverNetfilter = "netfilter" // NetfilterLever
	LeverQdisc     = "qdisc"     // QdiscLever
	LeverCgroup    = "cgroup"    // CgroupLever
	LeverNetem     = "netem"     // packet delay and flaky links: needs the kernel's netem qdisc
)

// Label names the fault occurrence a lever call serves, for its events.
type Label struct {
	Fault string
	ID    int
}

// Peers selects the traffic of a node a rule or qdisc applies to.
type Peers struct {
	Nodes  []int // these nodes' addresses
	Client bool  // the users' side (the controller's gateway)
	All    bool  // every packet on the node's interface (a pulled cable)
}

// Block says how traffic is blocked.
type Block struct {
	Peers  Peers
	Reject bool    // answer with port-unreachable instead of silence
	Loss   float64 // in (0, 1): drop each packet with this probability; 0: drop all
}

// Undo reverts one lever call; it proves the revert like the call proved
// its effect, and is idempotent.
type Undo func() error

// NetfilterLever installs packet filter rules in a node's namespace.
type NetfilterLever interface {
	Filter(l Label, node int, b Block) (Undo, error)
}

// QdiscLever caps the rate of a node's outgoing traffic to peers.
type QdiscLever interface {
	Shape(l Label, node int, p Peers, bytesPerSec int64) (Undo, error)
}

// CgroupLever runs a process inside a node's cgroup.
type CgroupLever interface {
	// Burn runs a CPU burner of cpus busy threads.
	Burn(l Label, node int, cpus int) (Undo, error)
	// Balloon runs a process that holds bytes of resident memory.
	Balloon(l Label, node int, bytes int64) (Undo, error)
}
