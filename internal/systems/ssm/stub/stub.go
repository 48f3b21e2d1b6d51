// Package stub is SSM's client library (Ling, Kiciman and Fox 2004, §3): an application server
// links it to read and write session state on the bricks.
//
// Write sends the value to W random live bricks and returns a Cookie once WQ
// acknowledged within Timeout; Read sends to R of the bricks the cookie names
// and returns the first answer whose checksum matches the cookie. The stub
// keeps no session state: only the bricks' liveness (from their beacons),
// a sending window per brick, and the operations in flight. Overload is
// refused at once (ErrOverloaded), never queued.
//
// The protocol is Core, a deterministic state machine; Stub is the thin layer
// around it, the Core behind one mutex. A caller starts its operation itself
// and queues the frames on the bricks' outboxes (wire.Outbox); one dial loop
// per brick address keeps a TCP stream open, whose writer goroutine sends
// each outbox's frames in bursts and whose reader goroutine hands each reply
// to the Core and the finished operation straight to its caller. A ticker
// goroutine times operations out and watches the beacons.
package stub

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/systems/ssm/wire"
)

// Stub is a running stub. Its methods are safe for concurrent use.
type Stub struct {
	cfg  Config
	done chan struct{}
	once sync.Once
	wg   sync.WaitGroup
	// kick wakes the ticker early: an operation's deadline is earlier than
	// the tick it is waiting for, or there are events to hand out.
	kick chan struct{}

	// mu guards everything below. A caller starts its operation under it,
	// and a stream's reader hands the operation its result under it: no
	// goroutine sits between them.
	mu           sync.Mutex
	core         *Core
	waiters      map[uint64]chan Result
	brickSession map[uint16]*session
	sessionBrick map[*session]uint16
	live         []uint16
	events       []Event   // for the ticker to hand to OnEvent
	tickAt       time.Time // when the ticker is due next
	closed       bool
}

// session is one TCP stream to one brick address.
type session struct {
	addr string
	// out queues this stream's requests: the stub's backpressure point
	// per brick (Config.OutboxLen frames; a full outbox fails the send).
	out *wire.Outbox
}

// results recycles the channels callers wait on.
var results = sync.Pool{New: func() any { return make(chan Result, 1) }}

// New validates cfg, starts dialling every brick address and returns at
// once; bricks become usable as their first beacons arrive (WaitLive).
func New(cfg Config) (*Stub, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.Bricks) == 0 {
		return nil, fmt.Errorf("%w: no brick addresses", ErrConfig)
	}
	for _, a := range cfg.Bricks {
		if err := checkAddr(a); err != nil {
			return nil, err
		}
	}
	s := &Stub{
		cfg:          cfg,
		done:         make(chan struct{}),
		kick:         make(chan struct{}, 1),
		core:         NewCore(cfg),
		waiters:      map[uint64]chan Result{},
		brickSession: map[uint16]*session{},
		sessionBrick: map[*session]uint16{},
	}
	s.wg.Add(1 + len(cfg.Bricks))
	go func() { defer s.wg.Done(); s.loop() }()
	for _, addr := range cfg.Bricks {
		go func() { defer s.wg.Done(); s.dialLoop(addr) }()
	}
	return s, nil
}

// checkAddr accepts only host:port with a loopback or private IP literal
// (or localhost): a stub talks to the cluster's own bricks — on 127.0.0.x,
// or in the namespaces and containers faultbench created — never to the
// outside world.
func checkAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: brick address %q: %v", ErrConfig, addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !(ip.IsLoopback() || ip.IsPrivate()) {
		return fmt.Errorf("%w: brick address %q must be a loopback or private IP literal", ErrConfig, addr)
	}
	return nil
}

// Close stops every goroutine and connection; operations in flight return
// ErrClosed. Safe to call twice.
func (s *Stub) Close() error {
	s.once.Do(func() { close(s.done) })
	s.wg.Wait()
	return nil
}

// Write stores value under key until expiry and returns the cookie a later
// Read needs. value is encoded before Write returns and not kept. Errors:
// ErrBadRequest, ErrUnavailable, ErrOverloaded, ErrTimeout, ErrClosed, or
// ctx's error.
func (s *Stub) Write(ctx context.Context, key wire.Key, value []byte, expiry time.Time) (Cookie, error) {
	r := s.do(ctx, func(now time.Time) (uint64, []Send, error) { return s.core.Write(now, key, value, expiry) })
	return r.Cookie, r.Err
}

// Read returns the value the cookie names; the caller owns it. Errors:
// ErrStateExpired, ErrStateCorrupt, ErrStateLost, ErrUnavailable,
// ErrOverloaded, ErrTimeout, ErrBadRequest, ErrClosed, or ctx's error.
// (ErrCookieCorrupt comes from ParseCookie/DecodeCookie.)
func (s *Stub) Read(ctx context.Context, c Cookie) ([]byte, error) {
	r := s.do(ctx, func(now time.Time) (uint64, []Send, error) { return s.core.Read(now, c) })
	return r.Value, r.Err
}

// do starts an operation on the caller's goroutine — the Core decides and
// the frames go into the bricks' outboxes — and waits for the stream reader
// that settles it, or for the ticker that times it out.
func (s *Stub) do(ctx context.Context, start func(now time.Time) (uint64, []Send, error)) Result {
	if err := ctx.Err(); err != nil {
		return Result{Err: err}
	}
	res := results.Get().(chan Result)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		results.Put(res)
		return Result{Err: ErrClosed}
	}
	now := time.Now()
	id, out, err := start(now)
	if err != nil {
		s.afterLocked()
		s.mu.Unlock()
		results.Put(res)
		return Result{Err: err}
	}
	s.waiters[id] = res
	var queued [8]*session // W bricks at most; 8 covers every usual W on the stack
	flush := queued[:0]
	for _, snd := range out {
		sess := s.brickSession[snd.Brick]
		if sess == nil || !sess.out.Send(snd.Frame) {
			s.deliverLocked(s.core.SendFailed(now, id, snd.Brick))
			continue
		}
		flush = append(flush, sess)
	}
	if len(out) > 0 {
		s.core.Recycle(out[0].Frame) // every outbox took its copy
	}
	if deadline, ok := s.core.NextDeadline(); ok && deadline.Before(s.tickAt) {
		s.tickAt = deadline
		s.wakeTicker()
	}
	s.afterLocked()
	s.mu.Unlock()
	// The caller writes its own frames (and any queued meanwhile) unless
	// a write to that brick is under way; outside the lock, so that other
	// callers and the readers never wait for a system call. It first lets
	// every goroutine already runnable have its turn: callers a stream
	// reader has just woken queue their next operations, and the first
	// Flush after them sends the lot to each brick in one write(2). A
	// write on loopback costs about as much as the receiving brick's
	// wake-up, whatever it carries, so this halved the CPU time of an
	// 8 KB write at 16 callers (docs/benchmarks.md, SSM). With nothing
	// else runnable, Gosched returns at once.
	if len(flush) > 0 {
		runtime.Gosched()
	}
	for _, sess := range flush {
		sess.out.Flush()
	}
	select {
	case r := <-res:
		results.Put(res)
		return r
	case <-ctx.Done():
		s.mu.Lock()
		delete(s.waiters, id)
		s.mu.Unlock()
		return Result{Err: ctx.Err()} // res may still receive: not recycled
	}
}

// Live returns the ids of the bricks the stub takes for alive.
func (s *Stub) Live() []uint16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint16(nil), s.live...)
}

// WaitLive waits until at least n bricks are live or ctx ends.
func (s *Stub) WaitLive(ctx context.Context, n int) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for len(s.Live()) < n {
		select {
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("ssm stub: %d of %d bricks live: %w", len(s.Live()), n, ctx.Err())
		case <-s.done:
			return ErrClosed
		}
	}
	return nil
}

func (s *Stub) wakeTicker() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// deliverLocked hands finished operations to their callers. A read's
// value is copied: it aliases the reader's buffer.
func (s *Stub) deliverLocked(rs []Result) {
	for _, r := range rs {
		if w, ok := s.waiters[r.Op]; ok {
			delete(s.waiters, r.Op)
			if r.Value != nil {
				r.Value = bytes.Clone(r.Value)
			}
			w <- r
		}
	}
}

// afterLocked takes the Core's membership events for the ticker to report.
func (s *Stub) afterLocked() {
	ev := s.core.Events()
	if len(ev) == 0 {
		return
	}
	s.live = s.core.Live()
	s.events = append(s.events, ev...)
	s.wakeTicker()
}

// receive handles one frame from sess's brick; it runs on sess's reader.
func (s *Stub) receive(sess *session, m *wire.Msg) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if m.Type == wire.TBeacon {
		if old := s.brickSession[m.Brick]; old != nil && old != sess {
			delete(s.sessionBrick, old)
		}
		s.brickSession[m.Brick] = sess
		s.sessionBrick[sess] = m.Brick
		s.core.Beacon(now, m.Brick, m.Incarnation)
	} else if id, ok := s.sessionBrick[sess]; ok {
		s.deliverLocked(s.core.Receive(now, id, m))
	}
	s.afterLocked()
}

// down fails what was outstanding on a stream that broke.
func (s *Stub) down(sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.sessionBrick[sess]; ok {
		delete(s.sessionBrick, sess)
		if s.brickSession[id] == sess {
			delete(s.brickSession, id)
			s.deliverLocked(s.core.Down(time.Now(), id, "connection to "+sess.addr+" broke"))
		}
	}
	s.afterLocked()
}

// loop is the ticker: it times operations out at their deadlines, checks
// the bricks' beacons on a fixed cadence, and calls OnEvent (on this
// goroutine alone, so events arrive in order). Deadlines are absolute and
// the cadence fixed, so a steady stream of calls cannot postpone either.
func (s *Stub) loop() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	check := s.cfg.BeaconTimeout / 4
	nextCheck := time.Now().Add(check)
	for {
		s.mu.Lock()
		now := time.Now()
		deadline, pending := s.core.NextDeadline()
		if !now.Before(nextCheck) || pending && !now.Before(deadline) {
			s.deliverLocked(s.core.Tick(now))
			s.afterLocked()
			if !now.Before(nextCheck) {
				nextCheck = now.Add(check)
			}
			deadline, pending = s.core.NextDeadline()
		}
		next := nextCheck
		if pending && deadline.Before(next) {
			next = deadline
		}
		s.tickAt = next
		events := s.events
		s.events = nil
		s.mu.Unlock()
		if s.cfg.OnEvent != nil {
			for _, ev := range events {
				s.cfg.OnEvent(ev.Kind, ev.Detail)
			}
		}
		timer.Reset(max(next.Sub(now), 0))
		select {
		case <-timer.C:
		case <-s.kick:
		case <-s.done:
			s.mu.Lock()
			s.closed = true
			for id, w := range s.waiters {
				delete(s.waiters, id)
				w <- Result{Err: ErrClosed}
			}
			s.mu.Unlock()
			return
		}
	}
}

// dialLoop keeps one stream open to addr, redialling with backoff.
func (s *Stub) dialLoop(addr string) {
	backoff := 20 * time.Millisecond
	for {
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			backoff = 20 * time.Millisecond
			s.serve(addr, nc)
		}
		select {
		case <-s.done:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// serve runs one stream: a writer goroutine drains its outbox, and this
// goroutine reads the brick's frames and settles operations with them.
func (s *Stub) serve(addr string, nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	// A brick that stops reading must not hold the stream forever: past
	// the write deadline the stream breaks and the brick counts as down.
	sess := &session{addr: addr, out: wire.NewOutbox(nc, s.cfg.OutboxLen, s.cfg.Timeout+time.Second)}
	sess.out.Send([]byte(wire.Preface))
	sess.out.Flush()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); sess.out.Run() }()
	go func() { // close the stream when the stub closes
		defer wg.Done()
		select {
		case <-s.done:
		case <-sess.out.Done():
		}
		sess.out.Close()
	}()
	br := bufio.NewReaderSize(nc, 64<<10)
	var buf []byte // the frame being handled; reused, since receive copies what it keeps
	for {
		frame, err := wire.ReadFrameInto(br, 2*s.cfg.MaxValue+1024, buf)
		if errors.Is(err, wire.ErrMalformed) {
			continue // a short frame was read past; like an undecodable reply, it never came
		}
		if err != nil {
			break
		}
		buf = frame
		m, err := wire.Decode(frame)
		if err != nil {
			continue // a reply we cannot read is a reply that never came: the op times out
		}
		s.receive(sess, &m)
	}
	sess.out.Close()
	wg.Wait()
	s.down(sess)
}
