package workload

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/record"
)

// replyConn is a net.Conn whose peer has sent reply and then closed: reads
// return reply's bytes, a few at a time when chunk is set, then io.EOF.
// Writes are accepted and dropped.
type replyConn struct {
	r     *bytes.Reader
	chunk int
	// hold keeps the connection open after the reply, as a keep-alive
	// server does: a read past the reply counts in overreads and fails
	// as a deadline would.
	hold      bool
	overreads int
}

func (c *replyConn) Read(p []byte) (int, error) {
	if c.chunk > 0 && len(p) > c.chunk {
		p = p[:c.chunk]
	}
	if c.hold && c.r.Len() == 0 {
		c.overreads++
		return 0, os.ErrDeadlineExceeded
	}
	return c.r.Read(p)
}
func (c *replyConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *replyConn) Close() error                     { return nil }
func (c *replyConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *replyConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *replyConn) SetDeadline(time.Time) error      { return nil }
func (c *replyConn) SetReadDeadline(time.Time) error  { return nil }
func (c *replyConn) SetWriteDeadline(time.Time) error { return nil }

// exchangeOutcome is what one exchange decided, minus its times.
type exchangeOutcome struct {
	outcome     record.Outcome
	status      int
	bytes       int64
	keep, retry bool
	left        int // bytes the connection still holds after the answer, when kept
}

func exchangeReply(t testing.TB, reply []byte, chunk int, netHTTP, verify bool) exchangeOutcome {
	cfg := DriverConfig{ConnectTimeout: time.Second, ResponseTimeout: time.Second, Keepalive: true}
	if verify {
		cfg.Verify = func(_ string, body []byte) bool { return bytes.HasPrefix(body, []byte("page")) }
	}
	d := NewHTTPDriver(cfg)
	d.netHTTPHeads = netHTTP
	conn := newHTTPConn(&replyConn{r: bytes.NewReader(reply), chunk: chunk})
	defer conn.close()
	r, keep, retry := d.exchange(context.Background(), conn, Attempt{Scheduled: time.Now(), Addr: "x:1", Host: "x:1", Target: "/p"}, time.Now().Add(time.Second))
	o := exchangeOutcome{outcome: r.Outcome, status: r.Status, bytes: r.Bytes, keep: keep, retry: retry}
	if keep {
		rest, _ := io.ReadAll(conn.br)
		o.left = len(rest)
	}
	return o
}

var headSeeds = []string{
	"HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 8\r\n\r\npage-one",
	"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\npage-oneHTTP/1.1 200 OK\r\n", // a second answer behind the first
	"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\npage-o",                     // short body
	"HTTP/1.1 200 OK\r\n\r\npage until close",
	"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
	"HTTP/1.1 304 Not Modified\r\n\r\n",
	"HTTP/1.1 101 Switching\r\nConnection: upgrade\r\n\r\n",
	"HTTP/1.0 200 OK\r\nContent-Length: 4\r\n\r\npage",
	"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 4\r\n\r\npage",
	"HTTP/1.1 200 OK\r\nConnection: foo, CLOSE\r\nContent-Length: 4\r\n\r\npage",
	"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 3\r\n\r\nbad",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\npage\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\npage",
	"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\npage",
	"HTTP/1.1 200 OK\r\nContent-Length: +4\r\n\r\npage",
	"HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 4\r\n\r\npage",
	"HTTP/1.1 200 OK\r\n Leading: space\r\n\r\n",
	"HTTP/1.1 200 OK\r\nBad Key: v\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX: \x01\r\n\r\n",
	"HTTP/1.1 200 OK\nContent-Length: 4\n\npage",
	"HTTP/1.1 2000 OK\r\n\r\n",
	"HTTP/1.1  200 OK\r\n\r\n",
	"HTTP/1.1 200\r\nContent-Length: 4\r\n\r\npage",
	"HTTP/2.0 200 OK\r\n\r\n",
	"garbage\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Len",
	"",
}

func TestPeekHeadAgreesWithNetHTTP(t *testing.T) {
	for _, reply := range headSeeds {
		for _, chunk := range []int{0, 1, 7} {
			for _, verify := range []bool{false, true} {
				fast := exchangeReply(t, []byte(reply), chunk, false, verify)
				ref := exchangeReply(t, []byte(reply), chunk, true, verify)
				if fast != ref {
					t.Errorf("reply %q (reads of %d, verify %v):\n peekHead %+v\n net/http %+v", reply, chunk, verify, fast, ref)
				}
			}
		}
	}
}

// FuzzPeekHeadAgreesWithNetHTTP: for any answer, the fast head reader and
// net/http reach the same outcome, status, body bytes and reuse, and leave
// the same bytes on a kept connection.
func FuzzPeekHeadAgreesWithNetHTTP(f *testing.F) {
	for _, s := range headSeeds {
		f.Add([]byte(s), uint8(0), false)
	}
	f.Fuzz(func(t *testing.T, reply []byte, chunk uint8, verify bool) {
		fast := exchangeReply(t, reply, int(chunk%16), false, verify)
		ref := exchangeReply(t, reply, int(chunk%16), true, verify)
		if fast != ref {
			t.Errorf("reply %q:\n peekHead %+v\n net/http %+v", reply, fast, ref)
		}
	})
}

// An answer framed by its Content-Length is read without waiting for a
// byte more: on a kept connection the server sends nothing after it, so a
// read past it would sit until the response deadline (it once did, and
// every keep-alive answer took the whole timeout).
func TestPeekHeadReadsNoFurther(t *testing.T) {
	for _, reply := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\npage-one",
		"HTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n",
	} {
		for _, chunk := range []int{0, 1, 5} {
			for _, verify := range []bool{false, true} {
				d := NewHTTPDriver(DriverConfig{ConnectTimeout: time.Second, ResponseTimeout: time.Second, Keepalive: true,
					Verify: func(string, []byte) bool { return true }})
				if !verify {
					d.cfg.Verify = nil
				}
				rc := &replyConn{r: bytes.NewReader([]byte(reply)), chunk: chunk, hold: true}
				conn := newHTTPConn(rc)
				r, keep, _ := d.exchange(context.Background(), conn, Attempt{Scheduled: time.Now(), Addr: "x:1", Host: "x:1", Target: "/p"}, time.Now().Add(time.Second))
				conn.close()
				if r.Outcome == record.Timeout || !keep || rc.overreads != 0 {
					t.Errorf("reply %q (reads of %d, verify %v): %v, keep %v, %d reads past the answer; want an answer, kept, none", reply, chunk, verify, r.Outcome, keep, rc.overreads)
				}
			}
		}
	}
}

// A head longer than the read buffer goes to net/http, whole.
func TestPeekHeadLongHead(t *testing.T) {
	reply := "HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("a", readBufSize) + "\r\nContent-Length: 4\r\n\r\npage"
	fast := exchangeReply(t, []byte(reply), 0, false, true)
	ref := exchangeReply(t, []byte(reply), 0, true, true)
	if fast != ref || fast.outcome != record.OK {
		t.Errorf("peekHead %+v, net/http %+v, want both ok", fast, ref)
	}
}
