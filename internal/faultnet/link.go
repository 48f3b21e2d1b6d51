package faultnet

import (
	"errors"
	"fmt"
	"math/rand"
	"net"
	"sync"
	"time"
)

// ErrClosed is returned by Set on a closed Link or Net.
var ErrClosed = errors.New("faultnet: closed")

const (
	chunkSize   = 32 << 10
	dialTimeout = 2 * time.Second
)

// Link is a TCP proxy from one listen address to one upstream address with a
// runtime-settable fault state. All methods are safe for concurrent use.
type Link struct {
	ln       net.Listener
	upstream string

	mu      sync.Mutex
	rng     *rand.Rand // guarded by mu; the only source of randomness
	layers  map[uint64]State
	nextID  uint64
	state   State         // merge of layers
	since   time.Time     // when state last changed (flaky phase origin)
	changed chan struct{} // closed and replaced on every change
	conns   map[*proxyConn]struct{}
	buckets [2]time.Time // next free send time per direction (bandwidth)
	closed  bool

	done chan struct{}
	wg   sync.WaitGroup
}

// Listen starts a proxy on listenAddr (e.g. "127.0.0.1:0") forwarding to
// upstream. The upstream need not be up yet: it is dialled per accepted
// connection, and a failed dial closes that connection. seed drives loss.
func Listen(listenAddr, upstream string, seed int64) (*Link, error) {
	ln, err := net.Listen("tcp", listenAddr)
	if err != nil {
		return nil, fmt.Errorf("faultnet: listen %s for %s: %w", listenAddr, upstream, err)
	}
	l := &Link{
		ln:       ln,
		upstream: upstream,
		rng:      rand.New(rand.NewSource(seed)),
		layers:   map[uint64]State{},
		since:    time.Now(),
		changed:  make(chan struct{}),
		conns:    map[*proxyConn]struct{}{},
		done:     make(chan struct{}),
	}
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

// Addr is the address clients of this link dial.
func (l *Link) Addr() string { return l.ln.Addr().String() }

// Upstream is the address the link forwards to.
func (l *Link) Upstream() string { return l.upstream }

// State returns the fault state now in force (the merge of every Set not yet
// reverted).
func (l *Link) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state
}

// Set adds a fault layer and returns the function that removes it again;
// calling the revert twice is harmless. Setting a Cut down mode resets every
// open connection at once.
func (l *Link) Set(s State) (revert func(), err error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, ErrClosed
	}
	l.nextID++
	id := l.nextID
	l.layers[id] = s
	l.recomputeLocked()
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.closed {
				return
			}
			delete(l.layers, id)
			l.recomputeLocked()
		})
	}, nil
}

// Clear removes every fault layer.
func (l *Link) Clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.layers)
	l.recomputeLocked()
}

func (l *Link) recomputeLocked() {
	var st State
	for _, s := range l.layers {
		st = merge(st, s)
	}
	l.state = st
	l.since = time.Now()
	close(l.changed)
	l.changed = make(chan struct{})
	if st.Down == Cut {
		for pc := range l.conns {
			pc.close()
		}
	}
}

// Close stops the listener, closes every proxied connection, removes every
// fault and waits until every goroutine of the link has returned.
func (l *Link) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	clear(l.layers)
	close(l.done)
	for pc := range l.conns {
		pc.close()
	}
	l.mu.Unlock()
	err := l.ln.Close()
	l.wg.Wait()
	return err
}

func (l *Link) acceptLoop() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return // closed
		}
		pc := &proxyConn{client: c}
		l.mu.Lock()
		if l.closed || l.state.downAt(l.since, time.Now()) == Cut {
			l.mu.Unlock()
			c.Close() // refused: the closest userspace gets to a RST on SYN
			continue
		}
		l.conns[pc] = struct{}{}
		l.wg.Add(1)
		l.mu.Unlock()
		go l.serve(pc)
	}
}

type proxyConn struct {
	mu       sync.Mutex
	client   net.Conn
	upstream net.Conn
	closed   bool
}

func (pc *proxyConn) close() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.closed {
		return
	}
	pc.closed = true
	if tc, ok := pc.client.(*net.TCPConn); ok {
		tc.SetLinger(0) // a reset, so the peer learns at once
	}
	pc.client.Close()
	if pc.upstream != nil {
		pc.upstream.Close()
	}
}

func (pc *proxyConn) isClosed() bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.closed
}

func (l *Link) serve(pc *proxyConn) {
	defer l.wg.Done()
	defer func() {
		pc.close()
		l.mu.Lock()
		delete(l.conns, pc)
		l.mu.Unlock()
	}()
	// A held link accepts but does not connect until it comes back.
	if !l.waitUp(pc) {
		return
	}
	d := net.Dialer{Timeout: dialTimeout}
	up, err := d.Dial("tcp", l.upstream)
	if err != nil {
		return
	}
	pc.mu.Lock()
	if pc.closed {
		pc.mu.Unlock()
		up.Close()
		return
	}
	pc.upstream = up
	pc.mu.Unlock()
	var pumps sync.WaitGroup
	pumps.Add(2)
	go func() { defer pumps.Done(); l.pump(pc, pc.client, up, 0) }()
	go func() { defer pumps.Done(); l.pump(pc, up, pc.client, 1) }()
	pumps.Wait()
}

// pump copies src to dst chunk by chunk, passing every chunk through the
// fault gate. Either side ending closes both.
func (l *Link) pump(pc *proxyConn, src, dst net.Conn, dir int) {
	defer pc.close()
	buf := make([]byte, chunkSize)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !l.gate(pc, n, dir) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// waitUp blocks while the link is held down; false when it is cut, the
// connection closed or the link closed.
func (l *Link) waitUp(pc *proxyConn) bool {
	for {
		l.mu.Lock()
		st, since, changed := l.state, l.since, l.changed
		l.mu.Unlock()
		now := time.Now()
		switch st.downAt(since, now) {
		case Up:
			return !pc.isClosed()
		case Cut:
			return false
		}
		// Held: wake on a state change, on the next flaky phase, or on close.
		wake := time.Hour
		if st.Flaky != nil && st.Down == Up {
			period := st.Flaky.Up + st.Flaky.Down
			wake = period - now.Sub(since)%period
		}
		t := time.NewTimer(wake)
		select {
		case <-changed:
		case <-t.C:
		case <-l.done:
			t.Stop()
			return false
		}
		t.Stop()
		if pc.isClosed() {
			return false
		}
	}
}

// gate applies the fault state to one chunk of n bytes: waits out a hold,
// then the delay, a loss's retransmission timeout and the bandwidth budget.
func (l *Link) gate(pc *proxyConn, n int, dir int) bool {
	if !l.waitUp(pc) {
		return false
	}
	l.mu.Lock()
	st := l.state
	wait := st.Delay
	if st.Loss > 0 && l.rng.Float64() < st.Loss {
		rto := st.RTO
		if rto == 0 {
			rto = DefaultRTO
		}
		wait += rto
	}
	if st.Bandwidth > 0 {
		now := time.Now()
		start := l.buckets[dir]
		if start.Before(now) {
			start = now
		}
		end := start.Add(time.Duration(float64(n) / float64(st.Bandwidth) * float64(time.Second)))
		l.buckets[dir] = end
		if d := end.Sub(now); d > wait {
			wait = d
		}
	}
	l.mu.Unlock()
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return !pc.isClosed()
	case <-l.done:
		return false
	}
}
