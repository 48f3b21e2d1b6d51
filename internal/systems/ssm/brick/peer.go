package brick

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"time"

	"github.com/faultbench/faultbench/internal/systems/ssm/wire"
)

// peerLoop keeps a stream open to the peer brick at addr (passive style),
// redialling with backoff until the brick closes. The stream opens like a
// stub's, so the peer serves it as one: it beacons on it, which tells this
// brick the peer's id and that it is alive, and it stores the wire.TBackup
// frames this brick ships on it without answering.
func (b *Brick) peerLoop(addr string) {
	backoff := 20 * time.Millisecond
	for {
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			backoff = 20 * time.Millisecond
			b.servePeer(addr, nc)
		}
		select {
		case <-b.done:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// servePeer runs one stream to a peer until it breaks or the brick closes.
func (b *Brick) servePeer(addr string, nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	s := newStream(nc)
	b.mu.Lock()
	select {
	case <-b.done:
		b.mu.Unlock()
		_ = nc.Close()
		return
	default:
	}
	b.links[s] = struct{}{}
	b.mu.Unlock()
	b.wg.Add(1)
	go func() { defer b.wg.Done(); s.out.Run() }()
	s.send([]byte(wire.Preface))
	var id uint16 // the peer's id, from its first beacon
	br := bufio.NewReaderSize(nc, 64<<10)
	for {
		frame, err := wire.ReadFrame(br, 1<<16)
		if err != nil {
			break
		}
		m, err := wire.Decode(frame)
		if err != nil || m.Type != wire.TBeacon {
			continue // the peer's error frames, if any: nothing to act on
		}
		if id == 0 {
			id = m.Brick
			b.event("system.ssm.peer", fmt.Sprintf("brick %d: stream to peer brick %d at %s", b.cfg.ID, id, addr))
		}
		_ = b.do(context.Background(), func() {
			b.ship.Beacon(time.Now(), m.Brick)
			b.peerOut[m.Brick] = s
		})
	}
	s.close()
	b.mu.Lock()
	delete(b.links, s)
	b.mu.Unlock()
	if id != 0 {
		_ = b.do(context.Background(), func() {
			if b.peerOut[id] == s {
				delete(b.peerOut, id)
				b.ship.Down(id)
			}
		})
	}
}
