package workload

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/systems/ssm/app"
)

// The session drivers speak the session HTTP protocol of docs/ssm.md
// (POST/GET /session/{user}, the cookie in X-Session-Cookie) to SSM front
// ends, applying the client rules of app.User, so a stale, lost or corrupt
// session is a data_error and never ok.
//
//	ssm      Ling, Kiciman and Fox (2004) §5's hyperactive users: each user alternates a write
//	         (POST) and a read (GET) of its session, forever
//	session  users walking a flow of Flow requests (alternating POST and GET
//	         with their cookie, as §6's application users step through their
//	         mail); at the end of the flow the session ends and the user
//	         starts a new one under a new name
//
// Each client owns a fixed pool of Users (DriverConfig.Users, default
// DefaultUsers); a user makes one request at a time. The load is open-loop,
// so an arrival never waits for a user: an arrival that finds every user of
// its client busy is refused at once (Result.Refused no_user, target
// "no-user"): the generator ran out of users, which says the service was
// slow but is not the service's answer; give more users. Every other
// record's target is the operation, "write" or "read".
//
// Outcomes: the connection phase as for the http driver (conn_error,
// conn_abort, timeout); a 200 is ok only when app.User's Judge accepts its
// body; a 410 or a 200 that fails verification is data_error; any other
// status is http_error.
type sessionDriver struct {
	cfg  DriverConfig
	free chan *sessionUser
	flow int // requests per session; 0 = endless

	mu     sync.Mutex
	idle   map[string][]*sessionConn // keep-alive only; at most one per user
	closed bool
}

func init() {
	drivers["ssm"] = func(c DriverConfig) Driver { return newSessionDriver(c, 0) }
	drivers["session"] = func(c DriverConfig) Driver {
		flow := c.Flow
		if flow <= 0 {
			flow = DefaultFlow
		}
		return newSessionDriver(c, flow)
	}
}

// sessionConn is a connection with its reader; bytes counts what was read
// since the request went out, to tell "no answer" from "broken answer".
type sessionConn struct {
	net.Conn
	br    *bufio.Reader
	bytes int64
}

func (c *sessionConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.bytes += int64(n)
	return n, err
}

func newSessionConn(c net.Conn) *sessionConn {
	sc := &sessionConn{Conn: c}
	sc.br = bufio.NewReaderSize(sc, 4096)
	return sc
}

// sessionUser is one emulated user: app.User plus where it is in its flow.
type sessionUser struct {
	app.User
	base    string // name without the session number
	session int    // sessions started (session driver)
	steps   int    // requests made in the current session
}

// DefaultUsers is the pool of users of one client when DriverConfig.Users
// is 0: enough for rate × latency at the paper's loads (450/s at ~5 ms
// needs ~3 per client) with room for slow spells, and small enough that
// every user's 8 KB session times W copies stays a few MB in the bricks.
const DefaultUsers = 64

// DefaultFlow is the length of a session driver's session: §6's users
// listened to 20 e-mails.
const DefaultFlow = 20

// Operation names in the target column.
const (
	TargetWrite  = "write"
	TargetRead   = "read"
	TargetNoUser = "no-user"
)

// maxSessionBody bounds a response body read: the largest session (256 KiB)
// plus its header line.
const maxSessionBody = 257 << 10

func newSessionDriver(cfg DriverConfig, flow int) *sessionDriver {
	n := cfg.Users
	if n <= 0 {
		n = DefaultUsers
	}
	d := &sessionDriver{cfg: cfg, free: make(chan *sessionUser, n), flow: flow, idle: map[string][]*sessionConn{}}
	for i := range n {
		u := &sessionUser{base: fmt.Sprintf("c%d-u%d", cfg.Client, i)}
		u.Name = u.name()
		d.free <- u
	}
	return d
}

func (u *sessionUser) name() string {
	if u.session == 0 {
		return u.base
	}
	return u.base + "-s" + strconv.Itoa(u.session)
}

// Close closes idle connections; attempts still running close theirs when
// they end. Safe twice.
func (d *sessionDriver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	for addr, list := range d.idle {
		for _, c := range list {
			c.Close()
		}
		delete(d.idle, addr)
	}
	return nil
}

func (d *sessionDriver) getIdle(addr string) *sessionConn {
	if !d.cfg.Keepalive {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	list := d.idle[addr]
	if len(list) == 0 {
		return nil
	}
	c := list[len(list)-1]
	d.idle[addr] = list[:len(list)-1]
	return c
}

// putIdle keeps c for a later attempt. There are never more connections
// than users (each user holds at most one), so the pool is bounded.
func (d *sessionDriver) putIdle(addr string, c *sessionConn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		c.Close()
		return
	}
	d.idle[addr] = append(d.idle[addr], c)
}

// Do implements Driver.
func (d *sessionDriver) Do(ctx context.Context, a Attempt) Result {
	var u *sessionUser
	select {
	case u = <-d.free:
	default:
		return Result{Outcome: record.ConnError, End: time.Now(), Target: TargetNoUser, Refused: record.RefusedNoUser}
	}
	defer func() { d.free <- u }()

	method, path, cookie := u.Next()
	target := TargetWrite
	if method == http.MethodGet {
		target = TargetRead
	}
	r, resp, body, sent := d.send(ctx, a, method, path, cookie)
	r.Target = target
	switch {
	case resp == nil && sent:
		// No answer to a request the server may have acted on.
		u.Abandon(method)
	case resp == nil:
		// Never reached the server (refused, not connected in time):
		// nothing changed, and the user keeps its session.
	default:
		switch u.Judge(method, resp.StatusCode, resp.Header, body) {
		case app.VerdictOK:
			r.Outcome = record.OK
		case app.VerdictDataError:
			r.Outcome = record.DataError
		default:
			r.Outcome = record.HTTPError
		}
	}
	u.steps++
	if d.flow > 0 && u.steps >= d.flow {
		// The session is over; the user comes back with a new one.
		u.session++
		u.steps = 0
		u.User = app.User{Name: u.name()}
	}
	return r
}

// send makes one request. resp is nil when no complete response arrived
// (r.Outcome then says why; sent is false when no connection was made, so
// the server cannot have seen the request); otherwise body holds the whole
// body and the caller judges it.
func (d *sessionDriver) send(ctx context.Context, a Attempt, method, path, cookie string) (r Result, resp *http.Response, body []byte, sent bool) {
	connectBy := a.Scheduled.Add(d.cfg.ConnectTimeout)
	conn := d.getIdle(a.Addr)
	reused := conn != nil
	for {
		if conn == nil {
			if !time.Now().Before(connectBy) {
				return Result{Outcome: record.ConnAbort, End: connectBy}, nil, nil, false
			}
			c, err := dialTCP(ctx, a.Addr, connectBy)
			if err != nil {
				if isTimeout(err) {
					return Result{Outcome: record.ConnAbort, End: connectBy}, nil, nil, false
				}
				return Result{Outcome: record.ConnError, End: time.Now()}, nil, nil, false
			}
			conn = newSessionConn(c)
		}
		r, resp, body, keep, retry := d.exchange(ctx, conn, a, method, path, cookie, time.Now().Add(d.cfg.ResponseTimeout))
		if retry && reused {
			// A kept connection the server had closed: nothing was read,
			// so the request was not served; try once on a new one.
			conn.Close()
			conn, reused = nil, false
			continue
		}
		if keep {
			d.putIdle(a.Addr, conn)
		} else {
			conn.Close()
		}
		return r, resp, body, true
	}
}

func (d *sessionDriver) exchange(ctx context.Context, conn *sessionConn, a Attempt, method, path, cookie string, deadline time.Time) (r Result, resp *http.Response, body []byte, keep, retry bool) {
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(aLongTimeAgo) })
	defer stop()

	timedOut := Result{Outcome: record.Timeout, End: deadline}
	if _, err := conn.Write(d.request(a, method, path, cookie)); err != nil {
		if isTimeout(err) {
			return timedOut, nil, nil, false, false
		}
		return Result{Outcome: record.ConnError, End: time.Now()}, nil, nil, false, true
	}
	conn.bytes = 0
	resp, err := http.ReadResponse(conn.br, nil)
	if err != nil {
		switch {
		case isTimeout(err):
			return timedOut, nil, nil, false, false
		case conn.bytes == 0:
			return Result{Outcome: record.ConnError, End: time.Now()}, nil, nil, false, true
		default:
			// Something came back, but not an HTTP response.
			return Result{Outcome: record.DataError, End: time.Now()}, nil, nil, false, false
		}
	}
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxSessionBody+1))
	r = Result{Status: resp.StatusCode, Bytes: int64(len(body)), End: time.Now()}
	switch {
	case err != nil && isTimeout(err):
		return Result{Outcome: record.Timeout, End: deadline, Status: resp.StatusCode}, nil, nil, false, false
	case err != nil || len(body) > maxSessionBody:
		// A truncated or oversized answer cannot be a session; the user
		// cannot know what was stored.
		r.Outcome = record.DataError
		return r, nil, nil, false, false
	}
	keep = d.cfg.Keepalive && !resp.Close
	return r, resp, body, keep, false
}

func (d *sessionDriver) request(a Attempt, method, path, cookie string) []byte {
	b := make([]byte, 0, 160+len(path)+len(a.Host)+len(cookie))
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, a.Host...)
	b = append(b, "\r\nUser-Agent: faultbench\r\nContent-Length: 0\r\n"...)
	if cookie != "" {
		b = append(b, app.HeaderCookie+": "...)
		b = append(b, cookie...)
		b = append(b, "\r\n"...)
	}
	if !d.cfg.Keepalive {
		b = append(b, "Connection: close\r\n"...)
	}
	return append(b, "\r\n"...)
}
