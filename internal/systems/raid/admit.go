package raid

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// ErrBusy is returned by admission.enter when a request cannot start
// within its budget: every slot is taken and either the queue is full or
// the wait passed. The front end answers it with 503 and Retry-After.
var ErrBusy = errors.New("front end busy: too many requests in progress")

// admission bounds the volume requests the front end works on at once
// (slots) and how many wait for a slot (queue), and how long one waits.
//
// Why: the disks serve one command at a time (io_overhead), so beyond
// capacity an open-loop load used to pile up without bound — one goroutine
// and one socket per request, all waiting on the disks in FIFO order. A
// client gives up after its timeout but the node did not: it went on
// reading pages for clients long gone, so once the backlog exceeded what
// the disks serve within a client timeout every answer came too late, and
// the node stayed useless (and held tens of thousands of fds) long after
// the overload ended. With admission the backlog is at most
// slots + queue, a request that cannot start within wait is refused at
// once, and a waiting request whose client hangs up leaves the queue.
//
// enter and the returned release are safe for concurrent use; enter blocks
// at most wait. A zero admission (no slots) admits everything.
type admission struct {
	slots     chan struct{} // one token per request at work; nil: unlimited
	maxQueued int64
	wait      time.Duration

	queued  atomic.Int64 // requests waiting for a slot now
	refused atomic.Int64 // requests refused with ErrBusy, ever
}

func newAdmission(maxRequests, maxQueued int, wait time.Duration) *admission {
	a := &admission{maxQueued: int64(maxQueued), wait: wait}
	if maxRequests > 0 {
		a.slots = make(chan struct{}, maxRequests)
	}
	return a
}

// inFlight is the number of requests holding a slot.
func (a *admission) inFlight() int { return len(a.slots) }

// enter waits for a slot: at most a.wait, and only while fewer than
// maxQueued others wait. It returns the function that frees the slot
// (call it exactly once), or ErrBusy, or ctx's error when the client went
// away while waiting (nothing to answer then).
func (a *admission) enter(ctx context.Context) (release func(), err error) {
	if a.slots == nil {
		return func() {}, nil
	}
	release = func() { <-a.slots }
	select {
	case a.slots <- struct{}{}:
		return release, nil
	default:
	}
	if a.queued.Add(1) > a.maxQueued || a.wait <= 0 {
		a.queued.Add(-1)
		a.refused.Add(1)
		return nil, fmt.Errorf("%w (%d at work, queue of %d full)", ErrBusy, cap(a.slots), a.maxQueued)
	}
	defer a.queued.Add(-1)
	t := time.NewTimer(a.wait)
	defer t.Stop()
	select {
	case a.slots <- struct{}{}:
		return release, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		a.refused.Add(1)
		return nil, fmt.Errorf("%w (no slot of %d free within %v)", ErrBusy, cap(a.slots), a.wait)
	}
}
