package netns

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/kernelfault"
)

// queueSeq numbers the NFQUEUE queues of delay and link-flaky faults; a
// queue number is per namespace, so a process-wide sequence never reuses
// one in a node.
var queueSeq atomic.Int32

// Queue serves delay and link-flaky on this kernel without netem: the
// warden puts NFQUEUE rules in node id's namespace that send the node's
// packets to and from the peers into a userspace delayer it runs itself
// (kernelfault.Queueing), which holds or drops them, so each direction is
// delayed (a round trip by twice the delay, as on press's proxies). The
// warden proves the effect (the median TCP round trip from the node to
// the first peer grows by at least half the delay; for a flaky link, the
// queue saw the probe's packets) and, holding the delayer, stops it when
// the controller's lease lapses.
func (c *Namespaces) Queue(l kernelfault.Label, id int, p kernelfault.Peers, d kernelfault.Disturbance) (kernelfault.Undo, error) {
	n, err := c.node(id)
	if err != nil {
		return nil, err
	}
	targets := c.targets(id, p)
	if len(targets) == 0 {
		return nil, fmt.Errorf("%s on node %d: no peer to delay", l.Fault, id)
	}
	q := &kernelfault.Queueing{Num: uint16(100 + queueSeq.Add(1)%60000), All: p.All,
		Delay: d.Delay, Up: d.Up, Down: d.Down, Probe: targets}
	if !p.All {
		q.Addrs = targets
	}
	return c.apply(l, n, kernelfault.Fault{ID: faultID(l, id), Target: n.target(), Queue: q})
}

// rttFrom is the median time, over 5 tries from inside namespace ns (""
// for the controller's), for a TCP connection to target's discard port to
// be answered (kernelfault.RoundTrip).
func rttFrom(ns, target string) (time.Duration, error) {
	if ns == "" {
		return kernelfault.RoundTrip("", target)
	}
	return kernelfault.RoundTrip("/run/netns/"+ns, target)
}
