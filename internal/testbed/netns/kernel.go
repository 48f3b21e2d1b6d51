package netns

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/kernelfault"
	"github.com/faultbench/faultbench/internal/record"
)

// seq numbers the nft tables of kernel faults, so that every rule set has
// a name of its own.
var seq atomic.Int64

func (c *Namespaces) effective(l kernelfault.Label, node int, kind, detail string) {
	c.emit(record.Event{TS: c.now(), Kind: kind, Node: node, Fault: l.Fault, ID: l.ID, Detail: detail})
}

// targets are the addresses a probe sends to for peers p of node id.
func (c *Namespaces) targets(id int, p kernelfault.Peers) []string {
	switch {
	case p.Client || p.All:
		return []string{c.net.gateway()}
	}
	var out []string
	for _, n := range p.Nodes {
		if n != id && n >= 1 && n <= len(c.nodes) {
			out = append(out, c.net.host(n))
		}
	}
	return out
}

// target is where node n's kernel faults act.
func (n *nsNode) target() kernelfault.Target {
	return kernelfault.Target{Netns: n.ns, Iface: "eth0", Cgroup: n.cg.dirs}
}

// faultID names one lever call's fault for the warden and its journal.
func faultID(l kernelfault.Label, node int) string {
	return fmt.Sprintf("%s#%d.n%d.%d", l.Fault, l.ID, node, seq.Add(1))
}

// Filter has the warden install an nft table in node id's namespace that
// drops (or rejects, or loses with a probability) the traffic to and from
// the peers, and prove it: probe datagrams from the node to each peer
// must show on the rule's counter.
func (c *Namespaces) Filter(l kernelfault.Label, id int, b kernelfault.Block) (kernelfault.Undo, error) {
	n, err := c.node(id)
	if err != nil {
		return nil, err
	}
	targets := c.targets(id, b.Peers)
	if len(targets) == 0 {
		return nil, fmt.Errorf("%s on node %d: no peer to block", l.Fault, id)
	}
	r := &kernelfault.Rule{Table: fmt.Sprintf("fbf%d", seq.Add(1)), All: b.Peers.All, Reject: b.Reject, Loss: b.Loss, Probe: targets}
	if !b.Peers.All {
		r.Addrs = targets
	}
	return c.apply(l, n, kernelfault.Fault{ID: faultID(l, id), Target: n.target(), Rule: r})
}

// Shape has the warden put a token bucket (tbf) capping bytesPerSec in an
// htb class on node id's eth0, with u32 filters steering the peers'
// traffic into it, and prove it: probe datagrams must pass the tbf.
func (c *Namespaces) Shape(l kernelfault.Label, id int, p kernelfault.Peers, bytesPerSec int64) (kernelfault.Undo, error) {
	n, err := c.node(id)
	if err != nil {
		return nil, err
	}
	probe := c.targets(id, p)
	if len(probe) == 0 {
		return nil, fmt.Errorf("%s on node %d: no peer to shape", l.Fault, id)
	}
	s := &kernelfault.Shaping{All: p.All, Rate: bytesPerSec, Probe: probe}
	if !p.All {
		s.Addrs = probe
	}
	return c.apply(l, n, kernelfault.Fault{ID: faultID(l, id), Target: n.target(), Shape: s})
}

// apply injects f (through the warden unless direct), emits its evidence
// and returns its revert.
func (c *Namespaces) apply(l kernelfault.Label, n *nsNode, f kernelfault.Fault) (kernelfault.Undo, error) {
	t0 := time.Now()
	ev, err := c.inject(f)
	if err != nil {
		return nil, fmt.Errorf("%s on node %d: %w", l.Fault, n.id, err)
	}
	c.effective(l, n.id, "fault.effective", fmt.Sprintf("%s after %s%s", ev, ms(time.Since(t0)), c.via()))
	return once(func() error {
		t1 := time.Now()
		ev, err := c.revert(f)
		if err != nil {
			return fmt.Errorf("revert %s on node %d: %w", l.Fault, n.id, err)
		}
		c.effective(l, n.id, "fault.reverted", fmt.Sprintf("%s after %s%s", ev, ms(time.Since(t1)), c.via()))
		return nil
	}), nil
}

func (c *Namespaces) via() string {
	if c.direct {
		return " (direct)"
	}
	return " (via the warden)"
}

// inject applies f through the warden, or directly when the cluster was
// told so (benchmarks compare the two).
func (c *Namespaces) inject(f kernelfault.Fault) (string, error) {
	if c.direct {
		return kernelfault.Apply(f)
	}
	return c.guard.inject(f)
}

// errRevertedDirectly marks a revert error after which the fault is gone
// all the same: the warden failed, and the controller reverted it itself.
var errRevertedDirectly = errors.New("the controller reverted it directly")

// revert reverts f through the warden. A warden that does not answer or
// refuses (its lease lapsed) leaves the controller to revert f itself:
// the fault is reverted either way, and the error (errRevertedDirectly)
// says the warden failed. A delayer or helper the warden ran went with its
// lease or its process; the controller then removes what the kernel still
// holds by name.
func (c *Namespaces) revert(f kernelfault.Fault) (string, error) {
	if c.direct {
		return kernelfault.Revert(f)
	}
	ev, err := c.guard.revert(f.ID)
	if err == nil {
		return ev, nil
	}
	if _, derr := kernelfault.Revert(f); derr != nil {
		return "", fmt.Errorf("%v; and reverting it directly failed too: %v", err, derr)
	}
	return "", fmt.Errorf("%v (%w: fault %s)", err, errRevertedDirectly, f.ID)
}

// Burn has the warden run a burner of cpus busy threads in node id's
// cgroup and namespace; the warden proves the burn by the burner's CPU
// time growing and holds the burner until the revert (or a lapsed lease).
func (c *Namespaces) Burn(l kernelfault.Label, id int, cpus int) (kernelfault.Undo, error) {
	return c.helper(l, id, &kernelfault.Helper{Kind: kernelfault.HelperBurner, CPUs: cpus})
}

// Balloon has the warden run a process in node id's cgroup that touches
// and holds bytes of memory; the warden proves the pressure by the
// balloon's resident set.
func (c *Namespaces) Balloon(l kernelfault.Label, id int, bytes int64) (kernelfault.Undo, error) {
	return c.helper(l, id, &kernelfault.Helper{Kind: kernelfault.HelperBalloon, Bytes: bytes})
}

// helper runs h on node id, whose host must be up.
func (c *Namespaces) helper(l kernelfault.Label, id int, h *kernelfault.Helper) (kernelfault.Undo, error) {
	n, err := c.node(id)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	down := n.state == stopped || n.state == hostDown
	n.mu.Unlock()
	if down {
		return nil, fmt.Errorf("%s on node %d: the node is down", l.Fault, id)
	}
	return c.apply(l, n, kernelfault.Fault{ID: faultID(l, id), Target: n.target(), Proc: h})
}

// inNetns runs f in namespace ns (see kernelfault.InNetns).
func inNetns(ns string, f func() error) error { return kernelfault.InNetns("/run/netns/"+ns, f) }

func joinUndo(err error, undo func() error) error {
	if uerr := undo(); uerr != nil {
		return fmt.Errorf("%w; and its revert failed: %v", err, uerr)
	}
	return err
}

// once makes f idempotent.
func once(f func() error) kernelfault.Undo {
	var done atomic.Bool
	var err error
	ch := make(chan struct{})
	return func() error {
		if done.CompareAndSwap(false, true) {
			err = f()
			close(ch)
		}
		<-ch
		return err
	}
}
