package press

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/pageset"
)

// Main runs one PRESS node until ctx ends, then closes every listener and
// connection and waits for every goroutine it started. It returns an error
// at once for a bad Config or an address it cannot listen on, and nil after
// a clean stop.
func Main(ctx context.Context, cfg Config) error {
	n, err := newNode(cfg)
	if err != nil {
		return err
	}
	return n.run(ctx)
}

// node is the thin layer of goroutines, sockets and timers around Core.
type node struct {
	cfg    Config
	faults *commFaults

	mu      sync.Mutex // guards core and waiters
	core    *Core
	waiters map[uint64]chan Completion

	mainMu sync.Mutex // perf: the single coordinating thread
	open   atomic.Int64
	cpus   *cpus // per-request processing; nil without it
	peers  map[int]*peer

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	connMu sync.Mutex
	conns  map[net.Conn]struct{} // every intra-cluster connection, to close on stop
	inPeer map[net.Conn]int      // incoming connections → the peer that dialled them

	formed     chan struct{} // closed when Core starts serving
	formedOnce sync.Once

	fatal chan error // VIA fail-fast: the node terminates with this error
}

// ErrFailFast is returned by Main when a VIA-mode node terminated itself on
// a communication error, as PRESS does (fail-fast); the operator's restart
// brings it back.
var ErrFailFast = errors.New("press: fail-fast")

func newNode(cfg Config) (*node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.Incarnation == 0 {
		cfg.Incarnation = uint32(time.Now().UnixNano()>>10) | 1
	}
	ids := make([]int, 0, len(cfg.Peers))
	for id := range cfg.Peers {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	size := cfg.PageSize
	n := &node{
		cfg:     cfg,
		faults:  newCommFaults(cfg.Seed),
		waiters: map[uint64]chan Completion{},
		peers:   map[int]*peer{},
		conns:   map[net.Conn]struct{}{},
		inPeer:  map[net.Conn]int{},
		formed:  make(chan struct{}),
		fatal:   make(chan error, 1),
		cpus:    newCPUs(cfg.ProcessCPUs, cfg.ProcessTime),
	}
	n.core = NewCore(CoreConfig{
		Node: cfg.Node, Mode: cfg.Mode, Peers: ids, Incarnation: cfg.Incarnation,
		CachePages: cfg.CachePages, MissedBeats: cfg.MissedBeats, BusyConns: cfg.BusyConns,
		ReadPage: func(file uint32) []byte { return pageset.Body(int(file), size) },
	})
	for _, id := range ids {
		n.peers[id] = &peer{id: id, addr: cfg.Peers[id], q: make(chan outMsg, cfg.QueueLen)}
	}
	return n, nil
}

func (n *node) run(parent context.Context) error {
	intra, err := net.Listen("tcp", n.cfg.IntraAddr)
	if err != nil {
		return fmt.Errorf("press node %d: intra-cluster listener: %w", n.cfg.Node, err)
	}
	var ctl net.Listener
	if n.cfg.ControlAddr != "" {
		if ctl, err = net.Listen("tcp", n.cfg.ControlAddr); err != nil {
			intra.Close()
			return fmt.Errorf("press node %d: control listener: %w", n.cfg.Node, err)
		}
	}
	var httpLn net.Listener
	if n.cfg.Mode != Perf { // perf opens its doors only once its cluster has formed
		if httpLn, err = net.Listen("tcp", n.cfg.HTTPAddr); err != nil {
			intra.Close()
			if ctl != nil {
				ctl.Close()
			}
			return fmt.Errorf("press node %d: http listener: %w", n.cfg.Node, err)
		}
	}
	n.ctx, n.cancel = context.WithCancel(parent)
	defer n.cancel()

	n.mu.Lock()
	n.core.Start()
	r := n.readyLocked()
	if n.core.Serving() {
		n.formedOnce.Do(func() { close(n.formed) })
	}
	n.mu.Unlock()

	n.spawn(func() { n.acceptLoop(intra) })
	for _, p := range n.peers {
		p := p
		n.spawn(func() { n.writer(p) })
		if n.cfg.Mode == Perf {
			n.spawn(func() { n.connector(p) })
		}
	}
	n.dispatch(r, false)
	if n.cfg.Mode != Perf {
		n.spawn(n.ticker)
	} else {
		n.spawn(n.watchForming)
	}

	srv := &http.Server{Handler: n.handler(), ReadHeaderTimeout: 10 * time.Second}
	var ctlSrv *http.Server
	if ctl != nil {
		ctlSrv = &http.Server{Handler: n.controlHandler(), ReadHeaderTimeout: 10 * time.Second}
		n.spawn(func() { _ = ctlSrv.Serve(ctl) })
	}
	errc := make(chan error, 1)
	n.spawn(func() {
		if httpLn == nil {
			select {
			case <-n.formed:
			case <-n.ctx.Done():
				return
			}
			ln, err := net.Listen("tcp", n.cfg.HTTPAddr)
			if err != nil {
				errc <- fmt.Errorf("press node %d: http listener: %w", n.cfg.Node, err)
				return
			}
			httpLn = ln
		}
		if err := srv.Serve(&limitListener{Listener: httpLn, n: n}); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	})

	var runErr error
	select {
	case <-n.ctx.Done():
	case runErr = <-errc:
	case runErr = <-n.fatal:
	}
	n.cancel() // every wait in a handler ends with it
	intra.Close()
	n.closeConns()
	// Give handlers a moment to return so none outlives Main, then cut.
	shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if srv.Shutdown(shutdown) != nil {
		srv.Close()
	}
	if ctlSrv != nil {
		ctlSrv.Close()
	}
	n.wg.Wait()
	return runErr
}

func (n *node) spawn(f func()) {
	n.wg.Add(1)
	go func() { defer n.wg.Done(); f() }()
}

func (n *node) ticker() {
	t := time.NewTicker(n.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		n.mu.Lock()
		n.core.SetLoad(int(n.open.Load()))
		n.applyPinLocked()
		n.core.Tick()
		r := n.readyLocked()
		n.mu.Unlock()
		n.dispatch(r, false)
	}
}

// watchForming (perf) reports once if the cluster has not formed within the
// join window: a restarted node waiting for a restart-all, or a peer that
// never came up. The node keeps trying until it forms or stops.
func (n *node) watchForming() {
	t := time.NewTimer(n.cfg.JoinWindow)
	defer t.Stop()
	select {
	case <-n.formed:
	case <-n.ctx.Done():
	case <-t.C:
		n.mu.Lock()
		members := n.core.Members()
		n.mu.Unlock()
		n.emit("system.join_stalled", fmt.Sprintf("no full cluster after %v: connected %v of %d nodes; perf waits for a restart of the whole cluster", n.cfg.JoinWindow, members, len(n.peers)+1))
	}
}

// step feeds one received message to Core.
func (n *node) step(m Message) {
	n.mu.Lock()
	n.core.SetLoad(int(n.open.Load()))
	n.core.Step(m)
	r := n.readyLocked()
	n.mu.Unlock()
	n.dispatch(r, false)
}

func (n *node) peerDown(id int, why string) {
	n.mu.Lock()
	n.core.PeerDown(id, why)
	r := n.readyLocked()
	n.mu.Unlock()
	n.dispatch(r, false)
}

// applyPinLocked gives a via5 Core the pin limit of the active mem-pin-fail
// faults (checked every heartbeat and when a fault is posted or removed).
// The caller holds n.mu.
func (n *node) applyPinLocked() {
	if !n.cfg.Mode.ZeroCopy() {
		return
	}
	limit := 0
	if frac, ok := n.faults.pinnable(); ok {
		limit = max(1, int(frac*float64(n.cfg.CachePages)))
	}
	n.core.SetPinLimit(limit)
}

func (n *node) applyPin() {
	n.mu.Lock()
	n.applyPinLocked()
	r := n.readyLocked()
	n.mu.Unlock()
	n.dispatch(r, false)
}

// sendFailed reports a send descriptor error for a message to peer (VIA
// modes fail fast on it).
func (n *node) sendFailed(peer int, kind CommFault) {
	n.mu.Lock()
	n.core.SendFailed(peer, string(kind))
	r := n.readyLocked()
	n.mu.Unlock()
	n.dispatch(r, false)
}

// readyLocked drains Core's output. ha and robust enqueue the messages
// here, under the lock that stamped their sequence numbers, so that every
// peer's queue holds them in sequence order; their queues never block (a
// full queue loses the message, as a helper thread that falls behind does).
// perf's messages are enqueued by dispatch, outside the lock, because its
// queues block. The caller holds n.mu.
func (n *node) readyLocked() Ready {
	r := n.core.Ready()
	if n.cfg.Mode == Perf {
		return r
	}
	var keep []Envelope // remote-fault notices are written by dispatch, before the node stops
	for _, e := range r.Msgs {
		if e.Msg.Type == MsgRemoteFault {
			keep = append(keep, e)
			continue
		}
		if p := n.peers[e.To]; p != nil {
			select {
			case p.q <- outMsg{m: e.Msg}:
			default:
			}
		}
	}
	r.Msgs = keep
	return r
}

// dispatch hands Core's output to the transport, the waiting requests and
// the event sink. With wait (perf's serving path) it returns only when every
// message has been written — or the stall limit passed.
func (n *node) dispatch(r Ready, wait bool) {
	// Completions and events first: they must reach their waiters even if
	// the node is stopping and the messages never leave.
	for _, c := range r.Done {
		n.mu.Lock()
		ch := n.waiters[c.ReqID]
		delete(n.waiters, c.ReqID)
		n.mu.Unlock()
		if ch != nil {
			ch <- c
		}
	}
	for _, ev := range r.Events {
		n.emit(ev.Kind, ev.Detail)
	}
	for _, id := range r.Disconnect {
		n.disconnect(id)
	}
	if r.Fatal != "" {
		n.failFast(r)
		return
	}
	var dones []chan error
	for _, e := range r.Msgs {
		p := n.peers[e.To]
		if p == nil {
			continue
		}
		om := outMsg{m: e.Msg}
		if wait {
			om.done = make(chan error, 1)
			dones = append(dones, om.done)
		}
		select { // perf's queue blocks when full: backpressure, not loss
		case p.q <- om:
		case <-n.ctx.Done():
			return
		}
	}
	if len(dones) == 0 {
		return
	}
	limit := time.NewTimer(n.cfg.StallLimit)
	defer limit.Stop()
	for _, d := range dones {
		select {
		case <-d:
		case <-limit.C:
			return
		case <-n.ctx.Done():
			return
		}
	}
}

func (n *node) emit(kind, detail string) {
	if n.cfg.OnEvent != nil {
		n.cfg.OnEvent(kind, detail)
	}
}

// serve answers one client request for a page: Core decides, perf holds
// its single coordinating thread throughout, ha and robust wait only for
// their own forward.
func (n *node) serve(ctx context.Context, file uint32) ([]byte, Source, error) {
	if n.cfg.Mode == Perf {
		n.mainMu.Lock()
		defer n.mainMu.Unlock()
	}
	var ch chan Completion
	n.mu.Lock()
	n.core.SetLoad(int(n.open.Load()))
	data, src, reqID, forwarded := n.core.Serve(file)
	if forwarded {
		ch = make(chan Completion, 1)
		n.waiters[reqID] = ch
	}
	r := n.readyLocked()
	n.mu.Unlock()
	n.dispatch(r, n.cfg.Mode == Perf)
	if !forwarded {
		return data, src, nil
	}
	wait := n.cfg.StallLimit
	if n.cfg.Mode == Robust {
		wait = n.cfg.ForwardTimeout
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	var gone <-chan struct{}
	if n.cfg.Mode != Perf {
		gone = ctx.Done() // perf's thread cannot notice a client leaving
	}
	select {
	case c := <-ch:
		return c.Data, c.Source, nil
	case <-t.C:
	case <-gone:
	case <-n.ctx.Done():
		return nil, 0, n.ctx.Err()
	}
	n.mu.Lock()
	n.core.Timeout(reqID)
	r = n.readyLocked()
	n.mu.Unlock()
	n.dispatch(r, false)
	select { // Timeout completed it, or it completed just before
	case c := <-ch:
		return c.Data, c.Source, nil
	case <-n.ctx.Done():
		return nil, 0, n.ctx.Err()
	}
}

func (n *node) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /p/{i}", func(w http.ResponseWriter, r *http.Request) {
		open := n.open.Add(1)
		defer n.open.Add(-1)
		i, ok := pageset.ParsePath(r.URL.Path)
		if !ok || i >= n.cfg.Pages {
			http.NotFound(w, r)
			return
		}
		if n.cfg.Mode == Robust && int(open) > n.cfg.MaxConns {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "press: overloaded", http.StatusServiceUnavailable)
			return
		}
		// Processing comes before the page is fetched and outside perf's
		// coordinating thread: the request is computed on one of the
		// node's processors, then served as a static page would be, so a
		// request stalled on a hung peer holds no processor.
		err := n.cpus.process(n.ctx)
		var data []byte
		var src Source
		if err == nil {
			data, src, err = n.serve(r.Context(), uint32(i))
		}
		if err != nil {
			http.Error(w, "press: stopping", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.Header().Set("X-Press-Node", strconv.Itoa(n.cfg.Node))
		w.Header().Set("X-Press-Source", src.String())
		_, _ = w.Write(data)
	})
	return mux
}

// limitListener is PRESS's own load shedding in perf and ha: above MaxConns
// open connections it stops accepting, so clients wait in the backlog until
// their connect timeout (Broadwell 2004, §4.1). robust accepts and answers 503.
type limitListener struct {
	net.Listener
	n *node
}

func (l *limitListener) Accept() (net.Conn, error) {
	for l.n.cfg.Mode != Robust && int(l.n.open.Load()) >= l.n.cfg.MaxConns {
		select {
		case <-l.n.ctx.Done():
			return nil, net.ErrClosed
		case <-time.After(5 * time.Millisecond):
		}
	}
	return l.Listener.Accept()
}
