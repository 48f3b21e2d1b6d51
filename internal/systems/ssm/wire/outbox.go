package wire

import (
	"net"
	"sync"
	"time"
)

// Outbox is the bounded queue of frames waiting to go out on one stream,
// and the writer that sends them. Both ends of a stub↔brick stream use it:
// the stub for requests, the brick for replies and beacons.
//
// Send and SendMsg copy the frame into the queue's one buffer and never
// block: when Limit frames already wait, they refuse it at once, so a peer
// that stops reading can stall neither the stub's callers nor the brick's
// processing goroutine (Ling, Kiciman and Fox 2004, §7.3: the outbox is a
// backpressure point).
//
// Flush, called by whoever queued frames once done queueing, writes what is
// queued itself with one non-blocking system call when no one else is
// writing — the common case, which thus needs no other goroutine to wake
// up — and leaves what the socket would not take at once (a full socket
// buffer: the peer is slow) to Run, whose blocking writes have a deadline.
// Frames queued while a write is under way go out together in the next
// one: one system call for a burst, and no allocation per frame.
//
// An Outbox is safe for concurrent use. Run is called once, by the
// goroutine that owns the writing side of the connection; frames queued
// are written only after a Flush (or a CloseAfterFlush).
type Outbox struct {
	conn    net.Conn
	direct  *direct // used by the one Flush writing at a time
	limit   int
	timeout time.Duration

	mu      sync.Mutex
	buf     []byte // frames queued, back to back
	frames  int    // how many frames buf holds
	closing bool   // write what is queued, then close
	writing bool   // a Flush or Run is writing a batch; others only queue
	spare   []byte // the last batch's memory, for the next
	wake    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// maxSpare bounds the buffer an idle Outbox keeps for its next burst.
const maxSpare = 1 << 20

// NewOutbox returns an outbox for conn that queues at most limit frames
// (limit ≥ 1). Each write must finish within timeout of its start, or the
// stream breaks: a peer that stops reading must not hold it forever.
func NewOutbox(conn net.Conn, limit int, timeout time.Duration) *Outbox {
	return &Outbox{conn: conn, direct: newDirect(conn), limit: max(limit, 1), timeout: timeout,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// Send queues a copy of frame (one encoded frame, or the stream's
// preface). It reports false, queueing nothing, when Limit frames are
// waiting or the outbox is closed.
func (o *Outbox) Send(frame []byte) bool {
	o.mu.Lock()
	if !o.admit() {
		o.mu.Unlock()
		return false
	}
	o.buf = append(o.buf, frame...)
	return o.queued()
}

// SendMsg is Send of m encoded straight into the queue (Append), without a
// frame of its own; m's slices need to stay valid only during the call.
func (o *Outbox) SendMsg(m *Msg) bool {
	o.mu.Lock()
	if !o.admit() {
		o.mu.Unlock()
		return false
	}
	o.buf = Append(o.buf, m)
	return o.queued()
}

// admit is called with mu held.
func (o *Outbox) admit() bool {
	if o.frames >= o.limit || o.closing {
		return false
	}
	select {
	case <-o.done:
		return false
	default:
	}
	return true
}

// queued is called with mu held, after a frame was appended; it unlocks.
func (o *Outbox) queued() bool {
	o.frames++
	o.mu.Unlock()
	return true
}

func (o *Outbox) wakeRun() {
	select {
	case o.wake <- struct{}{}:
	default: // Run already has a wake-up coming
	}
}

// flushRounds bounds the batches one Flush writes: a caller writes the
// frames others queued meanwhile once or twice, then leaves them to Run.
const flushRounds = 3

// Flush writes what is queued without blocking (see Outbox). It returns at
// once when another Flush or Run is writing: that writer takes the frames.
func (o *Outbox) Flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for range flushRounds {
		if o.writing || len(o.buf) == 0 {
			return
		}
		select {
		case <-o.done:
			return
		default:
		}
		batch, frames := o.take()
		o.writing = true
		o.mu.Unlock()
		n, direct := o.direct.write(batch)
		o.mu.Lock()
		o.writing = false
		if !direct || n < len(batch) {
			// The rest goes first, then what was queued meanwhile; it
			// counts as frames whole, though part of one may be written.
			rest := copy(batch, batch[n:])
			o.buf = append(batch[:rest], o.buf...)
			o.frames += frames
			o.wakeRun()
			return
		}
		o.recycle(batch)
		if o.closing {
			o.wakeRun() // Run closes once the queue is empty
		}
	}
	if len(o.buf) > 0 {
		o.wakeRun()
	}
}

// take is called with mu held: it empties the queue into a batch.
func (o *Outbox) take() (batch []byte, frames int) {
	batch, frames = o.buf, o.frames
	o.buf, o.frames, o.spare = o.spare[:0], 0, nil
	return batch, frames
}

// recycle is called with mu held: a written batch's memory serves again.
func (o *Outbox) recycle(batch []byte) {
	if cap(batch) <= maxSpare && cap(batch) > cap(o.spare) {
		o.spare = batch[:0]
	}
}

// Len is the number of frames waiting.
func (o *Outbox) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.frames
}

// Run writes queued frames until the outbox is closed or a write fails, and
// then closes the outbox and its connection.
func (o *Outbox) Run() {
	defer o.Close()
	for {
		select {
		case <-o.wake:
		case <-o.done:
			return
		}
		for {
			o.mu.Lock()
			if o.writing { // a Flush: it wakes Run again if it leaves frames
				o.mu.Unlock()
				break
			}
			closing := o.closing
			if len(o.buf) == 0 {
				o.mu.Unlock()
				if closing {
					return
				}
				break
			}
			batch, _ := o.take()
			o.writing = true
			o.mu.Unlock()
			// The deadline is set for this batch: one left from a batch
			// long ago (a stream idle for minutes) would fail it.
			_ = o.conn.SetWriteDeadline(time.Now().Add(o.timeout))
			if _, err := o.conn.Write(batch); err != nil {
				return
			}
			// Cleared again, or Flush's direct writes would fail once it
			// passed.
			_ = o.conn.SetWriteDeadline(time.Time{})
			o.mu.Lock()
			o.writing = false
			o.recycle(batch)
			o.mu.Unlock()
		}
	}
}

// CloseAfterFlush refuses further frames and has Run write what is queued,
// then close.
func (o *Outbox) CloseAfterFlush() {
	o.mu.Lock()
	o.closing = true
	o.mu.Unlock()
	o.wakeRun()
}

// Close drops what is queued and closes the connection. Safe to call more
// than once and from any goroutine.
func (o *Outbox) Close() {
	o.once.Do(func() {
		close(o.done)
		_ = o.conn.Close()
	})
}

// Done is closed once the outbox is.
func (o *Outbox) Done() <-chan struct{} { return o.done }
