package local

import (
	"slices"
	"sync"

	"github.com/faultbench/faultbench/internal/testbed"
)

// exitHook holds the cluster's ExitObserver, if any, and the nodes that
// exited while there was none. Its lock is held while the observer is
// called, so the observer hears of each node's exits and starts in order.
type exitHook struct {
	mu      sync.Mutex
	o       testbed.ExitObserver
	pending map[int]string // node → cause: down since an exit nobody observed
}

// WatchExits makes o hear of every unplanned exit from now on (nil: no
// one), starting with the nodes that exited before and are still down (a
// node that died between the cluster's start and the run's). The operator
// finds it with fault.As, through any rig wrapper.
func (c *Processes) WatchExits(o testbed.ExitObserver) {
	h := &c.exits
	h.mu.Lock()
	defer h.mu.Unlock()
	h.o = o
	if o == nil {
		return
	}
	nodes := make([]int, 0, len(h.pending))
	for n := range h.pending {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	for _, n := range nodes {
		o.Exited(n, h.pending[n])
	}
	h.pending = nil
}

// unplannedExit and readyAgain are nodeProc's hooks: called with n.mu held.
func (n *nodeProc) unplannedExit(cause string) {
	h := &n.c.exits
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.o != nil {
		h.o.Exited(n.id, cause)
		return
	}
	if h.pending == nil {
		h.pending = map[int]string{}
	}
	h.pending[n.id] = cause
}

func (n *nodeProc) readyAgain() {
	h := &n.c.exits
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.o != nil {
		h.o.Ready(n.id)
		return
	}
	delete(h.pending, n.id)
}
