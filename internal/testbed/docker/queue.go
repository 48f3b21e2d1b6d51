package docker

import (
	"sync/atomic"

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
	return freshNS(s, id, func() (string, kernelfault.Undo, error) {
		return inNode(s, g, l, id, "nfqueue", p, func(targets []string) kernelfault.Fault {
			q := &kernelfault.Queueing{Num: uint16(100 + queueSeq.Add(1)%60000), All: p.All,
				Delay: d.Delay, Up: d.Up, Down: d.Down, Probe: targets}
			if !p.All {
				q.Addrs = targets
			}
			return kernelfault.Fault{Queue: q}
		})
	})
}
