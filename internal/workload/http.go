package workload

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/record"
)

// HTTPDriver sends one HTTP/1.1 GET an attempt. It is written on net rather
// than net/http.Transport because the outcome classes need to know exactly
// which phase failed (connect, send, status line, body), the deadlines run
// from the scheduled time, and a Transport's own retries and pooling would
// blur both.
//
// Without keep-alive every attempt dials a new connection and asks the server
// to close it. With keep-alive idle connections are kept per address and
// reused; a reused connection that turns out dead before any response byte
// (the server closed it while idle) is retried once on another connection,
// as browsers do. With MaxConns set, an attempt that finds every allowed
// connection busy waits for one, and the wait counts against its connect
// timeout (a browser queues the same way).
type HTTPDriver struct {
	cfg DriverConfig

	mu     sync.Mutex
	pools  map[string]*connPool // keep-alive only, by address
	closed bool

	watch connWatch // cuts every connection's I/O when the run's context ends

	seq       atomic.Uint64 // templated requests: attempts so far (reqtmpl's {{seq}})
	tlsByHost sync.Map      // host:port -> *tls.Config with that server name

	// netHTTPHeads makes every answer go through net/http.ReadResponse,
	// as before peekHead: the reference its tests compare against.
	netHTTPHeads bool
}

// maxIdlePerAddr bounds the idle keep-alive connections kept for one
// address when MaxConns does not.
const maxIdlePerAddr = 1024

// maxVerifyBody bounds the body buffered for Verify; a longer body is a data_error.
const maxVerifyBody = 64 << 20

// NewHTTPDriver returns an HTTP driver; see DriverConfig.
func NewHTTPDriver(cfg DriverConfig) *HTTPDriver {
	return &HTTPDriver{cfg: cfg, pools: make(map[string]*connPool)}
}

// connPool holds one address's keep-alive connections.
type connPool struct {
	idle  chan *httpConn // idle connections, FIFO
	slots chan struct{}  // one token per open connection; nil when MaxConns is 0
}

type httpConn struct {
	net.Conn
	br    *bufio.Reader
	bytes int64     // bytes read from the connection, to tell "no answer" from "broken answer"
	pool  *connPool // non-nil if the connection holds one of pool.slots
	// watched is the context whose end cuts this connection's exchanges
	// short (watch); nil until the first exchange. The connection is on
	// list while list is not nil, else unwatch undoes its own watch.
	watched    context.Context
	list       *connWatch
	prev, next *httpConn // neighbours on list
	unwatch    func() bool
}

// watch makes the end of ctx cut the connection's exchange short (a
// deadline in the past wakes its blocked I/O), through list when list
// watches ctx. A kept-alive connection carries many attempts of one
// generator, all under the same context, so the watch is set once for the
// connection's life, not once an attempt. Its firing while the connection
// is idle is harmless, since the next exchange sets its own deadline and
// then checks ctx itself.
func (c *httpConn) watch(ctx context.Context, list *connWatch) {
	if ctx == c.watched {
		return
	}
	c.stopWatching()
	c.watched = ctx
	if list.add(ctx, c) {
		c.list = list
		return
	}
	c.unwatch = context.AfterFunc(ctx, c.cut)
}

// stopWatching undoes watch.
func (c *httpConn) stopWatching() {
	if c.list != nil {
		c.list.remove(c)
		c.list = nil
	}
	if c.unwatch != nil {
		c.unwatch()
		c.unwatch = nil
	}
	c.watched = nil
}

// cut wakes the connection's blocked I/O at once.
func (c *httpConn) cut() { c.Conn.SetDeadline(aLongTimeAgo) }

func (c *httpConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.bytes += int64(n)
	return n, err
}

// readBufSize is each connection's read buffer: large enough that a page
// of a few tens of KiB arrives in one or two reads, and a long response
// head still fits for peekHead.
const readBufSize = 32 << 10

var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufSize) }}

// newHTTPConn wraps a connection that holds no pool slot.
func newHTTPConn(c net.Conn) *httpConn { return newPooledConn(c, nil) }

// newPooledConn wraps a connection; slotOf, if not nil, is the pool whose
// slot the connection holds until it is closed.
func newPooledConn(c net.Conn, slotOf *connPool) *httpConn {
	hc := &httpConn{Conn: c, pool: slotOf}
	hc.br = readerPool.Get().(*bufio.Reader)
	hc.br.Reset(hc)
	return hc
}

func (c *httpConn) close() {
	c.stopWatching()
	c.Conn.Close()
	c.br.Reset(nil)
	readerPool.Put(c.br)
	c.br = nil
	if c.pool != nil {
		<-c.pool.slots
	}
}

// aLongTimeAgo is a deadline in the past: setting it wakes blocked I/O at once.
var aLongTimeAgo = time.Unix(1, 0)

// Do implements Driver.
func (d *HTTPDriver) Do(ctx context.Context, a Attempt) (r Result) {
	// sent is when the first try got its connection (or began to dial):
	// a wait for a MaxConns slot before it is the generator's send lag.
	var sent time.Time
	defer func() {
		if r.Refused == record.NotRefused {
			r.Sent = sent
		}
	}()
	connectBy := a.Scheduled.Add(d.cfg.ConnectTimeout)
	aborted := Result{Outcome: record.ConnAbort, End: connectBy}
	var pool *connPool
	if d.cfg.Keepalive {
		pool = d.pool(a.Addr)
	}
	for try := 0; ; try++ {
		var conn *httpConn
		var slotted bool
		if pool != nil {
			var ok bool
			if pool.slots != nil && try == 0 && !time.Now().Before(connectBy) {
				// It reached the pool after its connect timeout
				// (it waited that long in its lane, attemptWorkers,
				// or the generator was that late): refused, as
				// acquire refuses a wait that long.
				ok = false
			} else {
				conn, slotted, ok = pool.acquire(ctx, connectBy)
			}
			if !ok {
				// No connection of the client's MaxConns came free in
				// time: the generator's own limit, not the service's.
				r := aborted
				r.Refused = record.RefusedNoConn
				return r
			}
		}
		if sent.IsZero() {
			sent = time.Now()
		}
		reused := conn != nil
		if conn == nil {
			if !time.Now().Before(connectBy) {
				// The user gave up before we could even try.
				pool.release(slotted)
				return aborted
			}
			c, err := dialTCP(ctx, a.Addr, connectBy)
			if err != nil {
				pool.release(slotted)
				if isTimeout(err) {
					return aborted
				}
				return Result{Outcome: record.ConnError, End: time.Now()}
			}
			if d.cfg.TLS != nil {
				var failed *Result
				if c, failed = d.handshake(ctx, c, a, connectBy); failed != nil {
					pool.release(slotted)
					return *failed
				}
			}
			var slotOf *connPool
			if slotted {
				slotOf = pool
			}
			conn = newPooledConn(c, slotOf)
		}
		r, keep, retry := d.exchange(ctx, conn, a, time.Now().Add(d.cfg.ResponseTimeout))
		if retry && reused && try == 0 {
			conn.close()
			continue
		}
		if keep {
			d.keepIdle(pool, conn)
		} else {
			conn.close()
		}
		return r
	}
}

// connLimit says the generator may run this driver's attempts in lanes of
// MaxConns workers a target (attemptWorkers): with keep-alive and a cap,
// no more attempts to one address can hold a connection at once.
func (d *HTTPDriver) connLimit() int {
	if d.cfg.Keepalive {
		return d.cfg.MaxConns
	}
	return 0
}

// acquire returns an idle connection, or nil with leave to dial (slotted
// says a slot was taken for it), or ok=false if none came free by connectBy
// or ctx ended.
func (p *connPool) acquire(ctx context.Context, connectBy time.Time) (c *httpConn, slotted, ok bool) {
	select {
	case c := <-p.idle:
		return c, false, true
	default:
	}
	if p.slots == nil {
		return nil, false, true
	}
	select {
	case c := <-p.idle:
		return c, false, true
	case p.slots <- struct{}{}:
		return nil, true, true
	default:
	}
	wait := time.Until(connectBy)
	if wait <= 0 {
		return nil, false, false
	}
	t := acquireTimers.Get().(*time.Timer)
	t.Reset(wait)
	defer func() { t.Stop(); acquireTimers.Put(t) }()
	select {
	case c := <-p.idle:
		return c, false, true
	case p.slots <- struct{}{}:
		return nil, true, true
	case <-t.C:
	case <-ctx.Done():
	}
	return nil, false, false
}

// acquireTimers are the stopped timers of acquire's waits. The generator's
// lanes keep its own attempts from waiting here (a lane's worker finds its
// connection free); callers that run more attempts than MaxConns at once
// (the closed loop, a driver used directly) still wait, and near
// saturation nearly every such attempt does: a timer each was a quarter
// of the run's allocations. Since Go 1.23 a stopped timer's channel holds
// nothing stale, so a reused one is as good as new.
var acquireTimers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// release gives back a slot taken for a connection that was never made.
func (p *connPool) release(slotted bool) {
	if slotted {
		<-p.slots
	}
}

func (d *HTTPDriver) pool(addr string) *connPool {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.pools[addr]
	if p == nil {
		if n := d.cfg.MaxConns; n > 0 {
			p = &connPool{idle: make(chan *httpConn, n), slots: make(chan struct{}, n)}
		} else {
			p = &connPool{idle: make(chan *httpConn, maxIdlePerAddr)}
		}
		d.pools[addr] = p
	}
	return p
}

// exchange sends the request on conn and reads the answer by deadline.
// keep says conn may carry another request; retry says nothing at all came
// back, so a reused connection was probably stale.
func (d *HTTPDriver) exchange(ctx context.Context, conn *httpConn, a Attempt, deadline time.Time) (r Result, keep, retry bool) {
	conn.SetDeadline(deadline)
	conn.watch(ctx, &d.watch)
	if ctx.Err() != nil { // ended while the connection was idle, or just now
		conn.cut()
	}

	timedOut := Result{Outcome: record.Timeout, End: deadline}
	var payload []byte
	var st *reqState
	if d.cfg.Requests != nil {
		st = d.prepare(a, d.seq.Add(1))
		defer st.release()
		payload = st.req
		defer func() { r.Target = st.target }()
	} else {
		buf := requestBufs.Get().(*[]byte)
		defer requestBufs.Put(buf)
		*buf = d.appendRequest((*buf)[:0], a)
		payload = *buf
	}
	if _, err := conn.Write(payload); err != nil {
		if isTimeout(err) {
			return timedOut, false, false
		}
		return Result{Outcome: record.ConnError, End: time.Now()}, false, true
	}
	conn.bytes = 0
	if st == nil && !d.netHTTPHeads {
		if h, n, err := peekHead(conn.br); err != nil {
			return headFailed(err, conn, timedOut)
		} else if n > 0 && (d.cfg.Verify == nil || h.length >= 0 && h.length <= maxVerifyBody) {
			conn.br.Discard(n)
			return d.plainBody(conn, a, h, deadline)
		}
	}
	resp, err := http.ReadResponse(conn.br, nil)
	if err != nil {
		return headFailed(err, conn, timedOut)
	}
	r.Status = resp.StatusCode
	if st != nil {
		return d.checkResponse(st, a, resp, deadline)
	}
	ok2xx := resp.StatusCode >= 200 && resp.StatusCode < 300
	var body *bytes.Buffer
	if ok2xx && d.cfg.Verify != nil {
		body = bodyPool.Get().(*bytes.Buffer)
		defer func() { body.Reset(); bodyPool.Put(body) }()
		r.Bytes, err = body.ReadFrom(io.LimitReader(resp.Body, maxVerifyBody+1))
	} else {
		r.Bytes, err = io.Copy(io.Discard, resp.Body)
	}
	r.End = time.Now()
	keep = d.cfg.Keepalive && err == nil && !resp.Close
	r.Outcome = d.plainOutcome(a, resp.StatusCode, err, body, r.Bytes)
	if r.Outcome == record.Timeout {
		r.End = deadline
	}
	return r, keep, false
}

// headFailed classifies an answer whose head could not be read.
func headFailed(err error, conn *httpConn, timedOut Result) (r Result, keep, retry bool) {
	switch {
	case isTimeout(err):
		return timedOut, false, false
	case conn.bytes == 0:
		// Closed or reset before any byte of a response.
		return Result{Outcome: record.ConnError, End: time.Now()}, false, true
	default:
		// Something came back, but not an HTTP response.
		return Result{Outcome: record.DataError, End: time.Now()}, false, false
	}
}

// plainBody reads the body of a plain GET's answer whose head peekHead
// read, without allocating: discarded, or kept for Verify when the head
// gave its length (peekHead's caller sends every other case to net/http).
func (d *HTTPDriver) plainBody(conn *httpConn, a Attempt, h plainHead, deadline time.Time) (r Result, keep, retry bool) {
	r.Status = h.status
	ok2xx := h.status >= 200 && h.status < 300
	var body *bytes.Buffer
	var err error
	switch {
	case ok2xx && d.cfg.Verify != nil:
		body = bodyPool.Get().(*bytes.Buffer)
		defer func() { body.Reset(); bodyPool.Put(body) }()
		body.Grow(int(h.length))
		buf := body.AvailableBuffer()[:h.length]
		var n int
		n, err = io.ReadFull(conn.br, buf)
		body.Write(buf[:n])
		r.Bytes = int64(n)
	case h.length >= 0:
		var n int
		n, err = conn.br.Discard(int(h.length))
		r.Bytes = int64(n)
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // as net/http's body says of a short one
		}
	default:
		r.Bytes, err = conn.br.WriteTo(io.Discard) // until the server closes
	}
	r.End = time.Now()
	keep = d.cfg.Keepalive && err == nil && !h.close
	r.Outcome = d.plainOutcome(a, h.status, err, body, r.Bytes)
	if r.Outcome == record.Timeout {
		r.End = deadline
	}
	return r, keep, false
}

// plainOutcome classifies a plain GET's answer: its status, the error that
// ended its body (nil when whole), and the body kept for Verify (nil when
// not verified).
func (d *HTTPDriver) plainOutcome(a Attempt, status int, err error, body *bytes.Buffer, n int64) record.Outcome {
	switch {
	case status < 200 || status >= 300:
		// The status is the service's answer, whatever became of the body.
		return record.HTTPError
	case err != nil && isTimeout(err):
		return record.Timeout
	case err != nil:
		return record.DataError // truncated or badly framed body
	case body != nil && (n > maxVerifyBody || !d.cfg.Verify(a.Target, body.Bytes())):
		return record.DataError
	}
	return record.OK
}

var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// requestBufs hold the GETs being written, so that building one allocates nothing.
var requestBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// appendRequest appends the GET for a to b.
func (d *HTTPDriver) appendRequest(b []byte, a Attempt) []byte {
	b = append(b, "GET "...)
	b = append(b, a.Target...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, a.Host...)
	b = append(b, "\r\nUser-Agent: faultbench\r\n"...)
	if !d.cfg.Keepalive {
		b = append(b, "Connection: close\r\n"...)
	}
	return append(b, "\r\n"...)
}

// getIdle returns an idle keep-alive connection to addr, or nil. It never
// waits (the session drivers use it; they bound connections by users).
func (d *HTTPDriver) getIdle(addr string) *httpConn {
	select {
	case c := <-d.pool(addr).idle:
		return c
	default:
		return nil
	}
}

// putIdle keeps c, a connection to addr made without a slot, for reuse.
func (d *HTTPDriver) putIdle(addr string, c *httpConn) { d.keepIdle(d.pool(addr), c) }

// keepIdle keeps conn for reuse. With MaxConns the idle channel has room
// for every open connection, so only the uncapped pool ever overflows.
func (d *HTTPDriver) keepIdle(p *connPool, c *httpConn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.closed {
		select {
		case p.idle <- c:
			return
		default:
		}
	}
	c.close()
}

// Close closes the idle connections; attempts still running close theirs
// when they end, and the watch on the run's context ends with the last.
// Safe to call twice.
func (d *HTTPDriver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	for _, p := range d.pools {
		for drained := false; !drained; {
			select {
			case c := <-p.idle:
				c.close()
			default:
				drained = true
			}
		}
	}
	d.watch.close()
	return nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
