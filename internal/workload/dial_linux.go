package workload

import (
	"context"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"
)

// dialTCP connects to addr, an ip:port the run resolved before it began,
// by connectBy or until ctx ends. It is what net.Dialer does for such an
// address with the steps a new connection per request pays for and does
// not need left out: no address resolution or parallel dial racing, no
// context per dial unless ctx can end, no TCP keep-alive probes (three
// setsockopt calls; every attempt has its own deadlines), and no
// getsockname. A profile of `faultbench run` with a new connection per
// request had net.Dialer's own code at 15% of the run's CPU. Every driver
// that dials (http, kv, session) dials through it.
//
// The socket is non-blocking and registered with the runtime's poller
// (os.NewFile), so the wait for the connection to complete parks only the
// goroutine, and the connection's reads and writes honour deadlines as a
// net.Conn's do. Errors are a timeout (net.Error) when connectBy passed,
// ctx's error when ctx ended, and the system call's otherwise. Addresses
// it does not handle (a zone, a name) go to net.Dialer.
func dialTCP(ctx context.Context, addr string, connectBy time.Time) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || ap.Addr().Zone() != "" {
		return stdDial(ctx, addr, connectBy)
	}
	ip := ap.Addr().Unmap()
	var sa syscall.Sockaddr
	family := syscall.AF_INET
	if ip.Is4() {
		sa = &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ip.As4()}
	} else {
		family = syscall.AF_INET6
		sa = &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: ip.As16()}
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, syscall.IPPROTO_TCP)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	if err := syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1); err != nil {
		syscall.Close(fd)
		return nil, os.NewSyscallError("setsockopt", err)
	}
	connected := true
	switch err := syscall.Connect(fd, sa); err {
	case nil:
	case syscall.EINPROGRESS, syscall.EALREADY, syscall.EINTR:
		// Over loopback the handshake has usually completed by the
		// time connect returns, and a peer name says so for one
		// system call, where awaitConnect would arm and clear a
		// deadline and watch ctx.
		_, err := syscall.Getpeername(fd)
		connected = err == nil
	default:
		syscall.Close(fd)
		return nil, os.NewSyscallError("connect", err)
	}
	f := os.NewFile(uintptr(fd), "tcp "+addr)
	c := &tcpFileConn{File: f, remote: net.TCPAddrFromAddrPort(ap)}
	if connected {
		return c, nil
	}
	if err := c.awaitConnect(ctx, connectBy); err != nil {
		f.Close()
		return nil, err
	}
	return c, nil
}

// awaitConnect waits until the socket's connect completes, by connectBy
// or until ctx ends. The check runs before any wait and after every
// wake-up (the poller may wake spuriously), as net's own connect does:
// SO_ERROR says whether it failed, getpeername whether it is done.
func (c *tcpFileConn) awaitConnect(ctx context.Context, connectBy time.Time) error {
	if err := c.SetWriteDeadline(connectBy); err != nil {
		return err
	}
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() { c.SetWriteDeadline(aLongTimeAgo) })
		defer stop()
	}
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var connErr error
	err = raw.Write(func(fd uintptr) bool {
		n, err := syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_ERROR)
		if err != nil {
			connErr = os.NewSyscallError("getsockopt", err)
			return true
		}
		switch e := syscall.Errno(n); e {
		case syscall.EINPROGRESS, syscall.EALREADY, syscall.EINTR:
			return false
		case syscall.EISCONN:
			return true
		case 0:
			_, err := syscall.Getpeername(int(fd))
			return err == nil
		default:
			connErr = os.NewSyscallError("connect", e)
			return true
		}
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return err // os.ErrDeadlineExceeded is a net.Error timeout
	}
	if connErr != nil {
		return connErr
	}
	return c.SetWriteDeadline(time.Time{})
}

// tcpFileConn is a connected TCP socket held as an *os.File (reads,
// writes, deadlines and Close through the runtime's poller) that is a
// net.Conn: the end of the stream reads as io.EOF, as from a net.Conn.
// Its errors are PathErrors, not net.OpErrors; the drivers tell them
// apart only by whether they are timeouts, which both say alike. Its
// local address was not asked of the kernel: LocalAddr is an empty
// TCPAddr.
type tcpFileConn struct {
	*os.File
	remote *net.TCPAddr
}

func (c *tcpFileConn) LocalAddr() net.Addr  { return &net.TCPAddr{} }
func (c *tcpFileConn) RemoteAddr() net.Addr { return c.remote }

var _ net.Conn = (*tcpFileConn)(nil)
