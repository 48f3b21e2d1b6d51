//go:build unix

package wire

import (
	"net"
	"syscall"
)

// direct writes to a socket with one non-blocking write(2) at a time. The
// Outbox makes one per connection and uses it only from the one goroutine
// writing at that moment, so the callback and its fields are allocated once.
type direct struct {
	rc  syscall.RawConn // nil: not a socket (a net.Pipe, a wrapper)
	b   []byte
	n   int
	err error
	fn  func(fd uintptr) bool
}

func newDirect(c net.Conn) *direct {
	d := &direct{}
	if sc, ok := c.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			d.rc = rc
		}
	}
	d.fn = func(fd uintptr) bool {
		d.n, d.err = syscall.Write(int(fd), d.b)
		return true // one attempt: never wait for the socket to drain
	}
	return d
}

// write writes b with one non-blocking write(2) and reports how much the
// kernel took; ok is false when the connection has no socket to write to
// that way, and then nothing was written.
func (d *direct) write(b []byte) (n int, ok bool) {
	if d.rc == nil {
		return 0, false
	}
	d.b, d.n, d.err = b, 0, nil
	err := d.rc.Write(d.fn)
	d.b = nil
	if err != nil || d.err != nil || d.n < 0 {
		return 0, true // EAGAIN, EINTR, a closed socket: Run writes it, or finds the error
	}
	return d.n, true
}
