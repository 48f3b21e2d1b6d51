package workload

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/record"
)

// Short timeouts keep the hang cases quick; nothing asserts on wall time.
const (
	testConnect  = 300 * time.Millisecond
	testResponse = 300 * time.Millisecond
)

// server accepts on loopback and hands every connection to handle.
type server struct {
	ln       net.Listener
	accepted atomic.Int64
}

func newServer(t *testing.T, handle func(net.Conn)) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			go handle(c)
		}
	}()
	return s
}

func (s *server) addr() string { return s.ln.Addr().String() }

// respond reads requests off c and answers each with reply(path); it keeps
// the connection open unless the request asked to close it.
func respond(reply func(path string) string) func(net.Conn) {
	return func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if _, err := c.Write([]byte(reply(req.URL.Path))); err != nil || req.Close {
				return
			}
		}
	}
}

func okReply(body string) string {
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

func pageBody(path string) string { return "page " + path }

func verifyPage(target string, body []byte) bool { return string(body) == pageBody(target) }

func do(t *testing.T, d Driver, addr, target string) Result {
	t.Helper()
	return d.Do(context.Background(), Attempt{Scheduled: time.Now(), Addr: addr, Host: addr, Target: target})
}

func testDriver(keepalive bool) *HTTPDriver {
	return NewHTTPDriver(DriverConfig{ConnectTimeout: testConnect, ResponseTimeout: testResponse, Keepalive: keepalive, Verify: verifyPage})
}

func TestOutcomes(t *testing.T) {
	closedPort := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}
	cases := []struct {
		name   string
		addr   func(t *testing.T) string
		want   record.Outcome
		status int
	}{
		{"ok", func(t *testing.T) string {
			return newServer(t, respond(func(p string) string { return okReply(pageBody(p)) })).addr()
		}, record.OK, 200},
		{"refused", func(t *testing.T) string { return closedPort() }, record.ConnError, 0},
		{"reset after accept", func(t *testing.T) string {
			return newServer(t, func(c net.Conn) {
				c.(*net.TCPConn).SetLinger(0)
				c.Close()
			}).addr()
		}, record.ConnError, 0},
		{"reset after reading the request", func(t *testing.T) string {
			return newServer(t, func(c net.Conn) {
				http.ReadRequest(bufio.NewReader(c))
				c.(*net.TCPConn).SetLinger(0)
				c.Close()
			}).addr()
		}, record.ConnError, 0},
		{"closed without answer", func(t *testing.T) string {
			return newServer(t, func(c net.Conn) {
				http.ReadRequest(bufio.NewReader(c))
				c.Close()
			}).addr()
		}, record.ConnError, 0},
		{"hang", func(t *testing.T) string {
			return newServer(t, func(c net.Conn) {
				defer c.Close()
				buf := make([]byte, 1024)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
				}
			}).addr()
		}, record.Timeout, 0},
		{"hang mid-body", func(t *testing.T) string {
			return newServer(t, respondThenHang("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc")).addr()
		}, record.Timeout, 200},
		{"503", func(t *testing.T) string {
			return newServer(t, respond(func(string) string {
				return "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy"
			})).addr()
		}, record.HTTPError, 503},
		{"404", func(t *testing.T) string {
			return newServer(t, respond(func(string) string { return "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n" })).addr()
		}, record.HTTPError, 404},
		{"wrong bytes", func(t *testing.T) string {
			return newServer(t, respond(func(p string) string {
				b := []byte(pageBody(p))
				b[len(b)-1] ^= 1
				return okReply(string(b))
			})).addr()
		}, record.DataError, 200},
		{"short body", func(t *testing.T) string {
			return newServer(t, func(c net.Conn) {
				http.ReadRequest(bufio.NewReader(c))
				c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npage"))
				c.Close()
			}).addr()
		}, record.DataError, 200},
		{"not http", func(t *testing.T) string {
			return newServer(t, func(c net.Conn) {
				http.ReadRequest(bufio.NewReader(c))
				c.Write([]byte("SSH-2.0-OpenSSH\r\n"))
				c.Close()
			}).addr()
		}, record.DataError, 0},
		{"connect backlog full", func(t *testing.T) string { return fullBacklog(t) }, record.ConnAbort, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := tc.addr(t)
			for _, keepalive := range []bool{false, true} {
				d := testDriver(keepalive)
				scheduled := time.Now()
				r := d.Do(context.Background(), Attempt{Scheduled: scheduled, Addr: addr, Host: addr, Target: "/p/7"})
				d.Close()
				if r.Outcome != tc.want || r.Status != tc.status {
					t.Errorf("keepalive=%v: outcome %v status %d, want %v status %d", keepalive, r.Outcome, r.Status, tc.want, tc.status)
				}
				if tc.want == record.ConnAbort && r.End.Sub(scheduled) != testConnect {
					t.Errorf("conn_abort latency %v, want exactly the connect timeout %v", r.End.Sub(scheduled), testConnect)
				}
				if tc.want == record.OK && r.Bytes != int64(len(pageBody("/p/7"))) {
					t.Errorf("bytes %d, want %d", r.Bytes, len(pageBody("/p/7")))
				}
			}
		})
	}
}

func respondThenHang(partial string) func(net.Conn) {
	return func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		c.Write([]byte(partial))
		br.ReadByte() // until the client gives up
	}
}

// fullBacklog returns the address of a socket that listens with a backlog
// of zero and never accepts, already holding one queued connection: Linux
// then drops further SYNs, so a connect hangs as it would towards a dead host.
func fullBacklog(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Skip("raw socket:", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	// Fill the queue: connections that complete are queued; once it is
	// full a dial hangs, which is what we wait for (bounded by the timeout).
	for range 8 {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err != nil {
			return addr
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Skip("kernel kept accepting connections into a zero backlog")
	return ""
}

func TestKeepaliveReusesConnections(t *testing.T) {
	for _, keepalive := range []bool{false, true} {
		s := newServer(t, respond(func(p string) string { return okReply(pageBody(p)) }))
		d := testDriver(keepalive)
		for i := range 5 {
			if r := do(t, d, s.addr(), fmt.Sprintf("/p/%d", i)); r.Outcome != record.OK {
				t.Fatalf("keepalive=%v attempt %d: %v", keepalive, i, r.Outcome)
			}
		}
		d.Close()
		want := int64(5)
		if keepalive {
			want = 1
		}
		if got := s.accepted.Load(); got != want {
			t.Errorf("keepalive=%v: %d connections for 5 sequential requests, want %d", keepalive, got, want)
		}
	}
}

// A keep-alive connection the server closed while idle is retried once on a
// new connection rather than counted as a conn_error.
func TestKeepaliveStaleConnectionRetried(t *testing.T) {
	s := newServer(t, func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		if req, err := http.ReadRequest(br); err == nil {
			c.Write([]byte(okReply(pageBody(req.URL.Path)))) // then close, without saying so
		}
	})
	d := testDriver(true)
	defer d.Close()
	for i := range 3 {
		if r := do(t, d, s.addr(), "/p/1"); r.Outcome != record.OK {
			t.Fatalf("attempt %d: %v, want ok", i, r.Outcome)
		}
	}
	if got := s.accepted.Load(); got != 3 {
		t.Errorf("%d connections, want 3", got)
	}
}

// A server that answers "Connection: close" is not reused.
func TestKeepaliveHonoursConnectionClose(t *testing.T) {
	s := newServer(t, respond(func(p string) string {
		return fmt.Sprintf("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(pageBody(p)), pageBody(p))
	}))
	d := testDriver(true)
	defer d.Close()
	for range 2 {
		if r := do(t, d, s.addr(), "/p/2"); r.Outcome != record.OK {
			t.Fatalf("%v, want ok", r.Outcome)
		}
	}
	if got := s.accepted.Load(); got != 2 {
		t.Errorf("%d connections, want 2", got)
	}
}

func TestChunkedAndNoVerifier(t *testing.T) {
	s := newServer(t, respond(func(p string) string {
		return "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\npage\r\n0\r\n\r\n"
	}))
	d := NewHTTPDriver(DriverConfig{ConnectTimeout: testConnect, ResponseTimeout: testResponse})
	defer d.Close()
	if r := do(t, d, s.addr(), "/x"); r.Outcome != record.OK || r.Bytes != 4 {
		t.Errorf("got %v with %d bytes, want ok with 4", r.Outcome, r.Bytes)
	}
}

// An attempt whose connect deadline passed before it could be sent (the
// generator fell more than connect_timeout behind) is a conn_abort charged
// exactly the timeout, and is never sent.
func TestLateAttemptAborts(t *testing.T) {
	s := newServer(t, respond(func(p string) string { return okReply(pageBody(p)) }))
	d := testDriver(false)
	scheduled := time.Now().Add(-time.Hour)
	r := d.Do(context.Background(), Attempt{Scheduled: scheduled, Addr: s.addr(), Host: s.addr(), Target: "/"})
	if r.Outcome != record.ConnAbort || r.End.Sub(scheduled) != testConnect {
		t.Errorf("got %v after %v, want conn_abort after %v", r.Outcome, r.End.Sub(scheduled), testConnect)
	}
	if s.accepted.Load() != 0 {
		t.Error("a late attempt was sent")
	}
}

// BenchmarkHTTPDriver is the per-attempt cost of the client side against an
// in-process server (which shares the CPU, so compare modes, not absolutes).
// The server allocates nothing per request, so allocs/op are the driver's.
func BenchmarkHTTPDriver(b *testing.B) {
	reply := []byte(okReply(pageBody("/p/1")))
	for _, mode := range []struct {
		name               string
		keepalive, netHTTP bool
	}{{"keepalive", true, false}, {"keepalive-net-http-heads", true, true}, {"new-connection", false, false}} {
		keepalive := mode.keepalive
		b.Run(mode.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					go rawRespond(c, reply)
				}
			}()
			d := NewHTTPDriver(DriverConfig{ConnectTimeout: time.Second, ResponseTimeout: time.Second, Keepalive: keepalive})
			d.netHTTPHeads = mode.netHTTP
			defer d.Close()
			addr := ln.Addr().String()
			// A context that can end, as a run's can: its watch is
			// part of every attempt's cost.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b.ReportAllocs()
			for b.Loop() {
				r := d.Do(ctx, Attempt{Scheduled: time.Now(), Addr: addr, Host: addr, Target: "/p/1"})
				if r.Outcome != record.OK {
					b.Fatal(r.Outcome)
				}
			}
		})
	}
}

// rawRespond answers every request on c (a head ending in a blank line; no
// body) with reply, allocating nothing per request, and ends when the
// client closes or asks to ("Connection: close").
func rawRespond(c net.Conn, reply []byte) {
	defer c.Close()
	buf := make([]byte, 4096)
	var have int
	for {
		n, err := c.Read(buf[have:])
		if err != nil {
			return
		}
		have += n
		for {
			end := bytes.Index(buf[:have], []byte("\r\n\r\n"))
			if end < 0 {
				break
			}
			closing := bytes.Contains(buf[:end], []byte("Connection: close"))
			if _, err := c.Write(reply); err != nil || closing {
				return
			}
			have = copy(buf, buf[end+4:have])
		}
		if have == len(buf) {
			return
		}
	}
}

// With MaxConns, concurrent attempts share the capped connections instead
// of opening more, and one that waits past its connect timeout aborts.
func TestKeepaliveMaxConns(t *testing.T) {
	gate := make(chan struct{})
	s := newServer(t, respond(func(p string) string {
		<-gate
		return okReply(pageBody(p))
	}))
	d := NewHTTPDriver(DriverConfig{ConnectTimeout: time.Minute, ResponseTimeout: time.Minute, Keepalive: true, MaxConns: 2, Verify: verifyPage})
	defer d.Close()
	results := make(chan Result)
	for range 6 {
		go func() { results <- do(t, d, s.addr(), "/p/3") }()
	}
	close(gate)
	for range 6 {
		if r := <-results; r.Outcome != record.OK {
			t.Errorf("%v, want ok", r.Outcome)
		}
	}
	if got := s.accepted.Load(); got > 2 {
		t.Errorf("%d connections for MaxConns 2", got)
	}

	hung := newServer(t, respondThenHang(""))
	d2 := NewHTTPDriver(DriverConfig{ConnectTimeout: testConnect, ResponseTimeout: time.Second, Keepalive: true, MaxConns: 1})
	defer d2.Close()
	go do(t, d2, hung.addr(), "/") // holds the only connection
	for hung.accepted.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	scheduled := time.Now()
	r := d2.Do(context.Background(), Attempt{Scheduled: scheduled, Addr: hung.addr(), Host: hung.addr(), Target: "/"})
	if r.Outcome != record.ConnAbort || r.End.Sub(scheduled) != testConnect || r.Refused != record.RefusedNoConn {
		t.Errorf("waiting for a connection: %v (refused %q) after %v, want conn_abort refused no_conn after exactly %v", r.Outcome, r.Refused, r.End.Sub(scheduled), testConnect)
	}
}
