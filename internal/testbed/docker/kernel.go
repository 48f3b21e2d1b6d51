package docker

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/kernelfault"
	"github.com/faultbench/faultbench/internal/record"
)

// The kernel levers act in a node's network namespace, which its holder
// container owns (/proc/PID/ns/net of the holder's process), through the
// kernel fault engine the netns backend uses (internal/kernelfault): the
// run's warden applies each fault, proves it, holds what must keep running
// (a delayer, a helper) and journals it, so a lapsed lease or this
// controller's death reverts it. The rules outlive an app-crash (the
// holder stays) and go with a node-crash (the namespace goes), as on a
// real host.

var seq atomic.Int64

// kernelSite is where the kernel levers act: the network namespaces of a
// cluster's nodes (an owned node's holder container, an attached
// container itself) and the addresses of their peers.
type kernelSite interface {
	// nsOf is node id's namespace (/proc/PID/ns/net) and the short id of
	// the container that holds it, for events; an error when it is down.
	nsOf(id int) (ns, holder string, err error)
	// peerAddrs are the addresses of node id's peers p; the users' side
	// (the host's gateway, an entry point) when p.Client or p.All.
	peerAddrs(id int, p kernelfault.Peers) []string
	// tableName names a new nft table.
	tableName() string
	// device is node id's interface toward its peers in namespace ns.
	device(id int, ns string) (string, error)
	kevent(l kernelfault.Label, node int, kind, detail string)
}

func (c *Containers) kevent(l kernelfault.Label, node int, kind, detail string) {
	c.emit(record.Event{TS: c.now(), Kind: kind, Node: node, Fault: l.Fault, ID: l.ID, Detail: detail})
}

// nsOf is node id's namespace path, from its holder's pid.
func (c *Containers) nsOf(id int) (string, string, error) {
	if id < 1 || id > len(c.nodes) {
		return "", "", fmt.Errorf("no node %d (cluster has %d)", id, len(c.nodes))
	}
	n := c.nodes[id-1]
	info, err := c.inspect(n.holder)
	if err != nil {
		return "", "", err
	}
	if !info.Running || info.Pid <= 0 {
		return "", "", fmt.Errorf("node %d is down (holder %s)", id, info.Status)
	}
	return fmt.Sprintf("/proc/%d/ns/net", info.Pid), shortID(n.holder), nil
}

func (c *Containers) tableName() string {
	return fmt.Sprintf("%s%d", runTable(c.spec.RunID), seq.Add(1))
}

func (c *Containers) device(int, string) (string, error) { return "eth0", nil }

// peerAddrs are the addresses probes go to for peers p of node id: the
// run network's gateway (the controller's side) for the users and for
// every packet.
func (c *Containers) peerAddrs(id int, p kernelfault.Peers) []string {
	if p.Client || p.All {
		return []string{c.subnet.Addr().Next().String()}
	}
	var out []string
	for _, m := range p.Nodes {
		if m != id && m >= 1 && m <= len(c.nodes) {
			out = append(out, c.Host(m))
		}
	}
	return out
}

// inNS runs a tool in namespace ns, with stdin.
func inNS(ns, stdin, bin string, args ...string) (string, error) {
	cmd := exec.Command("nsenter", append([]string{"--net=" + ns, "--", bin}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s in %s: %v: %s", bin, strings.Join(args, " "), ns, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Filter has the run's warden install an nft table in node id's
// namespace that drops (rejects, or loses a fraction of) the traffic to
// and from the peers, proven by probe datagrams counted by the rule.
func (c *Containers) Filter(l kernelfault.Label, id int, b kernelfault.Block) (kernelfault.Undo, error) {
	return filter(c, c.guard, l, id, b)
}

// Shape has the run's warden cap node id's outgoing traffic to the peers
// with a tbf under an htb class, proven by the probes passing through it.
func (c *Containers) Shape(l kernelfault.Label, id int, p kernelfault.Peers, bytesPerSec int64) (kernelfault.Undo, error) {
	return shape(c, c.guard, l, id, p, bytesPerSec)
}

func filter(s kernelSite, g *guard, l kernelfault.Label, id int, b kernelfault.Block) (kernelfault.Undo, error) {
	return freshNS(s, id, func() (string, kernelfault.Undo, error) {
		return inNode(s, g, l, id, "nft", b.Peers, func(targets []string) kernelfault.Fault {
			r := &kernelfault.Rule{Table: s.tableName(), All: b.Peers.All, Reject: b.Reject, Loss: b.Loss, Probe: targets}
			if !b.Peers.All {
				r.Addrs = targets
			}
			return kernelfault.Fault{Rule: r}
		})
	})
}

func shape(s kernelSite, g *guard, l kernelfault.Label, id int, p kernelfault.Peers, bytesPerSec int64) (kernelfault.Undo, error) {
	return freshNS(s, id, func() (string, kernelfault.Undo, error) {
		return inNode(s, g, l, id, "tc", p, func(targets []string) kernelfault.Fault {
			sh := &kernelfault.Shaping{All: p.All, Rate: bytesPerSec, Probe: targets}
			if !p.All {
				sh.Addrs = targets
			}
			return kernelfault.Fault{Shape: sh}
		})
	})
}

// inNode has the run's warden apply a kernel fault (the kernel fault
// engine's, as on netns) in node id's namespace toward peers p: make
// builds it for the peers' addresses (the probe targets), inNode names and
// aims it. It emits the engine's evidence under mechanism and returns the
// namespace it used (for freshNS) and the revert: through the warden, or
// by this process if the warden failed (a lapsed lease reverted the fault
// then, and the engine's revert says the rule is already gone).
func inNode(s kernelSite, g *guard, l kernelfault.Label, id int, mechanism string, p kernelfault.Peers, make func(targets []string) kernelfault.Fault) (string, kernelfault.Undo, error) {
	ns, holder, err := s.nsOf(id)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", l.Fault, err)
	}
	targets := s.peerAddrs(id, p)
	if len(targets) == 0 {
		return ns, nil, fmt.Errorf("%s: no peer of node %d to act on", l.Fault, id)
	}
	dev, err := s.device(id, ns)
	if err != nil {
		return ns, nil, fmt.Errorf("%s on node %d: %w", l.Fault, id, err)
	}
	f := make(targets)
	f.ID = fmt.Sprintf("%s#%d.n%d.%d", l.Fault, l.ID, id, seq.Add(1))
	f.Target = kernelfault.Target{Netns: ns, Iface: dev}
	undo, err := viaWarden(s, g, l, id, mechanism, "container "+holder+"'s namespace", f)
	return ns, undo, err
}

// eventSite emits a node's fault events.
type eventSite interface {
	kevent(l kernelfault.Label, node int, kind, detail string)
}

// viaWarden has the run's warden apply f, emits its evidence under
// mechanism (naming where it acts), and returns its revert.
func viaWarden(s eventSite, g *guard, l kernelfault.Label, id int, mechanism, where string, f kernelfault.Fault) (kernelfault.Undo, error) {
	t0 := time.Now()
	ev, err := g.Inject(f)
	if err != nil {
		return nil, fmt.Errorf("%s on node %d: %w", l.Fault, id, err)
	}
	s.kevent(l, id, "fault.effective", fmt.Sprintf("mechanism %s: in %s, by the warden: %s after %s", mechanism, where, ev, ms(time.Since(t0))))
	return onceUndo(func() error {
		t1 := time.Now()
		ev, err := g.Revert(f.ID)
		if err != nil {
			if _, derr := kernelfault.Revert(f); derr != nil {
				return fmt.Errorf("revert %s on node %d: %v; and reverting it directly failed too: %v", l.Fault, id, err, derr)
			}
			ev = fmt.Sprintf("reverted by the controller, the warden having failed (%v)", err)
		}
		s.kevent(l, id, "fault.reverted", fmt.Sprintf("mechanism %s: %s after %s", mechanism, ev, ms(time.Since(t1))))
		return nil
	}), nil
}

func joinUndo(err error, undo kernelfault.Undo) error {
	if uerr := undo(); uerr != nil {
		return fmt.Errorf("%w; and its revert failed: %v", err, uerr)
	}
	return err
}

func onceUndo(f func() error) kernelfault.Undo {
	var once sync.Once
	var err error
	return func() error { once.Do(func() { err = f() }); return err }
}

// nsWait bounds how long a kernel fault waits for a node's namespace: a
// container the engine (restart policy) or the operator is restarting has
// none, or gets a new one between the lookup and nsenter.
const nsWait = 10 * time.Second

// freshNS applies a kernel fault with apply, which reports the namespace
// it used. When that failed because the node was down or its namespace
// changed under it (a restart), it waits up to nsWait for the node to be
// up and applies it again in the new namespace, at most three times; an
// error that is not about the namespace is returned at once.
func freshNS(s kernelSite, id int, apply func() (string, kernelfault.Undo, error)) (kernelfault.Undo, error) {
	var err error
	for try := 1; try <= 3; try++ {
		var used string
		var undo kernelfault.Undo
		used, undo, err = apply()
		if err == nil {
			return undo, nil
		}
		if !nsChanged(s, id, used) {
			return nil, err
		}
	}
	return nil, err
}

// nsChanged waits (bounded by nsWait) for node id to have a namespace and
// reports whether it differs from used ("" when there was none).
func nsChanged(s kernelSite, id int, used string) bool {
	deadline := time.Now().Add(nsWait)
	for {
		ns, _, err := s.nsOf(id)
		if err == nil {
			return ns != used
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}
