package press

import (
	"context"
	"time"
)

// MaxProcessTime bounds Config.ProcessTime: longer than any client's
// response timeout, so a larger value can only be a typing error.
const MaxProcessTime = 10 * time.Second

// cpus emulates the processors of one node for the per-request processing
// time (Config.ProcessTime), the overhead Broadwell (2004, §4.4) found PRESS
// so sensitive to: "each cluster node has only two CPUs", so a hundredth of
// a second per request at hundreds of requests per node per second leaves
// requests waiting for a processor.
//
// Processing holds one of the node's slots for the processing time while
// the goroutine waits; it does not spin. Spinning would measure the host,
// not the node: faultbench runs every node and the load generator on one
// machine (two cores here, shared by four nodes), so burnt CPU would give
// the four nodes two processors between them, slow the clients and the
// intra-cluster messages too, and vary with whatever else the host runs.
// A slot held for the processing time gives each node its own processors
// and the queueing of a CPU-bound server — at most cpus/time requests a
// second, the rest waiting in line — whatever the host. A plain sleep
// without slots would never saturate and so would not emulate processing.
type cpus struct {
	slots chan struct{}
	time  time.Duration
}

// newCPUs returns n processors spending d on each request; nil when d is 0
// (process is then free).
func newCPUs(n int, d time.Duration) *cpus {
	if d <= 0 {
		return nil
	}
	return &cpus{slots: make(chan struct{}, n), time: d}
}

// process waits for a free processor and holds it for the processing time.
// It is called from a request's goroutine and blocks; many may call it at
// once. It returns ctx.Err() early only when ctx ends: pass the node's
// context, not the request's, because a server busy computing a reply does
// not notice that the client has gone, and the work is spent either way.
func (c *cpus) process(ctx context.Context) error {
	if c == nil {
		return nil
	}
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-c.slots }()
	t := time.NewTimer(c.time)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
