package docker

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/kernelfault"
)

// Packet delay and flaky links (delay, link-flaky) of a container: the
// kernel fault engine's NFQUEUE delayer (kernelfault.Queueing, the same
// as the netns backend's), which the run's warden starts and holds in the
// container's network namespace (/proc/PID/ns/net, entered with setns and
// nsenter). The warden journals it, so a lapsed lease or the controller's
// death reverts it, and the delayer's rules fail open (--queue-bypass) if
// the warden itself dies: packets then pass undelayed.

var queueSeq atomic.Uint32

// Queue delays node id's packets to and from peers p, or drops those of
// the down periods of a flaky cycle, and proves it (kernelfault's proof:
// the round trip to a peer grows, or the queue sees probe datagrams).
func (c *Containers) Queue(l kernelfault.Label, id int, p kernelfault.Peers, d kernelfault.Disturbance) (kernelfault.Undo, error) {
	return queue(c, c.guard, l, id, p, d)
}

// Queue is Containers.Queue for an attached container.
func (a *Attached) Queue(l kernelfault.Label, id int, p kernelfault.Peers, d kernelfault.Disturbance) (kernelfault.Undo, error) {
	return queue(a, a.guard, l, id, p, d)
}

func queue(s kernelSite, g *guard, l kernelfault.Label, id int, p kernelfault.Peers, d kernelfault.Disturbance) (kernelfault.Undo, error) {
	return freshNS(s, id, func() (string, kernelfault.Undo, error) { return queueOnce(s, g, l, id, p, d) })
}

func queueOnce(s kernelSite, g *guard, l kernelfault.Label, id int, p kernelfault.Peers, d kernelfault.Disturbance) (string, kernelfault.Undo, error) {
	ns, holder, err := s.nsOf(id)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", l.Fault, err)
	}
	targets := s.peerAddrs(id, p)
	if len(targets) == 0 {
		return ns, nil, fmt.Errorf("%s: no peer of node %d to delay", l.Fault, id)
	}
	dev, err := s.device(id, ns)
	if err != nil {
		return ns, nil, fmt.Errorf("%s on node %d: %w", l.Fault, id, err)
	}
	q := &kernelfault.Queueing{Num: uint16(100 + queueSeq.Add(1)%60000), All: p.All,
		Delay: d.Delay, Up: d.Up, Down: d.Down, Probe: targets}
	if !p.All {
		q.Addrs = targets
	}
	f := kernelfault.Fault{ID: fmt.Sprintf("%s#%d.n%d.%d", l.Fault, l.ID, id, seq.Add(1)),
		Target: kernelfault.Target{Netns: ns, Iface: dev}, Queue: q}
	t0 := time.Now()
	ev, err := g.Inject(f)
	if err != nil {
		return ns, nil, fmt.Errorf("%s on node %d: %w", l.Fault, id, err)
	}
	s.kevent(l, id, "fault.effective", fmt.Sprintf("mechanism nfqueue: in container %s's namespace, by the warden: %s after %s", holder, ev, ms(time.Since(t0))))
	return ns, onceUndo(func() error {
		t1 := time.Now()
		ev, err := g.Revert(f.ID)
		if err != nil {
			// The warden did not answer or its lease lapsed (it reverted
			// the fault then): remove what the kernel still holds here.
			if _, derr := kernelfault.Revert(f); derr != nil {
				return fmt.Errorf("revert %s on node %d: %v; and reverting it directly failed too: %v", l.Fault, id, err, derr)
			}
			ev = fmt.Sprintf("reverted by the controller, the warden having failed (%v)", err)
		}
		s.kevent(l, id, "fault.reverted", fmt.Sprintf("mechanism nfqueue: %s after %s", ev, ms(time.Since(t1))))
		return nil
	}), nil
}
