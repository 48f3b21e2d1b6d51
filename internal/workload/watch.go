package workload

import (
	"context"
	"sync"
)

// connWatch cuts the blocked I/O of every connection on it when the
// context it watches ends. One context.AfterFunc serves all of a driver's
// connections under that context: one a connection cost two allocations,
// an entry in the context's map of children and four locks for every
// request made on a new connection. A connection is on the list from its
// first exchange until it is closed.
//
// The list watches one context at a time, the run's; a connection whose
// exchange runs under another context while the list holds connections
// of the first is watched on its own (httpConn.watch).
type connWatch struct {
	mu   sync.Mutex
	ctx  context.Context // the context watched; nil before the first add
	stop func() bool     // undoes the AfterFunc on ctx
	head *httpConn       // the connections on the list, linked by prev and next
	// closed is set when the driver closes: the AfterFunc is undone once
	// the last connection leaves the list, so a closed driver leaves
	// nothing registered with a context that lives on.
	closed bool
}

// add puts c on the list if the list watches ctx, or holds no
// connection and so can watch ctx from now on; it reports whether it did.
func (w *connWatch) add(ctx context.Context, c *httpConn) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ctx != w.ctx {
		if w.head != nil {
			return false
		}
		w.release()
		w.ctx, w.stop = ctx, context.AfterFunc(ctx, func() { w.fire(ctx) })
	}
	c.prev, c.next = nil, w.head
	if w.head != nil {
		w.head.prev = c
	}
	w.head = c
	return true
}

// remove takes c, which add put on the list, off it.
func (w *connWatch) remove(c *httpConn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		w.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	}
	c.prev, c.next = nil, nil
	if w.closed && w.head == nil {
		w.release()
	}
}

// close undoes the watch on the context once no connection is on the
// list; connections of attempts still running stay watched until they
// close.
func (w *connWatch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.head == nil {
		w.release()
	}
}

// release undoes the AfterFunc; w.mu is held.
func (w *connWatch) release() {
	if w.stop != nil {
		w.stop()
	}
	w.ctx, w.stop = nil, nil
}

// fire cuts every connection on the list when ctx, the context that
// ended, is still the one it watches: add may have moved it to another
// while fire waited for the lock. A connection added after fire ran finds
// the context ended itself (exchange checks ctx after watch).
func (w *connWatch) fire(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ctx != w.ctx {
		return
	}
	for c := w.head; c != nil; c = c.next {
		c.cut()
	}
}
