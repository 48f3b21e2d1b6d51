package press

import (
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"sort"
	"strings"
)

// Source says where a served page came from.
type Source uint8

const (
	FromCache  Source = iota + 1 // the node's own memory cache
	FromRemote                   // another node's cache, via a forward
	FromDisk                     // the node's page set
)

func (s Source) String() string {
	switch s {
	case FromCache:
		return "hit"
	case FromRemote:
		return "remote"
	case FromDisk:
		return "disk"
	}
	return "none"
}

// Envelope is a message Core wants sent to node To.
type Envelope struct {
	To  int
	Msg Message
}

// Completion ends a forwarded request: Data is the page, from a peer
// (FromRemote) or, when the forward failed, from the page set (FromDisk).
type Completion struct {
	ReqID  uint64
	Data   []byte
	Source Source
}

// Event is a system.* event for the run's timeline.
type Event struct {
	Kind   string // e.g. "system.member_down"
	Detail string
}

// Ready is what Core produced since the last call to Ready: messages to
// send, forwards completed, events to report. The caller owns it.
type Ready struct {
	Msgs   []Envelope
	Done   []Completion
	Events []Event
	// Disconnect (VIA modes) lists peers whose connections the node must
	// close: a VIA connection break is seen at both ends.
	Disconnect []int
	// Fatal (VIA modes), when set, says why the node must terminate itself
	// now (PRESS's fail-fast on a descriptor error), after writing any
	// MsgRemoteFault in Msgs.
	Fatal string
}

// CoreConfig is the part of Config the state machine needs.
type CoreConfig struct {
	Node        int
	Mode        Mode
	Peers       []int                    // every other node id
	Incarnation uint32                   // this run of the node
	CachePages  int                      // cache capacity
	MissedBeats int                      // ticks without news before a peer is failed
	BusyConns   int                      // peers reporting more open requests are not forwarded to
	ReadPage    func(file uint32) []byte // the page set ("disk"); must be deterministic
}

// Stats counts what Core did.
type Stats struct {
	Hits, Remote, Disk       uint64 // requests served from cache, a peer, the page set
	Forwarded, Fallbacks     uint64 // forwards sent; forwards that ended on the page set
	ForwardsServed           uint64 // peers' forwards this node answered
	OutOfSequence, Discarded uint64 // ha messages dropped for a sequence gap; messages from non-members ignored
}

// Core is one PRESS node's protocol: cache, directory of the peers' caches,
// membership and forwarding, for one Mode. It advances only when called —
// Start, Serve, Step (a message arrived), Tick (a heartbeat period passed),
// PeerUp/PeerDown (the transport's view of connections) and Timeout — and
// never blocks, reads a clock or draws a random number, so the same calls
// produce the same Ready every time. It is not safe for concurrent use:
// the node serialises calls with a mutex.
type Core struct {
	cfg     CoreConfig
	self    uint64 // bit of this node
	all     uint64 // bits of every configured node
	cache   *lru
	dir     map[uint32]uint64 // file → peers caching it (never self)
	members uint64            // current view, including self
	view    uint32
	load    uint32
	round   uint32 // heartbeat rounds ticked (ha: synchronised only by a view)

	peerLoad map[int]uint32
	peerInc  map[int]uint32
	seqOut   map[int]uint32
	seqIn    map[int]uint32 // ha: last sequence number accepted per sender

	// perf
	forming bool
	removed uint64 // perf: failed peers, never let back in
	// ha
	joining    bool
	joinTicks  int
	pred       int
	missed     int
	heardPred  bool
	oosPending map[int]int
	// robust
	silent      map[int]int // ticks since a peer was last heard from (robust, via*)
	unreachable uint64      // robust: do not forward here until heard from again
	// via*
	cutOff   map[int]uint32 // peer → the incarnation whose connection broke: not let back in (no merge)
	pinLimit int            // via5: pages that can be pinned now; 0 = no shortage
	fatal    string         // why the node failed fast; "" while it runs

	pending map[uint64]pendingForward
	nextReq uint64

	ready Ready
	stats Stats
}

// viaCreditTicks is how many heartbeat periods a VIA connection may go
// without a message from the peer (each node sends a flow-control credit
// every period) before the transport reports it broken. It stands in for
// VIA's reliable-delivery mode, where a message that cannot be delivered
// (no receive descriptor posted by a hung peer, a dead link) breaks the
// connection at both ends within the hardware's retry time.
const viaCreditTicks = 2

// staleRounds is how many heartbeat rounds ha lets a message lag behind the
// receiver before it counts as out of sequence (timer jitter between nodes
// is at most about one round).
const staleRounds = 2

type pendingForward struct {
	to   int
	file uint32
}

func bit(id int) uint64 { return 1 << uint(id-1) }

// NewCore returns the state machine for one node. Call Start before anything
// else.
func NewCore(cfg CoreConfig) *Core {
	c := &Core{
		cfg:        cfg,
		self:       bit(cfg.Node),
		cache:      newLRU(cfg.CachePages),
		dir:        map[uint32]uint64{},
		peerLoad:   map[int]uint32{},
		peerInc:    map[int]uint32{},
		seqOut:     map[int]uint32{},
		seqIn:      map[int]uint32{},
		oosPending: map[int]int{},
		silent:     map[int]int{},
		cutOff:     map[int]uint32{},
		pending:    map[uint64]pendingForward{},
	}
	c.cfg.Peers = slices.Sorted(slices.Values(cfg.Peers))
	c.all = c.self
	for _, p := range c.cfg.Peers {
		c.all |= bit(p)
	}
	return c
}

// Start sets the initial membership and sends the first messages.
//
//   - perf: alone and forming; PeerUp adds each peer until all are in.
//   - ha: the whole configured cluster (a static bootstrap, as PRESS reads
//     its node list), announcing itself with a Join so that a restarted node
//     is let back in by the coordinator.
//   - robust: alone; heartbeats from peers merge them in.
//   - via*: alone, serving; it offers a connection to every peer (a
//     heartbeat as the first flow-control credit) and admits each peer
//     whose message arrives, sending it its cache, as Nagaraja et al.'s (2002) VIA
//     versions reintegrate a node by re-establishing connections.
func (c *Core) Start() {
	switch c.cfg.Mode {
	case Perf:
		c.members = c.self
		c.forming = true
	case HA:
		c.members = c.all
		c.joining = true
		c.broadcastAll(Message{Type: MsgJoin})
	case Robust, Via0, Via3, Via5:
		c.members = c.self
		c.broadcastAll(Message{Type: MsgHeartbeat})
	}
	c.event("system.start", "mode %v incarnation %d members %s", c.cfg.Mode, c.cfg.Incarnation, c.memberList())
}

// Ready returns and clears what Core produced since the last call.
func (c *Core) Ready() Ready {
	r := c.ready
	c.ready = Ready{}
	return r
}

// Failed returns why the node failed fast (VIA modes), "" while it runs.
func (c *Core) Failed() string { return c.fatal }

func (c *Core) failFast(why string) {
	if c.fatal != "" {
		return
	}
	c.fatal = why
	c.ready.Fatal = why
	c.event("system.fail_fast", "%s", why)
}

// SendFailed tells Core that the communication layer reported an error for
// a message to peer to (a bad-param comm fault: NULL or off-by-N data
// pointer or size in the send descriptor). perf, ha and robust see a lost
// or corrupted message and carry on. The VIA modes diagnose the error as
// fatal and terminate (Nagaraja et al. 2002, §5, Fig. 5); via3 and via5 send every
// message as a remote memory write, so the error is reported on the
// receiving node too (a MsgRemoteFault) and it terminates as well.
func (c *Core) SendFailed(to int, kind string) {
	if !c.cfg.Mode.VIA() || c.fatal != "" {
		return
	}
	if c.cfg.Mode.RemoteWrite() && c.isPeer(to) {
		c.send(to, Message{Type: MsgRemoteFault, Node: uint16(c.cfg.Node)})
	}
	c.failFast(fmt.Sprintf("%s: a send descriptor to node %d completed in error", kind, to))
}

// SetPinLimit (via5) bounds how many pages the node can pin; 0 lifts the
// bound. via5 sends file data straight from its cache, so every cached page
// is pinned: under a shortage of pinnable memory the node drops cached
// files (least recently used first, telling its peers) until it fits, and
// caches at most limit pages until the shortage ends (Nagaraja et al. 2002, §5, Fig. 4).
// Other modes copy into pre-allocated or kernel buffers and ignore it.
func (c *Core) SetPinLimit(limit int) {
	if !c.cfg.Mode.ZeroCopy() || limit == c.pinLimit || limit < 0 {
		return
	}
	c.pinLimit = limit
	if limit == 0 {
		c.event("system.pin_restored", "pinnable memory available again; cache capacity %d pages", c.cfg.CachePages)
		return
	}
	dropped := c.shrinkTo(limit)
	c.event("system.pin_shortage", "cannot pin memory: dropped %d cached files, caching at most %d pages", dropped, limit)
}

// shrinkTo evicts least recently used pages until at most n are cached,
// telling the peers; it returns how many it dropped.
func (c *Core) shrinkTo(n int) int {
	dropped := 0
	for c.cache.len() > n {
		f, ok := c.cache.evictOldest()
		if !ok {
			break
		}
		dropped++
		c.broadcast(Message{Type: MsgEvicted, File: f})
	}
	return dropped
}

// SetLoad records this node's open client requests, piggy-backed on every
// message sent from now on.
func (c *Core) SetLoad(n int) { c.load = uint32(max(n, 0)) }

// Serving reports whether the node should accept client requests: perf waits
// until its cluster has formed.
func (c *Core) Serving() bool { return !c.forming }

// Members returns the current view, ascending.
func (c *Core) Members() []int { return c.ids(c.members) }

// Stats returns the counters.
func (c *Core) Stats() Stats { return c.stats }

// CacheLen is the number of cached pages.
func (c *Core) CacheLen() int { return c.cache.len() }

// Serve handles a client request for a page. When the page is at hand —
// cached, or read from the page set (which caches it and broadcasts the
// change) — it returns the data and its source. Otherwise it forwards the
// request to the least loaded member caching the page and returns
// forwarded=true with the request id whose Completion a later Ready holds.
// The returned data must not be modified.
func (c *Core) Serve(file uint32) (data []byte, src Source, reqID uint64, forwarded bool) {
	if d, ok := c.cache.get(file); ok {
		c.stats.Hits++
		return d, FromCache, 0, false
	}
	if to := c.forwardTarget(file); to != 0 {
		c.nextReq++
		c.pending[c.nextReq] = pendingForward{to: to, file: file}
		c.stats.Forwarded++
		c.send(to, Message{Type: MsgForward, ReqID: c.nextReq, File: file})
		return nil, 0, c.nextReq, true
	}
	c.stats.Disk++
	d := c.readAndCache(file)
	return d, FromDisk, 0, false
}

// forwardTarget picks the member caching file with the fewest open requests
// (lowest id on ties), skipping busy and unreachable peers; 0 for none.
func (c *Core) forwardTarget(file uint32) int {
	cand := c.dir[file] & c.members &^ c.self &^ c.unreachable
	best, bestLoad := 0, uint32(0)
	for cand != 0 {
		id := bits.TrailingZeros64(cand) + 1
		cand &^= bit(id)
		l := c.peerLoad[id]
		if int(l) > c.cfg.BusyConns {
			continue
		}
		if best == 0 || l < bestLoad {
			best, bestLoad = id, l
		}
	}
	return best
}

func (c *Core) readAndCache(file uint32) []byte {
	d := c.cfg.ReadPage(file)
	c.insert(file, d)
	return d
}

func (c *Core) insert(file uint32, data []byte) {
	if c.cache.has(file) {
		c.cache.put(file, data)
		return
	}
	if c.pinLimit > 0 {
		c.shrinkTo(c.pinLimit - 1) // via5: unpin an old page to pin the new one
	}
	if ev, did := c.cache.put(file, data); did {
		c.broadcast(Message{Type: MsgEvicted, File: ev})
	}
	c.broadcast(Message{Type: MsgCached, File: file})
}

// Timeout gives up waiting for forward reqID (robust's forward timeout, or
// the stall limit): the page is read from the page set. Unknown ids are
// ignored.
func (c *Core) Timeout(reqID uint64) {
	if p, ok := c.pending[reqID]; ok {
		c.fallback(reqID, p)
	}
}

func (c *Core) fallback(reqID uint64, p pendingForward) {
	delete(c.pending, reqID)
	c.stats.Fallbacks++
	c.stats.Disk++
	c.ready.Done = append(c.ready.Done, Completion{ReqID: reqID, Data: c.readAndCache(p.file), Source: FromDisk})
}

func (c *Core) failPending(peer int) {
	ids := make([]uint64, 0)
	for id, p := range c.pending {
		if p.to == peer {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids) // deterministic order of completions
	for _, id := range ids {
		c.fallback(id, c.pending[id])
	}
}

// PeerUp tells Core that connections to and from peer are established (perf
// handshake). It reports whether the peer is welcome; false means the node
// must drop the connection (perf never lets a failed node back in).
func (c *Core) PeerUp(peer int) bool {
	if c.cfg.Mode != Perf || !c.isPeer(peer) {
		return c.isPeer(peer)
	}
	if c.removed&bit(peer) != 0 || !c.forming {
		return c.members&bit(peer) != 0
	}
	if c.members&bit(peer) == 0 {
		c.members |= bit(peer)
		c.event("system.member_up", "node %d connected; members %s", peer, c.memberList())
	}
	if c.members == c.all {
		c.forming = false
		c.event("system.cluster_formed", "members %s", c.memberList())
	}
	return true
}

// Welcome reports whether a connection from peer may stay open: perf turns
// away a peer it removed, and anyone new once its cluster has formed.
func (c *Core) Welcome(peer int) bool {
	if !c.isPeer(peer) {
		return false
	}
	if c.cfg.Mode != Perf {
		return true
	}
	return c.removed&bit(peer) == 0 && (c.forming || c.members&bit(peer) != 0)
}

// PeerDown tells Core a connection to or from peer broke (or could not be
// made). perf removes the peer for good (connection-based detection); ha
// ignores it (only heartbeats count); robust stops forwarding to it and
// reads the pages it was waiting for from the page set at once; the VIA
// modes remove a member at once, close its other connections and keep that
// incarnation out (no merge after a partition; a restarted node is let in).
func (c *Core) PeerDown(peer int, why string) {
	if !c.isPeer(peer) {
		return
	}
	switch c.cfg.Mode {
	case Perf:
		if c.members&bit(peer) == 0 {
			return
		}
		if !c.forming {
			c.removed |= bit(peer)
		}
		c.remove(peer, "connection broken: "+why)
	case Robust:
		if c.unreachable&bit(peer) == 0 {
			c.unreachable |= bit(peer)
			c.failPending(peer)
		}
	case Via0, Via3, Via5:
		if c.members&bit(peer) == 0 {
			return // not connected yet: a dial to a node still starting
		}
		c.cutOff[peer] = c.peerInc[peer]
		c.remove(peer, "connection broken: "+why)
		c.ready.Disconnect = append(c.ready.Disconnect, peer)
	}
}

func (c *Core) remove(peer int, why string) {
	if c.members&bit(peer) == 0 {
		return
	}
	c.members &^= bit(peer)
	c.view++
	c.forget(peer)
	c.failPending(peer)
	c.event("system.member_down", "node %d removed (%s); members %s", peer, why, c.memberList())
}

// forget drops every directory entry of peer.
func (c *Core) forget(peer int) {
	b := bit(peer)
	for f, set := range c.dir {
		if set&b != 0 {
			if set &^= b; set == 0 {
				delete(c.dir, f)
			} else {
				c.dir[f] = set
			}
		}
	}
}

func (c *Core) isPeer(id int) bool {
	return id >= 1 && id <= MaxNodes && id != c.cfg.Node && c.all&bit(id) != 0
}

// Step advances Core by one received message.
func (c *Core) Step(m Message) {
	from := int(m.From)
	if !c.isPeer(from) {
		c.stats.Discarded++
		return
	}
	if m.Type == MsgRemoteFault {
		// Reported by the NIC on this node, whatever the membership says:
		// the write landed here even if the connection has broken since.
		if c.cfg.Mode.RemoteWrite() {
			c.failFast(fmt.Sprintf("remote memory write from node %d reported an error here", from))
		}
		return
	}
	if !c.accept(from, &m) {
		return
	}
	c.peerLoad[from] = m.Load
	switch m.Type {
	case MsgHeartbeat:
		if from == c.pred {
			c.heardPred = true
		}
	case MsgJoin:
		c.onJoin(from)
	case MsgView:
		c.onView(from, m)
	case MsgFailed:
		if c.cfg.Mode == HA && int(m.Node) != c.cfg.Node && c.members&bit(int(m.Node)) != 0 {
			c.view = max(c.view, m.View)
			c.remove(int(m.Node), fmt.Sprintf("declared failed by node %d", from))
		}
	case MsgCached:
		c.dir[m.File] |= bit(from)
	case MsgEvicted:
		if set := c.dir[m.File] &^ bit(from); set == 0 {
			delete(c.dir, m.File)
		} else {
			c.dir[m.File] = set
		}
	case MsgSync:
		c.forget(from)
		for _, f := range m.Files {
			c.dir[f] |= bit(from)
		}
	case MsgForward:
		c.stats.ForwardsServed++
		d, ok := c.cache.get(m.File)
		c.send(from, Message{Type: MsgFile, ReqID: m.ReqID, File: m.File, OK: ok, Data: d})
	case MsgFile:
		p, ok := c.pending[m.ReqID]
		if !ok || p.to != from {
			return // late: already timed out or failed over
		}
		if !m.OK || m.File != p.file {
			c.fallback(m.ReqID, p)
			return
		}
		delete(c.pending, m.ReqID)
		c.stats.Remote++
		c.insert(p.file, m.Data)
		c.ready.Done = append(c.ready.Done, Completion{ReqID: m.ReqID, Data: m.Data, Source: FromRemote})
	}
}

// accept applies the mode's admission rules to a message from a configured
// peer and reports whether Step should act on it.
func (c *Core) accept(from int, m *Message) bool {
	b := bit(from)
	switch c.cfg.Mode {
	case Perf:
		if c.members&b == 0 {
			c.stats.Discarded++
			return false
		}
	case HA:
		restarted := c.peerInc[from] != m.Inc
		c.peerInc[from] = m.Inc
		if restarted {
			c.forget(from) // a restarted peer's cache is empty
		}
		last, known := c.seqIn[from]
		c.seqIn[from] = m.Seq
		if known && !restarted && m.Seq != last+1 {
			// PRESS-HB's defect (Broadwell 2004, §4.3): a gap means lost messages;
			// the receiver drops the message and distrusts what it knew of
			// the sender's cache.
			c.stats.OutOfSequence++
			c.oosPending[from]++
			c.forget(from)
			return false
		}
		if m.Type == MsgJoin {
			return true
		}
		if c.members&b == 0 {
			c.stats.Discarded++
			return false // no merge: a node outside the view stays outside
		}
		if m.Round+staleRounds < c.round && m.Type != MsgHeartbeat && m.Type != MsgView && m.Type != MsgFailed {
			// The other half of Broadwell (2004) §4.3: HA-PRESS trusts cache, load
			// and forwarding messages only from the current heartbeat
			// round, and rounds are synchronised only when a view is
			// installed. A node that was stopped for a few beats resumes
			// behind; its beats still count, but everything else it sends
			// is dropped — until a join installs a new view (or it is
			// restarted).
			c.stats.OutOfSequence++
			c.oosPending[from]++
			c.forget(from)
			return false
		}
	case Robust:
		if c.peerInc[from] != m.Inc {
			c.forget(from) // a restarted peer's cache is empty
			c.peerInc[from] = m.Inc
		}
		c.silent[from] = 0
		c.unreachable &^= b
		if c.members&b == 0 {
			c.members |= b
			c.view++
			c.event("system.member_up", "node %d heard from; members %s", from, c.memberList())
			c.sendSync(from)
		}
	case Via0, Via3, Via5:
		if c.peerInc[from] != m.Inc {
			c.forget(from) // a restarted peer's cache is empty
			c.peerInc[from] = m.Inc
		}
		if c.members&b == 0 {
			if inc, cut := c.cutOff[from]; cut && inc == m.Inc {
				c.stats.Discarded++
				return false // no merge: the incarnation we broke with stays out
			}
			delete(c.cutOff, from)
			c.members |= b
			c.view++
			c.event("system.member_up", "node %d connected; members %s", from, c.memberList())
			c.sendSync(from)
		}
		c.silent[from] = 0
	}
	return true
}

// onJoin (ha): the coordinator — the lowest id in the view — lets the joiner
// in and tells everyone; robust treats a join like any message.
func (c *Core) onJoin(from int) {
	if c.cfg.Mode != HA || c.lowestMember() != c.cfg.Node {
		return
	}
	c.members |= bit(from)
	c.forget(from)
	c.view++
	c.event("system.member_up", "node %d joined; members %s", from, c.memberList())
	c.broadcast(Message{Type: MsgView, Members: c.memberIDs16()})
	c.sendSync(from)
}

// onView (ha): a joining node adopts the first view that includes it; a
// member adopts views from its coordinator and sends its cache to newcomers.
func (c *Core) onView(from int, m Message) {
	if c.cfg.Mode != HA {
		return
	}
	var set uint64
	for _, id := range m.Members {
		if c.isPeer(int(id)) || int(id) == c.cfg.Node {
			set |= bit(int(id))
		}
	}
	if set&c.self == 0 || (!c.joining && from != c.lowestMember()) {
		return
	}
	added, dropped := set&^c.members, c.members&^set
	c.members, c.view, c.joining, c.round = set, m.View, false, m.Round
	for _, id := range c.ids(dropped) {
		c.forget(id)
		c.failPending(id)
	}
	for _, id := range c.ids(added) {
		c.sendSync(id)
	}
	if added|dropped != 0 {
		c.event("system.view", "view %d from node %d: members %s", m.View, from, c.memberList())
	}
	if c.members&bit(from) != 0 && from != c.cfg.Node {
		c.sendSync(from)
	}
}

// Tick advances Core by one heartbeat period.
func (c *Core) Tick() {
	c.round++
	switch c.cfg.Mode {
	case HA:
		c.tickHA()
	case Robust:
		c.tickRobust()
	case Via0, Via3, Via5:
		c.tickVIA()
	}
}

// tickVIA sends every peer not cut off a flow-control credit (so a
// restarted node finds its way back in) and reports a member that sent
// nothing for viaCreditTicks periods as a broken connection.
func (c *Core) tickVIA() {
	for _, p := range c.cfg.Peers {
		if _, cut := c.cutOff[p]; !cut {
			c.send(p, Message{Type: MsgHeartbeat})
		}
	}
	for _, p := range c.ids(c.members &^ c.self) {
		c.silent[p]++
		if c.silent[p] > viaCreditTicks {
			c.PeerDown(p, fmt.Sprintf("no message for %d heartbeat periods", c.silent[p]))
		}
	}
}

func (c *Core) tickHA() {
	for _, id := range slices.Sorted(maps.Keys(c.oosPending)) {
		c.event("system.out_of_sequence", "dropped %d messages from node %d", c.oosPending[id], id)
	}
	clear(c.oosPending)
	if c.joining {
		c.joinTicks++
		if c.joinTicks > c.cfg.MissedBeats {
			c.joining = false // nobody answered: carry on with the configured view
		} else {
			c.broadcastAll(Message{Type: MsgJoin})
		}
	}
	succ, pred := c.ring()
	if succ != 0 {
		c.send(succ, Message{Type: MsgHeartbeat})
	}
	if pred != c.pred {
		c.pred, c.missed, c.heardPred = pred, 0, false
		return
	}
	if pred == 0 {
		return
	}
	if c.heardPred {
		c.missed, c.heardPred = 0, false
		return
	}
	c.missed++
	if c.missed >= c.cfg.MissedBeats {
		c.remove(pred, fmt.Sprintf("%d heartbeats missed", c.missed))
		c.broadcast(Message{Type: MsgFailed, Node: uint16(pred)})
		c.pred, c.missed, c.heardPred = 0, 0, false
	}
}

func (c *Core) tickRobust() {
	c.broadcastAll(Message{Type: MsgHeartbeat})
	for _, p := range c.cfg.Peers {
		c.silent[p]++
		if c.members&bit(p) != 0 && c.silent[p] > c.cfg.MissedBeats {
			c.remove(p, fmt.Sprintf("silent for %d heartbeats", c.silent[p]-1))
		}
	}
}

// ring returns this node's successor and predecessor among the members
// (0 when alone).
func (c *Core) ring() (succ, pred int) {
	ids := c.Members()
	if len(ids) < 2 {
		return 0, 0
	}
	i := sort.SearchInts(ids, c.cfg.Node)
	return ids[(i+1)%len(ids)], ids[(i+len(ids)-1)%len(ids)]
}

func (c *Core) lowestMember() int { return bits.TrailingZeros64(c.members) + 1 }

func (c *Core) sendSync(to int) {
	files := c.cache.files()
	slices.Sort(files)
	c.send(to, Message{Type: MsgSync, Files: files})
}

// send stamps m with this node's identity, load, view and the next sequence
// number for to, and queues it.
func (c *Core) send(to int, m Message) {
	c.seqOut[to]++
	m.From, m.Inc, m.Seq, m.Round, m.Load = uint16(c.cfg.Node), c.cfg.Incarnation, c.seqOut[to], c.round, c.load
	switch m.Type {
	case MsgHello, MsgHeartbeat, MsgJoin, MsgView, MsgFailed:
		m.View = c.view
	}
	c.ready.Msgs = append(c.ready.Msgs, Envelope{To: to, Msg: m})
}

// broadcast sends m to every other member.
func (c *Core) broadcast(m Message) {
	for _, id := range c.ids(c.members &^ c.self) {
		c.send(id, m)
	}
}

// broadcastAll sends m to every configured peer, member or not.
func (c *Core) broadcastAll(m Message) {
	for _, id := range c.cfg.Peers {
		c.send(id, m)
	}
}

func (c *Core) ids(set uint64) []int {
	var out []int
	for set != 0 {
		id := bits.TrailingZeros64(set) + 1
		set &^= bit(id)
		out = append(out, id)
	}
	return out
}

func (c *Core) memberIDs16() []uint16 {
	var out []uint16
	for _, id := range c.Members() {
		out = append(out, uint16(id))
	}
	return out
}

func (c *Core) memberList() string {
	var parts []string
	for _, id := range c.Members() {
		parts = append(parts, fmt.Sprint(id))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func (c *Core) event(kind, format string, args ...any) {
	c.ready.Events = append(c.ready.Events, Event{Kind: kind, Detail: fmt.Sprintf(format, args...)})
}
