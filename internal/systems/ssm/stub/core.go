package stub

import (
	"fmt"
	"math/rand"
	"slices"
	"time"

	"github.com/faultbench/faultbench/internal/systems/ssm/wire"
)

// Core is the stub's protocol as a deterministic state machine (after etcd
// raft's RawNode): it advances only when told of a beacon, a reply, a broken
// connection, a tick or a new operation, and answers with the frames to send
// and the operations that finished. Time is an argument; randomness comes
// from the seeded source. Stub wraps it in one goroutine with sockets; tests
// drive it directly.
//
// Core is not safe for concurrent use.
type Core struct {
	cfg    Config
	rng    *rand.Rand
	bricks map[uint16]*brickState
	order  []uint16 // brick ids ascending, for deterministic choice
	ops    map[uint64]*op
	fifo   []uint64 // op ids in start order = deadline order (one Timeout for all)
	nextID uint64
	events []Event
	spare  []byte // a frame's memory handed back by Recycle
	// primary is the passive style's primary brick (0: none chosen yet).
	// It is chosen when an operation needs one, not at the first beacon,
	// so that bricks beaconing in a different order at start-up cannot
	// make a higher-numbered brick primary; a front end waits for every
	// brick before it serves (docs/ssm.md).
	primary uint16
}

// Event is a membership change the Core observed.
type Event struct {
	Kind   string // system.ssm.brick_up, system.ssm.brick_down, system.ssm.primary
	Brick  uint16
	Detail string
}

type brickState struct {
	id          uint16
	incarnation uint64
	live        bool
	lastBeacon  time.Time
	window      float64
	ssthresh    float64 // slow start below it (TCP's), congestion avoidance above
	inflight    int
	lastCut     time.Time // last multiplicative decrease
}

type opKind uint8

const (
	opWrite opKind = iota + 1
	opRead
)

type op struct {
	id       uint64
	kind     opKind
	deadline time.Time
	done     bool
	pending  []uint16 // targets that have not answered
	acks     []uint16 // write: bricks that acknowledged
	cookie   Cookie   // read: the cookie; write: the cookie being built
	// read failures seen so far
	corrupt, lost, expired, refused, gone int
}

// Send is one frame for one brick. Frame is shared by every Send of the same
// operation and must not be modified.
type Send struct {
	Brick uint16
	Frame []byte
}

// Result is a finished operation: Cookie for a write, Value for a read (the
// caller owns it), or Err.
type Result struct {
	Op     uint64
	Cookie Cookie
	Value  []byte
	Err    error
}

// NewCore returns a Core with no bricks known. cfg must be valid.
func NewCore(cfg Config) *Core {
	return &Core{
		cfg:    cfg,
		rng:    rand.New(rand.NewSource(cfg.Seed)),
		bricks: map[uint16]*brickState{},
		ops:    map[uint64]*op{},
	}
}

// Beacon records that brick id (incarnation inc) announced itself at now.
// A new incarnation starts with a fresh window: it is a new process.
func (c *Core) Beacon(now time.Time, id uint16, inc uint64) {
	b := c.bricks[id]
	if b == nil {
		b = &brickState{id: id}
		c.bricks[id] = b
		c.order = append(c.order, id)
		slices.Sort(c.order)
	}
	if b.incarnation != inc {
		b.incarnation = inc
		b.window = c.cfg.InitialWindow
		b.ssthresh = c.cfg.MaxWindow
	}
	b.lastBeacon = now
	if !b.live {
		b.live = true
		c.events = append(c.events, Event{Kind: "system.ssm.brick_up", Brick: id, Detail: fmt.Sprintf("brick %d up (incarnation %d)", id, inc)})
	}
}

// Down marks brick id dead at once (its connection broke). Requests
// outstanding to it fail now rather than at their deadline.
func (c *Core) Down(now time.Time, id uint16, why string) []Result {
	b := c.bricks[id]
	if b == nil {
		return nil
	}
	c.markDown(b, why)
	var out []Result
	for _, opID := range c.fifo {
		o := c.ops[opID]
		if o == nil || !slices.Contains(o.pending, id) {
			continue
		}
		if r, ok := c.resolve(o, id, func(o *op) { o.gone++ }); ok {
			out = append(out, r)
		}
	}
	return out
}

func (c *Core) markDown(b *brickState, why string) {
	if b.live {
		b.live = false
		c.events = append(c.events, Event{Kind: "system.ssm.brick_down", Brick: b.id, Detail: fmt.Sprintf("brick %d down: %s", b.id, why)})
		if b.id == c.primary {
			c.elect(fmt.Sprintf("primary brick %d down: %s", b.id, why))
		}
	}
}

// elect keeps a live primary, and otherwise (passive style) promotes the
// lowest-numbered live brick, reporting the change as an event.
func (c *Core) elect(why string) {
	if c.cfg.Style != Passive {
		return
	}
	if p := c.bricks[c.primary]; p != nil && p.live {
		return
	}
	old := c.primary
	c.primary = 0
	for _, id := range c.order {
		if c.bricks[id].live {
			c.primary = id
			break
		}
	}
	switch {
	case c.primary == old:
	case c.primary == 0:
		c.events = append(c.events, Event{Kind: "system.ssm.primary", Detail: "no live brick to promote: " + why})
	case old == 0 && why == "":
		c.events = append(c.events, Event{Kind: "system.ssm.primary", Brick: c.primary,
			Detail: fmt.Sprintf("brick %d primary: the lowest-numbered of the live bricks %v", c.primary, c.Live())})
	default:
		if why == "" {
			why = "no primary"
		}
		c.events = append(c.events, Event{Kind: "system.ssm.primary", Brick: c.primary,
			Detail: fmt.Sprintf("brick %d promoted to primary (%s)", c.primary, why)})
	}
}

// Primary is the passive style's primary brick: 0 before the first
// operation chose one, when no brick is live, and in the active style.
func (c *Core) Primary() uint16 {
	if p := c.bricks[c.primary]; p == nil || !p.live {
		return 0
	}
	return c.primary
}

// primaryTarget is where a passive operation goes: the primary (promoting
// one if needed), with ErrUnavailable when no brick is live and
// ErrOverloaded when the primary's window is full. Nothing else is tried:
// the backups hold a copy but never answer.
func (c *Core) primaryTarget() (uint16, error) {
	c.elect("")
	if c.primary == 0 {
		return 0, fmt.Errorf("%w: no live brick to be primary", ErrUnavailable)
	}
	if b := c.bricks[c.primary]; !c.open(b) {
		return 0, fmt.Errorf("%w: primary brick %d has no open window (%d in flight)", ErrOverloaded, c.primary, b.inflight)
	}
	return c.primary, nil
}

// quota is the acknowledgements a write needs: WQ, or the primary's one.
func (c *Core) quota() int {
	if c.cfg.Style == Passive {
		return 1
	}
	return c.cfg.WQ
}

// Events returns and clears the membership events since the last call.
func (c *Core) Events() []Event {
	ev := c.events
	c.events = nil
	return ev
}

// Live returns the ids of the bricks taken for alive, ascending.
func (c *Core) Live() []uint16 {
	var ids []uint16
	for _, id := range c.order {
		if c.bricks[id].live {
			ids = append(ids, id)
		}
	}
	return ids
}

// Window returns brick id's sending window and in-flight count.
func (c *Core) Window(id uint16) (window float64, inflight int) {
	if b := c.bricks[id]; b != nil {
		return b.window, b.inflight
	}
	return 0, 0
}

func (c *Core) open(b *brickState) bool {
	return b.live && (!c.cfg.AIMD || float64(b.inflight) < b.window)
}

func (c *Core) start(now time.Time, kind opKind, targets []uint16) *op {
	c.nextID++
	o := &op{id: c.nextID, kind: kind, deadline: now.Add(c.cfg.Timeout), pending: targets}
	c.ops[o.id] = o
	c.fifo = append(c.fifo, o.id)
	for _, id := range targets {
		c.bricks[id].inflight++
	}
	return o
}

func (c *Core) budget(now time.Time, o *op) uint32 {
	return uint32(max(o.deadline.Sub(now), 0) / time.Microsecond)
}

// Write starts writing value under key until expiry to W random live bricks
// with an open window (passive style: to the primary alone). It fails at
// once — nothing sent — with ErrBadRequest, ErrUnavailable (fewer than WQ
// live bricks) or ErrOverloaded (fewer than WQ with an open window).
func (c *Core) Write(now time.Time, key wire.Key, value []byte, expiry time.Time) (uint64, []Send, error) {
	if len(value) > c.cfg.MaxValue {
		return 0, nil, fmt.Errorf("%w: value of %d bytes above max_value %d", ErrBadRequest, len(value), c.cfg.MaxValue)
	}
	if !expiry.After(now) {
		return 0, nil, fmt.Errorf("%w: expiry %v is not in the future", ErrBadRequest, expiry)
	}
	if c.cfg.Style == Passive {
		p, err := c.primaryTarget()
		if err != nil {
			return 0, nil, err
		}
		return c.sendWrite(now, []uint16{p}, key, value, expiry)
	}
	var live, open []uint16
	for _, id := range c.order {
		b := c.bricks[id]
		if b.live {
			live = append(live, id)
			if c.open(b) {
				open = append(open, id)
			}
		}
	}
	if len(live) < c.cfg.WQ {
		return 0, nil, fmt.Errorf("%w: %d live, write quota %d", ErrUnavailable, len(live), c.cfg.WQ)
	}
	if len(open) < c.cfg.WQ {
		return 0, nil, fmt.Errorf("%w: %d of %d live bricks have an open window, write quota %d", ErrOverloaded, len(open), len(live), c.cfg.WQ)
	}
	c.rng.Shuffle(len(open), func(i, j int) { open[i], open[j] = open[j], open[i] })
	return c.sendWrite(now, open[:min(c.cfg.W, len(open))], key, value, expiry)
}

func (c *Core) sendWrite(now time.Time, targets []uint16, key wire.Key, value []byte, expiry time.Time) (uint64, []Send, error) {
	o := c.start(now, opWrite, slices.Clone(targets))
	cs := wire.Checksum(value)
	o.cookie = Cookie{Key: key, Expiry: time.UnixMilli(expiry.UnixMilli()), Checksum: cs}
	frame := wire.Append(c.frameBuf(wire.HeaderLen+64+len(value)), &wire.Msg{
		Type: wire.TWrite, ID: o.id, Key: key[:], Expiry: expiry.UnixMilli(), Checksum: cs,
		Budget: c.budget(now, o), Sent: now.UnixMicro(), Value: value,
	})
	return o.id, sends(targets, frame), nil
}

// Read starts reading the state the cookie names from R of its bricks
// (those live with an open window, chosen at random; passive style: from
// the primary alone, whichever bricks the cookie names). It fails at once
// with ErrStateExpired, ErrUnavailable (none of the cookie's bricks is
// live) or ErrOverloaded (none has an open window).
func (c *Core) Read(now time.Time, cookie Cookie) (uint64, []Send, error) {
	if !cookie.Expiry.After(now) {
		return 0, nil, fmt.Errorf("%w: expired at %v", ErrStateExpired, cookie.Expiry.UTC().Format(time.RFC3339Nano))
	}
	if c.cfg.Style == Passive {
		p, err := c.primaryTarget()
		if err != nil {
			return 0, nil, err
		}
		return c.sendRead(now, []uint16{p}, cookie)
	}
	var live, open []uint16
	for _, id := range cookie.Bricks {
		b := c.bricks[id]
		if b == nil || !b.live || slices.Contains(live, id) {
			continue
		}
		live = append(live, id)
		if c.open(b) {
			open = append(open, id)
		}
	}
	if len(live) == 0 {
		return 0, nil, fmt.Errorf("%w: none of the cookie's bricks %v is live", ErrUnavailable, cookie.Bricks)
	}
	if len(open) == 0 {
		return 0, nil, fmt.Errorf("%w: none of the cookie's live bricks %v has an open window", ErrOverloaded, live)
	}
	c.rng.Shuffle(len(open), func(i, j int) { open[i], open[j] = open[j], open[i] })
	return c.sendRead(now, open[:min(c.cfg.R, len(open))], cookie)
}

func (c *Core) sendRead(now time.Time, targets []uint16, cookie Cookie) (uint64, []Send, error) {
	o := c.start(now, opRead, slices.Clone(targets))
	o.cookie = cookie
	frame := wire.Append(c.frameBuf(wire.HeaderLen+64), &wire.Msg{
		Type: wire.TRead, ID: o.id, Key: cookie.Key[:], Expiry: cookie.Expiry.UnixMilli(),
		Checksum: cookie.Checksum, Budget: c.budget(now, o), Sent: now.UnixMicro(),
	})
	return o.id, sends(targets, frame), nil
}

// frameBuf is the memory for the next frame: what Recycle gave back, or a
// new slice of capacity n.
func (c *Core) frameBuf(n int) []byte {
	b := c.spare
	c.spare = nil
	if cap(b) < n {
		return make([]byte, 0, n)
	}
	return b[:0]
}

// Recycle gives back the frame of the last Write or Read once nothing
// refers to it any more (every Send's copy was taken): the Core may build
// its next frame in that memory. Not calling it is always safe.
func (c *Core) Recycle(frame []byte) {
	if cap(frame) <= maxRecycled {
		c.spare = frame
	}
}

// maxRecycled bounds the frame memory a Core keeps between operations.
const maxRecycled = 1 << 20

func sends(targets []uint16, frame []byte) []Send {
	out := make([]Send, len(targets))
	for i, id := range targets {
		out[i] = Send{Brick: id, Frame: frame}
	}
	return out
}

// SendFailed reports that the frame for op could not be queued to brick
// (its connection is missing or its outbox full): that target fails now.
func (c *Core) SendFailed(now time.Time, opID uint64, brick uint16) []Result {
	o := c.ops[opID]
	if o == nil || !slices.Contains(o.pending, brick) {
		return nil
	}
	if r, ok := c.resolve(o, brick, func(o *op) { o.gone++ }); ok {
		return []Result{r}
	}
	return nil
}

// Receive handles a frame from brick. Replies to finished or unknown
// operations (late, after the deadline) are ignored.
func (c *Core) Receive(now time.Time, brick uint16, m *wire.Msg) []Result {
	o := c.ops[m.ID]
	if o == nil || !slices.Contains(o.pending, brick) {
		return nil
	}
	b := c.bricks[brick]
	if c.cfg.AIMD && m.Type != wire.TError {
		if b.window < b.ssthresh {
			b.window = min(b.window+1, c.cfg.MaxWindow) // slow start: doubles per window of replies
		} else {
			b.window = min(b.window+1/b.window, c.cfg.MaxWindow) // additive: +1 per window of replies
		}
	}
	var r Result
	var ok bool
	switch {
	case m.Type == wire.TError:
		r, ok = c.resolve(o, brick, func(o *op) { o.refused++ })
	case o.kind == opWrite && m.Type == wire.TWriteAck && m.Status == wire.OK:
		r, ok = c.resolve(o, brick, func(o *op) { o.acks = append(o.acks, brick) })
	case o.kind == opWrite && m.Type == wire.TWriteAck:
		r, ok = c.resolve(o, brick, func(o *op) {
			if m.Status == wire.Expired {
				o.expired++
			} else {
				o.refused++
			}
		})
	case o.kind == opRead && m.Type == wire.TReadReply:
		valid := m.Status == wire.OK && wire.Checksum(m.Value) == o.cookie.Checksum
		var first bool
		r, ok = c.resolve(o, brick, func(o *op) {
			switch {
			case valid:
				first = !o.done
				o.done = true
			case m.Status == wire.OK, m.Status == wire.Corrupt:
				o.corrupt++
			case m.Status == wire.NotFound:
				o.lost++
			case m.Status == wire.Expired:
				o.expired++
			default:
				o.refused++
			}
		})
		if first {
			return []Result{{Op: o.id, Value: m.Value}}
		}
	default:
		r, ok = c.resolve(o, brick, func(o *op) { o.refused++ })
	}
	if ok {
		return []Result{r}
	}
	return nil
}

// resolve removes brick from op's pending targets, applies note, and
// reports the op's result if that settles it.
func (c *Core) resolve(o *op, brick uint16, note func(*op)) (Result, bool) {
	o.pending = slices.DeleteFunc(o.pending, func(id uint16) bool { return id == brick })
	c.bricks[brick].inflight--
	wasDone := o.done
	note(o)
	if len(o.pending) == 0 {
		delete(c.ops, o.id)
	}
	if wasDone || o.done {
		return Result{}, false
	}
	switch o.kind {
	case opWrite:
		if len(o.acks) >= c.quota() {
			o.done = true
			ck := o.cookie
			ck.Bricks = slices.Clone(o.acks)
			return Result{Op: o.id, Cookie: ck}, true
		}
		if len(o.acks)+len(o.pending) < c.quota() {
			o.done = true
			return Result{Op: o.id, Err: c.writeFailure(o)}, true
		}
	case opRead:
		if len(o.pending) == 0 {
			o.done = true
			return Result{Op: o.id, Err: readFailure(o)}, true
		}
	}
	return Result{}, false
}

func (c *Core) writeFailure(o *op) error {
	switch {
	case o.expired > 0:
		return fmt.Errorf("%w: a brick found the expiry passed", ErrBadRequest)
	case o.refused > 0:
		return fmt.Errorf("%w: %d bricks refused the write", ErrBadRequest, o.refused)
	}
	return fmt.Errorf("%w: %d acknowledgements, write quota %d; %d bricks went away", ErrUnavailable, len(o.acks), c.quota(), o.gone)
}

func readFailure(o *op) error {
	switch {
	case o.corrupt > 0:
		return fmt.Errorf("%w: %d bricks returned a value failing its checksum", ErrStateCorrupt, o.corrupt)
	case o.expired > 0:
		return fmt.Errorf("%w: a brick found the state expired", ErrStateExpired)
	case o.lost > 0 && o.refused == 0 && o.gone == 0:
		return fmt.Errorf("%w: %d bricks do not hold it", ErrStateLost, o.lost)
	case o.refused > 0:
		return fmt.Errorf("%w: %d bricks refused the read", ErrBadRequest, o.refused)
	}
	return fmt.Errorf("%w: the bricks holding the state went away", ErrUnavailable)
}

// Tick times out the operations whose deadline has passed (their silent
// bricks get a multiplicative window decrease) and takes bricks whose
// beacons stopped for dead.
func (c *Core) Tick(now time.Time) []Result {
	var out []Result
	for len(c.fifo) > 0 {
		o := c.ops[c.fifo[0]]
		if o != nil && o.deadline.After(now) {
			break
		}
		c.fifo = c.fifo[1:]
		if o == nil {
			continue
		}
		for _, id := range o.pending {
			b := c.bricks[id]
			b.inflight--
			if c.cfg.AIMD && now.Sub(b.lastCut) >= c.cfg.Timeout {
				b.window = max(1, b.window/2)
				b.ssthresh = b.window
				b.lastCut = now
			}
		}
		delete(c.ops, o.id)
		if !o.done {
			o.done = true
			err := fmt.Errorf("%w: no answer from bricks %v within %v", ErrTimeout, o.pending, c.cfg.Timeout)
			if o.kind == opWrite {
				err = fmt.Errorf("%w: %d of %d acknowledgements within %v", ErrTimeout, len(o.acks), c.quota(), c.cfg.Timeout)
			}
			out = append(out, Result{Op: o.id, Err: err})
		}
	}
	for _, id := range c.order {
		b := c.bricks[id]
		if b.live && now.Sub(b.lastBeacon) > c.cfg.BeaconTimeout {
			c.markDown(b, fmt.Sprintf("no beacon for %v", now.Sub(b.lastBeacon).Round(time.Millisecond)))
		}
	}
	return out
}

// NextDeadline is the earliest time Tick has work to do for an operation.
func (c *Core) NextDeadline() (time.Time, bool) {
	for len(c.fifo) > 0 {
		if o := c.ops[c.fifo[0]]; o != nil {
			return o.deadline, true
		}
		c.fifo = c.fifo[1:]
	}
	return time.Time{}, false
}

// Pending is the number of operations still tracked (finished ones stay
// until every target answered or the deadline passed).
func (c *Core) Pending() int { return len(c.ops) }
