package press

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"
)

// peer is the outgoing side of one intra-cluster link: a queue drained by
// one writer goroutine (PRESS's send helper thread) and the connection it
// writes to. Messages from the peer arrive on a connection the peer dialled.
type peer struct {
	id   int
	addr string
	q    chan outMsg

	mu           sync.Mutex
	conn         net.Conn // current outgoing connection, nil when none
	lastDialFail time.Time
	outUp, inUp  bool // perf handshake: Hello written / Hello received
	accepted     bool // via*: the peer accepted conn (its accept byte arrived)
}

// viaAccept is the byte a VIA node writes on every connection it accepts:
// as in VIA's connection handshake, the dialler counts the connection as
// established — and its break as the peer's failure — only once the peer
// accepted it, so a dial that a faultnet proxy took but could not complete
// while the peer was still starting is not taken for a failure.
const viaAccept = 0xAC

type outMsg struct {
	m    Message
	done chan error // perf's serving path waits on it; nil otherwise
}

var (
	errNoConn = errors.New("press: no connection to peer")
	errEFAULT = errors.New("press: send: bad address (EFAULT)")
)

// pollAlloc is how often a node retries a failed buffer allocation.
const pollAlloc = 5 * time.Millisecond

// sleepCtx waits d or until the node stops; false when it stopped.
func (n *node) sleepCtx(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-n.ctx.Done():
		return false
	}
}

func (n *node) track(c net.Conn) bool {
	n.connMu.Lock()
	defer n.connMu.Unlock()
	if n.ctx.Err() != nil {
		c.Close()
		return false
	}
	n.conns[c] = struct{}{}
	return true
}

func (n *node) untrack(c net.Conn) {
	n.connMu.Lock()
	delete(n.conns, c)
	delete(n.inPeer, c)
	n.connMu.Unlock()
	c.Close()
}

func (n *node) closeConns() {
	n.connMu.Lock()
	defer n.connMu.Unlock()
	for c := range n.conns {
		c.Close()
	}
}

func isBadParam(k CommFault) bool {
	return k == BadParamNull || k == BadParamOffset || k == BadParamSize
}

// failFast writes the remote-fault notices of r (via3, via5: the remote end
// of a failed remote write learns of it) on the current connections, then
// stops the node with ErrFailFast.
func (n *node) failFast(r Ready) {
	for _, e := range r.Msgs {
		p := n.peers[e.To]
		if p == nil || e.Msg.Type != MsgRemoteFault {
			continue
		}
		p.mu.Lock()
		c := p.conn
		p.mu.Unlock()
		if c == nil {
			continue
		}
		if frame, err := AppendFrame(nil, &e.Msg); err == nil {
			c.SetWriteDeadline(time.Now().Add(n.cfg.MessageTimeout))
			_, _ = c.Write(frame)
		}
	}
	select {
	case n.fatal <- fmt.Errorf("%w: node %d: %s", ErrFailFast, n.cfg.Node, r.Fatal):
	default:
	}
}

// disconnect closes every connection to and from peer (a VIA connection
// break is seen at both ends).
func (n *node) disconnect(peer int) {
	if p := n.peers[peer]; p != nil {
		p.mu.Lock()
		c := p.conn
		p.mu.Unlock()
		if c != nil {
			n.dropOut(p, c, errors.New("disconnected"))
		}
	}
	n.connMu.Lock()
	defer n.connMu.Unlock()
	for c, id := range n.inPeer {
		if id != peer {
			continue
		}
		if n.cfg.Mode.RemoteWrite() {
			// A remote write that completed in error before the break
			// (MsgRemoteFault) is already in this socket's buffer: let the
			// reader take what has arrived, then stop it. Closing at once
			// lost it whenever the peer's other connection broke first.
			c.SetReadDeadline(time.Now().Add(remoteDrain))
			continue
		}
		c.Close()
	}
}

// remoteDrain bounds how long disconnect lets an incoming connection's
// reader take frames that arrived before the break (via3, via5).
const remoteDrain = 100 * time.Millisecond

func (n *node) dialTimeout() time.Duration {
	if n.cfg.Mode == Robust {
		return n.cfg.MessageTimeout
	}
	return 2 * time.Second
}

// writer drains one peer's queue until the node stops.
func (n *node) writer(p *peer) {
	var buf []byte
	if n.cfg.Mode.Preallocated() {
		buf = make([]byte, 0, maxFrame) // robust and VIA pre-allocate their channel buffer
	}
	for {
		var om outMsg
		select {
		case <-n.ctx.Done():
			return
		case om = <-p.q:
		}
		err := n.writeOne(p, om.m, buf)
		if om.done != nil {
			om.done <- err
		}
	}
}

func (n *node) writeOne(p *peer, m Message, buf []byte) error {
	if !n.cfg.Mode.Preallocated() {
		// perf and ha allocate a buffer per message; while allocation fails
		// the send waits (the kernel queues, the thread blocks).
		for n.faults.allocBlocked() {
			if !n.sleepCtx(pollAlloc) {
				return n.ctx.Err()
			}
		}
	}
	conn := n.outConn(p)
	if conn == nil {
		return errNoConn
	}
	frame, err := AppendFrame(buf[:0], &m)
	if err != nil {
		return err
	}
	frame, act := n.faults.onSend(frame)
	if act.delay > 0 && !n.sleepCtx(act.delay) {
		return n.ctx.Err()
	}
	if n.cfg.Mode.VIA() && isBadParam(act.kind) {
		// A VIA descriptor with a bad pointer or size completes in error
		// (rather than corrupting a byte stream): the node fails fast.
		n.sendFailed(p.id, act.kind)
		return errEFAULT
	}
	if act.drop {
		return errEFAULT
	}
	if n.cfg.Mode == Robust || n.cfg.Mode.VIA() {
		conn.SetWriteDeadline(time.Now().Add(n.cfg.MessageTimeout))
	}
	if _, err := conn.Write(frame); err != nil {
		n.dropOut(p, conn, err)
		return err
	}
	return nil
}

// outConn returns the peer's connection, dialling it first in ha and robust
// (at most once per heartbeat period after a failure). perf connects only
// while its cluster forms (connector) and never again.
func (n *node) outConn(p *peer) net.Conn {
	p.mu.Lock()
	c := p.conn
	recent := time.Since(p.lastDialFail) < n.cfg.Heartbeat
	p.mu.Unlock()
	if c != nil || n.cfg.Mode == Perf || recent {
		return c
	}
	d := net.Dialer{Timeout: n.dialTimeout()}
	c, err := d.DialContext(n.ctx, "tcp", p.addr)
	if err != nil {
		p.mu.Lock()
		p.lastDialFail = time.Now()
		p.mu.Unlock()
		if !n.cfg.Mode.VIA() { // a VIA connection that was never accepted is no failure
			n.peerDown(p.id, "dial: "+err.Error())
		}
		return nil
	}
	if !n.track(c) {
		return nil
	}
	p.mu.Lock()
	p.conn, p.accepted = c, false
	p.mu.Unlock()
	n.spawn(func() { n.watchOut(p, c) })
	return c
}

// watchOut reads the outgoing connection only to learn when it breaks (and,
// in the VIA modes, that the peer accepted it).
func (n *node) watchOut(p *peer, c net.Conn) {
	var b [256]byte
	for {
		k, err := c.Read(b[:])
		if k > 0 && b[0] == viaAccept {
			p.mu.Lock()
			if p.conn == c {
				p.accepted = true
			}
			p.mu.Unlock()
		}
		if err != nil {
			n.dropOut(p, c, err)
			return
		}
	}
}

// dropOut forgets a broken outgoing connection and tells Core.
func (n *node) dropOut(p *peer, c net.Conn, err error) {
	p.mu.Lock()
	current := p.conn == c
	report := current && (!n.cfg.Mode.VIA() || p.accepted)
	if current {
		p.conn = nil
		p.outUp, p.accepted = false, false
	}
	p.mu.Unlock()
	n.untrack(c)
	if report && n.ctx.Err() == nil {
		n.peerDown(p.id, err.Error())
	}
}

// connector (perf) dials the peer until the cluster has formed: Hello,
// then wait for the peer's Hello on its own connection.
func (n *node) connector(p *peer) {
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.formed:
			return
		default:
		}
		p.mu.Lock()
		has := p.conn != nil
		p.mu.Unlock()
		if !has {
			n.dialHello(p)
		}
		if !n.sleepCtx(n.cfg.Heartbeat) {
			return
		}
	}
}

func (n *node) dialHello(p *peer) {
	d := net.Dialer{Timeout: n.dialTimeout()}
	c, err := d.DialContext(n.ctx, "tcp", p.addr)
	if err != nil {
		return
	}
	if !n.track(c) {
		return
	}
	frame, _ := AppendFrame(nil, &Message{Type: MsgHello, From: uint16(n.cfg.Node), Inc: n.cfg.Incarnation})
	c.SetWriteDeadline(time.Now().Add(n.dialTimeout()))
	if _, err := c.Write(frame); err != nil {
		n.untrack(c)
		return
	}
	c.SetWriteDeadline(time.Time{})
	p.mu.Lock()
	p.conn, p.outUp = c, true
	p.mu.Unlock()
	n.spawn(func() { n.watchOut(p, c) })
	n.handshake(p)
}

// handshake (perf) admits the peer once both directions are up.
func (n *node) handshake(p *peer) {
	p.mu.Lock()
	both := p.outUp && p.inUp
	p.mu.Unlock()
	if !both {
		return
	}
	n.mu.Lock()
	ok := n.core.PeerUp(p.id)
	serving := n.core.Serving()
	r := n.readyLocked()
	n.mu.Unlock()
	n.dispatch(r, false)
	if serving {
		n.formedOnce.Do(func() { close(n.formed) })
	}
	if !ok {
		p.mu.Lock()
		c := p.conn
		p.mu.Unlock()
		if c != nil {
			n.dropOut(p, c, errors.New("rejected"))
		}
	}
}

func (n *node) acceptLoop(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if !n.track(c) {
			return
		}
		n.spawn(func() { n.readLoop(c) })
	}
}

// readLoop is PRESS's receive helper thread for one incoming connection.
func (n *node) readLoop(c net.Conn) {
	if n.cfg.Mode.VIA() {
		c.SetWriteDeadline(time.Now().Add(n.cfg.MessageTimeout))
		if _, err := c.Write([]byte{viaAccept}); err != nil {
			n.untrack(c)
			return
		}
		c.SetWriteDeadline(time.Time{})
	}
	dec := NewDecoder(c, n.cfg.Mode == Robust)
	from := 0
	var err error
	reported, lastReport := 0, time.Time{}
	for {
		if !n.cfg.Mode.Preallocated() {
			for n.faults.allocBlocked() { // no receive buffer: stop reading
				if !n.sleepCtx(pollAlloc) {
					break
				}
			}
		}
		var m Message
		if m, err = dec.Next(); err != nil {
			break
		}
		if dec.Dropped > reported && time.Since(lastReport) >= time.Second { // at most one event a second
			n.emit("system.corrupt_dropped", "dropped "+itoa(dec.Dropped-reported)+" corrupt message(s) from node "+itoa(int(m.From))+" and resynchronised")
			reported, lastReport = dec.Dropped, time.Now()
		}
		p := n.peers[int(m.From)]
		if p == nil {
			continue
		}
		if from == 0 {
			from = p.id
			n.connMu.Lock()
			n.inPeer[c] = from
			n.connMu.Unlock()
		}
		if m.Type == MsgHello {
			if n.cfg.Mode == Perf {
				p.mu.Lock()
				p.inUp = true
				p.mu.Unlock()
				n.mu.Lock()
				welcome := n.core.Welcome(p.id)
				n.mu.Unlock()
				n.handshake(p)
				if !welcome {
					err = errors.New("rejected")
					break
				}
			}
			continue
		}
		n.step(m)
	}
	n.untrack(c)
	if from == 0 || n.ctx.Err() != nil {
		return
	}
	if errors.Is(err, ErrCorrupt) {
		n.emit("system.corrupt_stream", "closed the connection from node "+itoa(from)+": "+err.Error())
	}
	p := n.peers[from]
	p.mu.Lock()
	p.inUp = false
	p.mu.Unlock()
	n.peerDown(from, "incoming connection: "+err.Error())
}

func itoa(i int) string { return strconv.Itoa(i) }
