// Package brick is an SSM brick (Ling, Kiciman and Fox 2004, §3): a diskless store of session
// state in memory, in expiry-generation hash tables.
//
// One TCP port serves everything. A connection that starts with
// wire.Preface is a stub stream: its reader goroutine decodes frames and puts
// requests into the shared inbox; one processing goroutine dequeues them,
// drops those whose budget has run out (when DiscardExpired), applies them to
// the Store and queues the reply on the stream's writer. Every other
// connection is HTTP: GET /health, GET /stats (the Pinpoint statistics),
// GET and POST /control (faults, with a token).
//
// The brick beacons (wire.TBeacon with its id and incarnation) on every stub
// stream every BeaconInterval and at once when a stream opens; stubs take a
// brick for dead when its beacons stop (or its stream breaks).
//
// Bad input never stops the brick: a malformed frame, a key of the wrong
// length or an oversized value is answered with a wire.TError and the stream
// goes on; only a frame above twice the value limit (which cannot be skipped
// safely) closes that one stream.
package brick

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/systems/ssm/wire"
)

// Brick is one running brick. Its methods are safe for concurrent use.
type Brick struct {
	cfg Config

	// Owned by the processing goroutine.
	store   *Store
	rng     *rand.Rand
	ship    *Shipper           // passive style only
	peerOut map[uint16]*stream // passive: the stream to each peer brick, by the id its beacons gave
	// unflushed are the streams with replies queued but not yet flushed.
	unflushed []*stream

	inbox   chan request
	ctl     chan func()
	slow    atomic.Int64  // per-message delay, ns
	slowGen atomic.Uint64 // bumped by every slow/clear, so a timed revert only undoes its own

	reads, writes, dropped, flips atomic.Uint64
	elements, memory              atomic.Int64

	mu      sync.Mutex
	streams map[*stream]struct{}
	links   map[*stream]struct{} // passive: streams this brick opened to its peers
	ln      net.Listener
	httpLn  *chanListener
	srv     *http.Server

	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

type request struct {
	s        *stream
	msg      wire.Msg
	deadline time.Time
	frame    *[]byte // msg's memory, back to frames once handled
}

// frames recycles the memory stream readers read requests into: a request
// is done with it once handled (the store and the shipper keep copies), so
// a brick reading 8 KB writes does not allocate 8 KB a request for garbage.
var frames = sync.Pool{New: func() any { return new([]byte) }}

// release gives r's frame back to the pool.
func (r *request) release() {
	if r.frame != nil {
		frames.Put(r.frame)
		r.frame = nil
	}
}

// New validates cfg and builds a brick; Serve starts it.
func New(cfg Config) (*Brick, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Incarnation == 0 {
		cfg.Incarnation = uint64(time.Now().UnixNano())
	}
	b := &Brick{
		cfg:     cfg,
		store:   NewStore(cfg.Generation.Milliseconds()),
		rng:     rand.New(rand.NewSource(cfg.Seed*7919 + int64(cfg.ID))),
		inbox:   make(chan request, cfg.InboxLen),
		ctl:     make(chan func()),
		streams: map[*stream]struct{}{},
		links:   map[*stream]struct{}{},
		peerOut: map[uint16]*stream{},
		done:    make(chan struct{}),
	}
	if cfg.Passive {
		b.ship = NewShipper(cfg.Degree, cfg.PeerTimeout)
	}
	b.slow.Store(int64(cfg.Slow))
	b.httpLn = newChanListener()
	b.srv = &http.Server{Handler: b.handler(), ReadHeaderTimeout: 5 * time.Second}
	return b, nil
}

// Start listens on addr and serves in the background; Close stops it.
func Start(cfg Config, addr string) (*Brick, error) {
	b, err := New(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ssm brick %d: %w", cfg.ID, err)
	}
	b.mu.Lock()
	b.ln = ln
	b.mu.Unlock()
	go func() { _ = b.Serve(ln) }()
	return b, nil
}

// Addr is the listening address (after Serve or Start).
func (b *Brick) Addr() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ln == nil {
		return ""
	}
	return b.ln.Addr().String()
}

// Serve accepts on ln until Close, which makes it return nil.
func (b *Brick) Serve(ln net.Listener) error {
	b.mu.Lock()
	select {
	case <-b.done:
		b.mu.Unlock()
		_ = ln.Close()
		return nil
	default:
	}
	b.ln = ln
	b.httpLn.addr = ln.Addr() // before the HTTP server starts and reads it
	b.wg.Add(3)
	if b.ship != nil {
		b.wg.Add(len(b.cfg.Replicas))
		for _, addr := range b.cfg.Replicas {
			go func() { defer b.wg.Done(); b.peerLoop(addr) }()
		}
	}
	b.mu.Unlock()
	go func() { defer b.wg.Done(); b.process() }()
	go func() { defer b.wg.Done(); b.beacon() }()
	go func() { defer b.wg.Done(); _ = b.srv.Serve(b.httpLn) }()
	for {
		conn, err := ln.Accept()
		if err != nil {
			select {
			case <-b.done:
				return nil
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			b.Close()
			return err
		}
		b.wg.Add(1)
		go func() { defer b.wg.Done(); b.sniff(conn) }()
	}
}

// Close stops the brick: the listener, every stream and every goroutine; the
// memory is gone, as in a crash. Safe to call twice.
func (b *Brick) Close() error {
	b.closeOnce.Do(func() {
		close(b.done)
		b.mu.Lock()
		if b.ln != nil {
			_ = b.ln.Close()
		}
		for s := range b.streams {
			s.close()
		}
		for s := range b.links {
			s.close()
		}
		b.mu.Unlock()
		_ = b.srv.Close()
		b.httpLn.Close()
	})
	b.wg.Wait()
	return nil
}

// sniff routes a connection by its first bytes: stub stream or HTTP.
func (b *Brick) sniff(conn net.Conn) {
	br := bufio.NewReaderSize(conn, 64<<10)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	head, err := br.Peek(len(wire.Preface))
	if err != nil {
		_ = conn.Close()
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	if string(head) != wire.Preface {
		b.httpLn.push(&peekedConn{Conn: conn, r: br})
		return
	}
	_, _ = br.Discard(len(wire.Preface))
	s := newStream(conn)
	b.mu.Lock()
	select {
	case <-b.done:
		b.mu.Unlock()
		_ = conn.Close()
		return
	default:
	}
	b.streams[s] = struct{}{}
	b.mu.Unlock()
	b.event("system.ssm.stream", fmt.Sprintf("brick %d: stub stream from %s", b.cfg.ID, conn.RemoteAddr()))
	b.wg.Add(1)
	go func() { defer b.wg.Done(); s.out.Run() }()
	s.send(b.beaconFrame())
	if b.readLoop(s, br) {
		select { // let the writer send the error frame
		case <-s.out.Done():
		case <-time.After(time.Second):
		}
	}
	s.close()
	b.mu.Lock()
	delete(b.streams, s)
	b.mu.Unlock()
}

// readLoop reads requests until the stream ends; it reports true when it
// queued a final error frame that the writer should flush before closing.
func (b *Brick) readLoop(s *stream, br *bufio.Reader) (flush bool) {
	maxFrame := 2*b.cfg.MaxValue + 1024
	transit := newTransit()
	for {
		buf := frames.Get().(*[]byte)
		frame, err := wire.ReadFrameInto(br, maxFrame, *buf)
		if cap(frame) > cap(*buf) {
			*buf = frame[:0]
		}
		if err != nil {
			frames.Put(buf)
		}
		if errors.Is(err, wire.ErrMalformed) { // read past: the stream is still in step
			s.sendMsg(&wire.Msg{Type: wire.TError, Status: wire.BadRequest, Text: err.Error()})
			continue
		}
		if err != nil {
			if errors.Is(err, wire.ErrTooLarge) {
				s.out.SendMsg(&wire.Msg{Type: wire.TError, Status: wire.TooLarge, Text: err.Error()})
				s.out.CloseAfterFlush()
				return true
			}
			return false
		}
		arrived := time.Now()
		r := request{s: s, frame: buf}
		var derr error
		r.msg, derr = wire.Decode(frame)
		if derr != nil {
			s.sendMsg(&wire.Msg{Type: wire.TError, ID: r.msg.ID, Status: wire.BadRequest, Text: derr.Error()})
			r.release()
			continue
		}
		if st, why := b.check(&r.msg); st != wire.OK {
			s.sendMsg(&wire.Msg{Type: wire.TError, ID: r.msg.ID, Status: st, Text: why})
			r.release()
			continue
		}
		// The stub's wait began when it sent: time in transit beyond the
		// stream's usual counts against the budget.
		r.deadline = arrived.Add(time.Duration(r.msg.Budget)*time.Microsecond - transit.late(arrived, r.msg.Sent))
		select {
		case b.inbox <- r:
		case <-b.done:
			return false
		case <-s.out.Done():
			return false
		}
	}
}

// check validates a decoded frame as a request.
func (b *Brick) check(m *wire.Msg) (wire.Status, string) {
	switch m.Type {
	case wire.TWrite, wire.TRead, wire.TBackup:
	default:
		return wire.BadRequest, fmt.Sprintf("a brick accepts write, read and backup, not %v", m.Type)
	}
	if len(m.Key) != wire.KeyLen {
		return wire.BadKey, fmt.Sprintf("key of %d bytes, want %d", len(m.Key), wire.KeyLen)
	}
	if len(m.Value) > b.cfg.MaxValue {
		return wire.TooLarge, fmt.Sprintf("value of %d bytes above the limit of %d", len(m.Value), b.cfg.MaxValue)
	}
	return wire.OK, ""
}

// process is the brick's one processing goroutine: it owns the store.
func (b *Brick) process() {
	gc := time.NewTicker(max(b.cfg.Generation/2, 10*time.Millisecond))
	defer gc.Stop()
	var flush <-chan time.Time // passive: ship to the backups
	if b.ship != nil {
		t := time.NewTicker(b.cfg.BackupInterval)
		defer t.Stop()
		flush = t.C
	}
	handled, first := 0, time.Time{} // requests handled since the last flush, and when the first was
	for {
		select {
		case r := <-b.inbox:
			b.handle(r)
			r.release()
			// Replies go out when the inbox is empty, or under a steady
			// backlog every replyBatch requests or replyDelay, whichever
			// comes first (a slow brick must not sit on replies until
			// their stubs gave up): a burst of requests costs one write
			// per stream, not one per reply.
			if handled == 0 {
				first = time.Now()
			}
			if handled++; len(b.inbox) == 0 || handled >= replyBatch || time.Since(first) >= replyDelay {
				b.flushReplies()
				handled = 0
			}
		case f := <-b.ctl:
			f()
		case now := <-flush:
			for _, o := range b.ship.Flush(now) {
				if s := b.peerOut[o.Peer]; s != nil {
					s.send(o.Frame)
				}
			}
		case now := <-gc.C:
			b.store.Expire(now.UnixMilli())
			b.gauges()
		case <-b.done:
			return
		}
	}
}

func (b *Brick) gauges() {
	b.elements.Store(int64(b.store.Len()))
	b.memory.Store(b.store.Bytes())
}

func (b *Brick) handle(r request) {
	// A backup copy has no stub waiting for it: it is never late.
	if b.cfg.DiscardExpired && r.msg.Type != wire.TBackup && time.Now().After(r.deadline) {
		b.dropped.Add(1)
		return
	}
	if d := time.Duration(b.slow.Load()); d > 0 {
		time.Sleep(d)
	}
	switch r.msg.Type {
	case wire.TWrite:
		b.writes.Add(1)
	case wire.TRead:
		b.reads.Add(1)
	}
	reply, answer := Apply(b.store, b.ship, time.Now().UnixMilli(), &r.msg)
	if r.msg.Type == wire.TRead && reply.Status == wire.Corrupt && b.cfg.ExitOnCorrupt {
		b.event("system.ssm.corrupt", fmt.Sprintf("brick %d: checksum error on read; exiting", b.cfg.ID))
		b.crash("checksum error on read")
		return
	}
	b.gauges()
	if answer && r.s.out.SendMsg(&reply) { // encoded straight into the outbox: a read's 8 KB is copied once
		if !slices.Contains(b.unflushed, r.s) {
			b.unflushed = append(b.unflushed, r.s)
		}
	}
}

// replyBatch and replyDelay bound the replies the processing goroutine
// queues, and for how long, before it flushes them.
const (
	replyBatch = 64
	replyDelay = 200 * time.Microsecond
)

// flushReplies writes the replies queued since the last flush; the writes
// never block (wire.Outbox.Flush).
func (b *Brick) flushReplies() {
	for i, s := range b.unflushed {
		s.out.Flush()
		b.unflushed[i] = nil
	}
	b.unflushed = b.unflushed[:0]
}

func (b *Brick) beaconFrame() []byte {
	return wire.Append(nil, &wire.Msg{Type: wire.TBeacon, Brick: b.cfg.ID, Incarnation: b.cfg.Incarnation})
}

func (b *Brick) beacon() {
	t := time.NewTicker(b.cfg.BeaconInterval)
	defer t.Stop()
	frame := b.beaconFrame()
	for {
		select {
		case <-t.C:
			b.mu.Lock()
			for s := range b.streams {
				s.send(frame)
			}
			b.mu.Unlock()
		case <-b.done:
			return
		}
	}
}

func (b *Brick) crash(reason string) {
	if b.cfg.OnCrash != nil {
		b.cfg.OnCrash(reason)
		return
	}
	go b.Close()
}

func (b *Brick) event(kind, detail string) {
	if b.cfg.OnEvent != nil {
		b.cfg.OnEvent(kind, detail)
	}
}

// Stats is what GET /stats answers: the gauges now and the counters since
// the brick started (Pinpoint turns counters into per-second rates).
type Stats struct {
	Brick       uint16 `json:"brick"`
	Incarnation uint64 `json:"incarnation"`
	UnixMillis  int64  `json:"unix_ms"`
	NumElements int64  `json:"num_elements"`
	MemoryUsed  int64  `json:"memory_used"`
	InboxSize   int    `json:"inbox_size"`
	NumDropped  uint64 `json:"num_dropped_total"`
	NumReads    uint64 `json:"num_reads_total"`
	NumWrites   uint64 `json:"num_writes_total"`
	Streams     int    `json:"streams"`
}

// Stats returns the current statistics.
func (b *Brick) Stats() Stats {
	b.mu.Lock()
	streams := len(b.streams)
	b.mu.Unlock()
	return Stats{
		Brick: b.cfg.ID, Incarnation: b.cfg.Incarnation, UnixMillis: time.Now().UnixMilli(),
		NumElements: b.elements.Load(), MemoryUsed: b.memory.Load(), InboxSize: len(b.inbox),
		NumDropped: b.dropped.Load(), NumReads: b.reads.Load(), NumWrites: b.writes.Load(), Streams: streams,
	}
}

// do runs f on the processing goroutine and waits for it.
func (b *Brick) do(ctx context.Context, f func()) error {
	ran := make(chan struct{})
	select {
	case b.ctl <- func() { f(); close(ran) }:
	case <-b.done:
		return errors.New("brick closed")
	case <-ctx.Done():
		return ctx.Err()
	}
	<-ran
	return nil
}

// stream is one stub connection.
type stream struct {
	conn net.Conn
	// out queues replies and beacons; when it is full they are dropped
	// (the stub times the request out), so a stub that stops reading
	// cannot stall the processing goroutine (Ling, Kiciman and Fox 2004,
	// §7.3: the outbox is a backpressure point).
	out *wire.Outbox
}

// streamOutbox is the frames one stream queues; streamWriteTimeout breaks
// a stream whose stub stopped reading.
const (
	streamOutbox       = 4096
	streamWriteTimeout = 5 * time.Second
)

func newStream(conn net.Conn) *stream {
	return &stream{conn: conn, out: wire.NewOutbox(conn, streamOutbox, streamWriteTimeout)}
}

// send queues a frame and flushes it, without blocking; a full outbox
// drops it.
func (s *stream) send(frame []byte) {
	if s.out.Send(frame) {
		s.out.Flush()
	}
}

// sendMsg is send of m, encoded straight into the outbox.
func (s *stream) sendMsg(m *wire.Msg) {
	if s.out.SendMsg(m) {
		s.out.Flush()
	}
}

func (s *stream) close() { s.out.Close() }

// peekedConn replays the bytes sniff peeked.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// chanListener hands sniffed HTTP connections to http.Server. Its address
// is the brick's own listener's, the one those connections came in on.
type chanListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newChanListener() *chanListener {
	return &chanListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) push(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		_ = c.Close()
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error { l.once.Do(func() { close(l.done) }); return nil }

func (l *chanListener) Addr() net.Addr { return l.addr }
