package kernelfault

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// A minimal client of the kernel's NFQUEUE (nfnetlink_queue) protocol,
// over a raw netlink socket: bind a queue, receive packet ids, send
// verdicts. No maintained Go library was reachable from this build's
// module proxy (florianl/go-nfqueue is refused), and the protocol is four
// fixed structs, so it is written here against
// include/uapi/linux/netfilter/nfnetlink_queue.h.

const (
	nfnlSubsysQueue = 3
	nfqnlMsgPacket  = 0
	nfqnlMsgVerdict = 1
	nfqnlMsgConfig  = 2

	nfqaPacketHdr  = 1
	nfqaVerdictHdr = 2

	nfqaCfgCmd      = 1
	nfqaCfgParams   = 2
	nfqaCfgMaxlen   = 3
	nfqaCfgMask     = 4
	nfqaCfgFlags    = 5
	nfqaCfgFailOpen = 1 // NFQA_CFG_F_FAIL_OPEN: a full queue accepts instead of dropping

	nfqnlCfgCmdBind = 1
	nfqnlCopyMeta   = 1

	nfDrop   = 0
	nfAccept = 1

	nlaTypeMask = 0x3fff // without NLA_F_NESTED and NLA_F_NET_BYTEORDER
	nlmsgHdrLen = 16
	nfgenHdrLen = 4
)

// nfq is one bound queue: a netlink socket in the namespace it was opened
// in. Reads and writes may come from different goroutines.
type nfq struct {
	fd    int
	queue uint16
	seq   uint32
}

// openQueue opens a netlink socket in the network namespace at nsPath
// (empty: this one), binds queue num with metadata-only copies, a kernel
// queue of maxLen packets and fail-open, and a receive timeout so a reader
// can notice it should stop.
func openQueue(nsPath string, num uint16, maxLen int) (*nfq, error) {
	fd, err := socketIn(nsPath)
	if err != nil {
		return nil, err
	}
	q := &nfq{fd: fd, queue: num}
	fail := func(err error) (*nfq, error) { _ = unix.Close(fd); return nil, err }
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fail(fmt.Errorf("nfqueue: bind netlink socket: %w", err))
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	tv := unix.NsecToTimeval(int64(50 * time.Millisecond))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fail(fmt.Errorf("nfqueue: receive timeout: %w", err))
	}
	cmd := []byte{nfqnlCfgCmdBind, 0, 0, 0} // command, pad, pf (unused by BIND)
	params := make([]byte, 5)
	binary.BigEndian.PutUint32(params, 0xffff)
	params[4] = nfqnlCopyMeta
	maxlen := binary.BigEndian.AppendUint32(nil, uint32(maxLen))
	flags := binary.BigEndian.AppendUint32(nil, nfqaCfgFailOpen)
	steps := [][]byte{
		attr(nil, nfqaCfgCmd, cmd),
		attr(attr(nil, nfqaCfgParams, params), nfqaCfgMaxlen, maxlen),
		attr(attr(nil, nfqaCfgFlags, flags), nfqaCfgMask, flags),
	}
	for _, a := range steps {
		if err := q.request(nfqnlMsgConfig, a); err != nil {
			return fail(fmt.Errorf("nfqueue: configure queue %d: %w", num, err))
		}
	}
	return q, nil
}

// socketIn opens a netfilter netlink socket in the namespace at nsPath,
// from an OS thread that joins it and comes back (a socket stays in the
// namespace it was created in).
func socketIn(nsPath string) (int, error) {
	open := func() (int, error) {
		return unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	}
	if nsPath == "" {
		return open()
	}
	type res struct {
		fd  int
		err error
	}
	ch := make(chan res, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			ch <- res{-1, err}
			return // the thread ends with the goroutine: it never left
		}
		defer self.Close()
		target, err := os.Open(nsPath)
		if err != nil {
			ch <- res{-1, err}
			runtime.UnlockOSThread()
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- res{-1, fmt.Errorf("setns %s: %w", nsPath, err)}
			runtime.UnlockOSThread()
			return
		}
		fd, err := open()
		if unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		} // else the locked thread dies with this goroutine
		ch <- res{fd, err}
	}()
	r := <-ch
	if r.err != nil {
		return -1, fmt.Errorf("nfqueue: netlink socket in %s: %w", nsPath, r.err)
	}
	return r.fd, nil
}

// attr appends one netlink attribute to b.
func attr(b []byte, typ uint16, payload []byte) []byte {
	n := 4 + len(payload)
	b = binary.NativeEndian.AppendUint16(b, uint16(n))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, payload...)
	for n%4 != 0 {
		b = append(b, 0)
		n++
	}
	return b
}

// message builds one nfnetlink message of queue q.
func (q *nfq) message(b []byte, msg uint16, flags uint16, attrs []byte) []byte {
	q.seq++
	n := nlmsgHdrLen + nfgenHdrLen + len(attrs)
	b = binary.NativeEndian.AppendUint32(b, uint32(n))
	b = binary.NativeEndian.AppendUint16(b, nfnlSubsysQueue<<8|msg)
	b = binary.NativeEndian.AppendUint16(b, flags)
	b = binary.NativeEndian.AppendUint32(b, q.seq)
	b = binary.NativeEndian.AppendUint32(b, 0)
	b = append(b, unix.AF_UNSPEC, 0)
	b = binary.BigEndian.AppendUint16(b, q.queue)
	return append(b, attrs...)
}

// request sends a config message and waits for the kernel's ack.
func (q *nfq) request(msg uint16, attrs []byte) error {
	b := q.message(nil, msg, unix.NLM_F_REQUEST|unix.NLM_F_ACK, attrs)
	if err := unix.Sendto(q.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	for range 100 { // bounded: the ack comes first on a fresh socket
		n, _, err := unix.Recvfrom(q.fd, buf, 0)
		if err != nil {
			return fmt.Errorf("waiting for the ack: %w", err)
		}
		if errno, ok := ackOf(buf[:n]); ok {
			if errno != 0 {
				return unix.Errno(errno)
			}
			return nil
		}
	}
	return errors.New("no ack")
}

// ackOf finds an NLMSG_ERROR message (an ack has error 0) in b.
func ackOf(b []byte) (int32, bool) {
	for len(b) >= nlmsgHdrLen {
		n := int(binary.NativeEndian.Uint32(b))
		if n < nlmsgHdrLen || n > len(b) {
			return 0, false
		}
		if binary.NativeEndian.Uint16(b[4:]) == unix.NLMSG_ERROR && n >= nlmsgHdrLen+4 {
			return -int32(binary.NativeEndian.Uint32(b[nlmsgHdrLen:])), true
		}
		b = b[min(align4(n), len(b)):]
	}
	return 0, false
}

func align4(n int) int { return (n + 3) &^ 3 }

// parsePackets returns the packet ids of the NFQNL_MSG_PACKET messages in
// one datagram read from the socket, appending to ids. Other messages
// (acks) are skipped; a malformed message ends the parse with an error
// and the ids found before it.
func parsePackets(b []byte, ids []uint32) ([]uint32, error) {
	for len(b) > 0 {
		if len(b) < nlmsgHdrLen {
			return ids, fmt.Errorf("nfqueue: %d trailing bytes, shorter than a message header", len(b))
		}
		n := int(binary.NativeEndian.Uint32(b))
		if n < nlmsgHdrLen || n > len(b) {
			return ids, fmt.Errorf("nfqueue: message length %d outside [%d, %d]", n, nlmsgHdrLen, len(b))
		}
		typ := binary.NativeEndian.Uint16(b[4:])
		if typ == nfnlSubsysQueue<<8|nfqnlMsgPacket {
			id, err := packetID(b[nlmsgHdrLen:n])
			if err != nil {
				return ids, err
			}
			ids = append(ids, id)
		}
		b = b[min(align4(n), len(b)):]
	}
	return ids, nil
}

// packetID reads NFQA_PACKET_HDR's packet id from a packet message's body
// (nfgenmsg, then attributes).
func packetID(body []byte) (uint32, error) {
	if len(body) < nfgenHdrLen {
		return 0, errors.New("nfqueue: packet message without nfgenmsg")
	}
	a := body[nfgenHdrLen:]
	for len(a) >= 4 {
		n := int(binary.NativeEndian.Uint16(a))
		typ := binary.NativeEndian.Uint16(a[2:]) & nlaTypeMask
		if n < 4 || n > len(a) {
			return 0, fmt.Errorf("nfqueue: attribute length %d outside [4, %d]", n, len(a))
		}
		if typ == nfqaPacketHdr {
			if n < 4+7 {
				return 0, fmt.Errorf("nfqueue: packet header of %d bytes, want 7", n-4)
			}
			return binary.BigEndian.Uint32(a[4:]), nil
		}
		a = a[min(align4(n), len(a)):]
	}
	return 0, errors.New("nfqueue: packet message without a packet header")
}

// verdicts sends one verdict per id, packed into as few datagrams as fit.
func (q *nfq) verdicts(ids []uint32, verdict uint32) error {
	const maxDatagram = 32 << 10
	var b []byte
	var hdr [8]byte
	for _, id := range ids {
		binary.BigEndian.PutUint32(hdr[:], verdict)
		binary.BigEndian.PutUint32(hdr[4:], id)
		b = q.message(b, nfqnlMsgVerdict, unix.NLM_F_REQUEST, attr(nil, nfqaVerdictHdr, hdr[:]))
		if len(b) > maxDatagram {
			if err := q.send(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	if len(b) > 0 {
		return q.send(b)
	}
	return nil
}

func (q *nfq) send(b []byte) error {
	return unix.Sendto(q.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
}

// read waits (up to the receive timeout) for one datagram into buf and
// returns the packet ids it holds; a timeout returns none and no error.
func (q *nfq) read(buf []byte, ids []uint32) ([]uint32, error) {
	n, _, err := unix.Recvfrom(q.fd, buf, 0)
	switch {
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
		return ids, nil
	case errors.Is(err, unix.ENOBUFS):
		return ids, errOverrun
	case err != nil:
		return ids, err
	}
	return parsePackets(buf[:n], ids)
}

// errOverrun: the socket's buffer overflowed and the kernel dropped
// notifications; their packets stay queued until the queue is unbound.
var errOverrun = errors.New("nfqueue: receive buffer overrun")

func (q *nfq) close() error { return unix.Close(q.fd) }
