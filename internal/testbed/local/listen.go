package local

import (
	"encoding/binary"
	"errors"
	"net"
	"slices"
	"strconv"
	"syscall"
)

// listeningOn lists the TCP addresses in LISTEN state on addr's IP that
// belong to process group pgid, always including addr itself: a node's
// other ports, such as press's intra-cluster port.
//
// It asks the kernel for listening sockets only (netlink sock_diag), not
// /proc/net/tcp: during a run the load generator leaves tens of thousands
// of TIME_WAIT entries there, and reading them would cost a second of CPU
// in the middle of the measurement.
func listeningOn(addr string, pgid int) []string {
	out := []string{addr}
	host, _, _ := net.SplitHostPort(addr)
	ip := net.ParseIP(host).To4()
	socks, err := listeningSockets()
	if err != nil || ip == nil {
		return out
	}
	owned := socketsOf(pgid)
	for _, s := range socks {
		if s.ip != [4]byte(ip) || !owned[strconv.FormatUint(uint64(s.inode), 10)] {
			continue
		}
		if a := net.JoinHostPort(host, strconv.Itoa(int(s.port))); !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

type listenSock struct {
	ip    [4]byte
	port  uint16
	inode uint32
}

// Netlink sock_diag constants (linux/sock_diag.h, linux/inet_diag.h).
const (
	netlinkInetDiag   = 4
	sockDiagByFamily  = 20
	tcpListen         = 10
	inetDiagReqV2Size = 56 // family, protocol, ext, pad, states u32, sockid (48)
	inetDiagMsgInode  = 68 // offset of idiag_inode in inet_diag_msg
)

// listeningSockets dumps every IPv4 TCP socket in LISTEN state.
func listeningSockets() ([]listenSock, error) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, netlinkInetDiag)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	req := make([]byte, syscall.NLMSG_HDRLEN+inetDiagReqV2Size)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], sockDiagByFamily)
	ne.PutUint16(req[6:], syscall.NLM_F_REQUEST|syscall.NLM_F_DUMP)
	ne.PutUint32(req[8:], 1) // sequence
	body := req[syscall.NLMSG_HDRLEN:]
	body[0], body[1] = syscall.AF_INET, syscall.IPPROTO_TCP
	ne.PutUint32(body[4:], 1<<tcpListen)
	if err := syscall.Sendto(fd, req, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return nil, err
	}
	var out []listenSock
	buf := make([]byte, 64<<10)
	for range 10000 { // bounded: a dump of listening sockets is a few messages
		n, _, err := syscall.Recvfrom(fd, buf, 0)
		if err != nil {
			return nil, err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case syscall.NLMSG_DONE:
				return out, nil
			case syscall.NLMSG_ERROR:
				return nil, errors.New("sock_diag: netlink error")
			case sockDiagByFamily:
				d := m.Data
				if len(d) < inetDiagMsgInode+4 {
					continue
				}
				var s listenSock
				s.port = binary.BigEndian.Uint16(d[4:]) // id.sport, network order
				copy(s.ip[:], d[8:12])                  // id.src[0]
				s.inode = ne.Uint32(d[inetDiagMsgInode:])
				out = append(out, s)
			}
		}
	}
	return nil, errors.New("sock_diag: dump did not end")
}
