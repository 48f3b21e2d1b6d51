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
// around it: one goroutine owns the Core, one dial loop per brick address
// keeps a TCP stream open (with a reader and a writer goroutine), and calls
// reach the owner over a channel.
package stub

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/systems/ssm/wire"
)

// Stub is a running stub. Its methods are safe for concurrent use.
type Stub struct {
	cfg     Config
	calls   chan call
	inbound chan inbound
	downs   chan *session
	done    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup

	mu   sync.Mutex
	live []uint16
}

type call struct {
	write  bool
	key    wire.Key
	value  []byte
	expiry time.Time
	cookie Cookie
	res    chan Result
}

type inbound struct {
	s   *session
	msg wire.Msg
}

// session is one TCP stream to one brick address.
type session struct {
	addr string
	nc   net.Conn
	out  chan []byte
	done chan struct{}
	once sync.Once
}

func (s *session) close() { s.once.Do(func() { close(s.done); _ = s.nc.Close() }) }

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
		cfg:     cfg,
		calls:   make(chan call),
		inbound: make(chan inbound, 1024),
		downs:   make(chan *session, len(cfg.Bricks)),
		done:    make(chan struct{}),
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
	r := s.do(ctx, call{write: true, key: key, value: value, expiry: expiry})
	return r.Cookie, r.Err
}

// Read returns the value the cookie names; the caller owns it. Errors:
// ErrStateExpired, ErrStateCorrupt, ErrStateLost, ErrUnavailable,
// ErrOverloaded, ErrTimeout, ErrBadRequest, ErrClosed, or ctx's error.
// (ErrCookieCorrupt comes from ParseCookie/DecodeCookie.)
func (s *Stub) Read(ctx context.Context, c Cookie) ([]byte, error) {
	r := s.do(ctx, call{cookie: c})
	return r.Value, r.Err
}

func (s *Stub) do(ctx context.Context, c call) Result {
	c.res = make(chan Result, 1)
	select {
	case s.calls <- c:
	case <-s.done:
		return Result{Err: ErrClosed}
	case <-ctx.Done():
		return Result{Err: ctx.Err()}
	}
	select {
	case r := <-c.res:
		return r
	case <-ctx.Done():
		return Result{Err: ctx.Err()}
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

// loop owns the Core.
func (s *Stub) loop() {
	core := NewCore(s.cfg)
	waiters := map[uint64]chan Result{}
	brickSession := map[uint16]*session{}
	sessionBrick := map[*session]uint16{}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()

	deliver := func(rs []Result) {
		for _, r := range rs {
			if w, ok := waiters[r.Op]; ok {
				w <- r
				delete(waiters, r.Op)
			}
		}
	}
	after := func() {
		for _, ev := range core.Events() {
			if s.cfg.OnEvent != nil {
				s.cfg.OnEvent(ev.Kind, ev.Detail)
			}
			s.mu.Lock()
			s.live = core.Live()
			s.mu.Unlock()
		}
	}
	receive := func(in inbound) {
		now := time.Now()
		if in.msg.Type == wire.TBeacon {
			if old := brickSession[in.msg.Brick]; old != nil && old != in.s {
				delete(sessionBrick, old)
			}
			brickSession[in.msg.Brick] = in.s
			sessionBrick[in.s] = in.msg.Brick
			core.Beacon(now, in.msg.Brick, in.msg.Incarnation)
			return
		}
		if id, ok := sessionBrick[in.s]; ok {
			deliver(core.Receive(now, id, &in.msg))
		}
	}
	// Liveness is checked on a fixed cadence and deadlines are absolute, so
	// a steady stream of calls cannot keep postponing either.
	check := s.cfg.BeaconTimeout / 4
	nextCheck := time.Now().Add(check)
	for {
		now := time.Now()
		deadline, pending := core.NextDeadline()
		if !now.Before(nextCheck) || pending && !now.Before(deadline) {
			// What the readers already took off the wire arrived before
			// this check: a front end that was not scheduled for a while
			// must not take every brick for dead because it has not yet
			// looked at the beacons waiting for it (seen at load average
			// 18: all three bricks down at once, then up a millisecond
			// later — in the passive style, three promotions).
		drain:
			for range cap(s.inbound) {
				select {
				case in := <-s.inbound:
					receive(in)
				default:
					break drain
				}
			}
			now = time.Now()
			deliver(core.Tick(now))
			after()
			if !now.Before(nextCheck) {
				nextCheck = now.Add(check)
			}
			deadline, pending = core.NextDeadline()
		}
		next := nextCheck
		if pending && deadline.Before(next) {
			next = deadline
		}
		timer.Reset(max(next.Sub(now), 0))
		select {
		case c := <-s.calls:
			now = time.Now()
			var id uint64
			var out []Send
			var err error
			if c.write {
				id, out, err = core.Write(now, c.key, c.value, c.expiry)
			} else {
				id, out, err = core.Read(now, c.cookie)
			}
			if err != nil {
				c.res <- Result{Err: err}
				break
			}
			waiters[id] = c.res
			for _, snd := range out {
				sess := brickSession[snd.Brick]
				sent := false
				if sess != nil {
					select {
					case sess.out <- snd.Frame:
						sent = true
					default:
					}
				}
				if !sent {
					deliver(core.SendFailed(now, id, snd.Brick))
				}
			}
		case in := <-s.inbound:
			receive(in)
		case sess := <-s.downs:
			if id, ok := sessionBrick[sess]; ok {
				delete(sessionBrick, sess)
				if brickSession[id] == sess {
					delete(brickSession, id)
					deliver(core.Down(time.Now(), id, "connection to "+sess.addr+" broke"))
				}
			}
		case <-timer.C: // the top of the loop ticks
		case <-s.done:
			for _, w := range waiters {
				w <- Result{Err: ErrClosed}
			}
			return
		}
		after()
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

func (s *Stub) serve(addr string, nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	sess := &session{addr: addr, nc: nc, out: make(chan []byte, s.cfg.OutboxLen), done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.writeLoop(sess) }()
	go func() { // close the stream when the stub closes
		select {
		case <-s.done:
		case <-sess.done:
		}
		sess.close()
	}()
	br := bufio.NewReaderSize(nc, 64<<10)
	for {
		frame, err := wire.ReadFrame(br, 2*s.cfg.MaxValue+1024)
		if errors.Is(err, wire.ErrMalformed) {
			continue // a short frame was read past; like an undecodable reply, it never came
		}
		if err != nil {
			break
		}
		m, err := wire.Decode(frame)
		if err != nil {
			continue // a reply we cannot read is a reply that never came: the op times out
		}
		select {
		case s.inbound <- inbound{s: sess, msg: m}:
		case <-s.done:
		}
	}
	sess.close()
	wg.Wait()
	select {
	case s.downs <- sess:
	case <-s.done:
	}
}

func (s *Stub) writeLoop(sess *session) {
	defer sess.close()
	w := bufio.NewWriterSize(sess.nc, 64<<10)
	if _, err := w.WriteString(wire.Preface); err != nil {
		return
	}
	if err := w.Flush(); err != nil {
		return
	}
	for {
		select {
		case f := <-sess.out:
			// A brick that stops reading must not hold the stream forever:
			// past the deadline the stream breaks and the brick counts as
			// down. It is set before the batch, whose frames larger than
			// the buffer are written through at once: a deadline left
			// from a batch long ago would fail them.
			_ = sess.nc.SetWriteDeadline(time.Now().Add(s.cfg.Timeout + time.Second))
			for {
				if _, err := w.Write(f); err != nil {
					return
				}
				if len(sess.out) == 0 {
					break
				}
				f = <-sess.out
			}
			if err := w.Flush(); err != nil {
				return
			}
		case <-sess.done:
			return
		}
	}
}
