package stub

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/systems/ssm/brick"
	"github.com/faultbench/faultbench/internal/systems/ssm/wire"
)

// passiveNet runs stub Cores and bricks of the passive style against each
// other in memory, like raft's rafttest network: a brick is a brick.Store
// with its brick.Shipper, handling frames through brick.Apply as a running
// brick does; frames are delivered only when the test settles the network;
// time moves only when the test steps it, and every beacon, shipment and
// stub tick happens on that simulated clock.
type passiveNet struct {
	t      *testing.T
	now    time.Time
	stubs  []*Core
	bricks map[uint16]*memBrick
	ids    []uint16
	queue  []frame
	done   []map[uint64]Result // finished operations, per stub by op id
	events []string
}

type memBrick struct {
	id       uint16
	inc      uint64
	store    *brick.Store
	ship     *brick.Shipper
	up       bool // the process runs
	hung     bool // it runs but neither beacons nor answers (app-hang)
	held     []frame
	nextTick time.Time
}

// frame is one message in flight. stub < 0: a brick→brick backup copy;
// toBrick: stub → brick; else brick → stub.
type frame struct {
	stub    int
	brick   uint16
	from    uint16 // backups: the sending brick
	toBrick bool
	data    []byte
}

const (
	backupInterval = 10 * time.Millisecond
	beaconEvery    = 100 * time.Millisecond
)

func newPassiveNet(t *testing.T, bricks, stubs, degree int) *passiveNet {
	t.Helper()
	n := &passiveNet{t: t, now: t0, bricks: map[uint16]*memBrick{}}
	for i := range stubs {
		n.done = append(n.done, map[uint64]Result{})
		cfg := DefaultConfig()
		cfg.Style, cfg.Seed, cfg.W = Passive, int64(i+1), degree
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		n.stubs = append(n.stubs, NewCore(cfg))
	}
	for id := 1; id <= bricks; id++ {
		n.ids = append(n.ids, uint16(id))
		n.bricks[uint16(id)] = &memBrick{id: uint16(id), ship: brick.NewShipper(degree, 500*time.Millisecond)}
	}
	for _, id := range n.ids {
		n.start(id, degree)
	}
	n.beacons()
	return n
}

// start (re)starts brick id empty, with a new incarnation.
func (n *passiveNet) start(id uint16, degree int) {
	b := n.bricks[id]
	b.inc++
	b.store = brick.NewStore(1000)
	b.ship = brick.NewShipper(degree, 500*time.Millisecond)
	b.up, b.hung, b.held = true, false, nil
	b.nextTick = n.now.Add(backupInterval)
}

// beacons: every running brick announces itself to every stub and peer.
func (n *passiveNet) beacons() {
	for _, id := range n.ids {
		b := n.bricks[id]
		if !b.up || b.hung {
			continue
		}
		for _, c := range n.stubs {
			c.Beacon(n.now, id, b.inc)
		}
		for _, pid := range n.ids {
			if p := n.bricks[pid]; pid != id && p.up && !p.hung {
				p.ship.Beacon(n.now, id)
			}
		}
	}
	n.collectEvents()
}

func (n *passiveNet) collectEvents() {
	for i, c := range n.stubs {
		for _, e := range c.Events() {
			n.events = append(n.events, fmt.Sprintf("stub%d %s %s", i, e.Kind, e.Detail))
		}
	}
}

func (n *passiveNet) sendAll(stub int, out []Send) {
	for _, s := range out {
		n.queue = append(n.queue, frame{stub: stub, brick: s.Brick, toBrick: true, data: s.Frame})
	}
}

func (n *passiveNet) finish(stub int, rs []Result) {
	for _, r := range rs {
		n.done[stub][r.Op] = r
	}
}

// settle delivers every frame in flight, in order (bounded).
func (n *passiveNet) settle() {
	for i := 0; len(n.queue) > 0; i++ {
		if i > 100000 {
			n.t.Fatal("passiveNet: frames never settle")
		}
		f := n.queue[0]
		n.queue = n.queue[1:]
		m, err := wire.Decode(f.data[4:])
		if err != nil {
			n.t.Fatalf("decode: %v", err)
		}
		if !f.toBrick && f.stub >= 0 {
			n.finish(f.stub, n.stubs[f.stub].Receive(n.now, f.brick, &m))
			continue
		}
		b := n.bricks[f.brick]
		switch {
		case !b.up:
			continue // the connection is gone: dropped
		case b.hung:
			b.held = append(b.held, f)
			continue
		}
		reply, answer := brick.Apply(b.store, b.ship, n.now.UnixMilli(), &m)
		if answer && f.stub >= 0 {
			n.queue = append(n.queue, frame{stub: f.stub, brick: f.brick, data: wire.Append(nil, &reply)})
		}
	}
	n.collectEvents()
}

// step advances the clock by d in 1 ms steps: bricks beacon and ship on
// their timers, stubs tick.
func (n *passiveNet) step(d time.Duration) {
	end := n.now.Add(d)
	for n.now.Before(end) {
		n.now = n.now.Add(time.Millisecond)
		if n.now.Sub(t0)%beaconEvery == 0 {
			n.beacons()
		}
		for _, id := range n.ids {
			b := n.bricks[id]
			if !b.up || b.hung || n.now.Before(b.nextTick) {
				continue
			}
			b.nextTick = n.now.Add(backupInterval)
			for _, o := range b.ship.Flush(n.now) {
				n.queue = append(n.queue, frame{stub: -1, brick: o.Peer, from: id, toBrick: true, data: o.Frame})
			}
		}
		for i, c := range n.stubs {
			n.finish(i, c.Tick(n.now))
		}
		n.settle()
	}
}

// crash kills brick id: its memory is gone and every stub sees its
// connection break at once (as a SIGKILLed process's sockets close).
func (n *passiveNet) crash(id uint16) {
	b := n.bricks[id]
	b.up = false
	for i, c := range n.stubs {
		n.finish(i, c.Down(n.now, id, "connection broke"))
	}
	for _, pid := range n.ids {
		if pid != id {
			n.bricks[pid].ship.Down(id)
		}
	}
	n.collectEvents()
}

func (n *passiveNet) write(stub int, key wire.Key, value string) (Cookie, error) {
	n.t.Helper()
	id, out, err := n.stubs[stub].Write(n.now, key, []byte(value), n.now.Add(time.Minute))
	if err != nil {
		return Cookie{}, err
	}
	n.sendAll(stub, out)
	n.settle()
	r, ok := n.result(stub, id)
	if !ok {
		n.t.Fatalf("write %q: no result after settling", value)
	}
	return r.Cookie, r.Err
}

func (n *passiveNet) read(stub int, ck Cookie) (string, error) {
	n.t.Helper()
	id, out, err := n.stubs[stub].Read(n.now, ck)
	if err != nil {
		return "", err
	}
	n.sendAll(stub, out)
	n.settle()
	r, ok := n.result(stub, id)
	if !ok {
		n.t.Fatalf("read: no result after settling")
	}
	return string(r.Value), r.Err
}

// result takes the result of stub's operation id.
func (n *passiveNet) result(stub int, id uint64) (Result, bool) {
	r, ok := n.done[stub][id]
	delete(n.done[stub], id)
	return r, ok
}

// holds reports whether brick id stores value under key (with ck's expiry).
func (n *passiveNet) holds(id uint16, ck Cookie, value string) bool {
	v, st := n.bricks[id].store.Get(n.now.UnixMilli(), ck.Key, ck.Expiry.UnixMilli())
	return st == wire.OK && string(v) == value
}

func key(i byte) wire.Key { return wire.Key{i} }

func TestPassiveWritesAndReadsGoToThePrimaryOnly(t *testing.T) {
	n := newPassiveNet(t, 3, 1, 3)
	c := n.stubs[0]
	id, out, err := c.Write(n.now, key(1), []byte("v1"), n.now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].Brick != 1 {
		t.Fatalf("write sent to %v, want brick 1 alone (the lowest-numbered live brick)", out)
	}
	n.sendAll(0, out)
	n.settle()
	r := n.done[0][id]
	if r.Err != nil || !slices.Equal(r.Cookie.Bricks, []uint16{1}) {
		t.Fatalf("write result %+v, want a cookie naming brick 1 after its one acknowledgement", r)
	}
	if c.Primary() != 1 {
		t.Fatalf("primary %d, want 1", c.Primary())
	}
	// The cookie names brick 1, but a read goes to the primary whatever
	// it names: a cookie from before a promotion names the dead brick.
	ck := r.Cookie
	ck.Bricks = []uint16{3}
	_, out, err = c.Read(n.now, ck)
	if err != nil || len(out) != 1 || out[0].Brick != 1 {
		t.Fatalf("read sent to %v (%v), want brick 1 alone", out, err)
	}
	if !strings.Contains(strings.Join(n.events, "\n"), "brick 1 primary: the lowest-numbered of the live bricks [1 2 3]") {
		t.Fatalf("no primary event:\n%s", strings.Join(n.events, "\n"))
	}
}

func TestPassiveBackupsFollowAfterTheShippingInterval(t *testing.T) {
	for _, tc := range []struct {
		degree  int
		backups []uint16
	}{{1, nil}, {2, []uint16{2}}, {3, []uint16{2, 3}}} {
		t.Run(fmt.Sprintf("degree %d", tc.degree), func(t *testing.T) {
			n := newPassiveNet(t, 3, 1, tc.degree)
			ck, err := n.write(0, key(1), "v1")
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range []uint16{2, 3} {
				if n.holds(id, ck, "v1") {
					t.Fatalf("brick %d holds the write before any shipment: the backups must lag", id)
				}
			}
			if got := n.bricks[1].ship.Pending(); got != min(1, tc.degree-1) {
				t.Fatalf("primary's pending %d", got)
			}
			n.step(backupInterval)
			for _, id := range []uint16{2, 3} {
				if want := slices.Contains(tc.backups, id); n.holds(id, ck, "v1") != want {
					t.Fatalf("after one interval brick %d holds the write: %v, want %v (backups %v)", id, !want, want, tc.backups)
				}
			}
			if n.bricks[1].ship.Pending() != 0 {
				t.Fatal("pending writes left after a flush")
			}
		})
	}
}

// The price of passive replication: the primary acknowledged a write and
// died before shipping it, so the promoted backup answers with the older
// value or none, and the stub reports it lost or corrupt — never the old
// value as the new.
func TestPassivePrimaryDeathLosesUnshippedWrites(t *testing.T) {
	n := newPassiveNet(t, 3, 1, 3)
	shippedCk, err := n.write(0, key(1), "shipped")
	if err != nil {
		t.Fatal(err)
	}
	oldCk, err := n.write(0, key(2), "old")
	if err != nil {
		t.Fatal(err)
	}
	n.step(backupInterval)
	// Key 2 rewritten with the same expiry (same millisecond): the
	// backup holds a value the new cookie's checksum refuses.
	n.now = n.now.Add(-backupInterval)
	newCk, err := n.write(0, key(2), "new")
	n.now = n.now.Add(backupInterval)
	if err != nil || !newCk.Expiry.Equal(oldCk.Expiry) {
		t.Fatalf("rewrite: %v, expiry %v vs %v", err, newCk.Expiry, oldCk.Expiry)
	}
	lostCk, err := n.write(0, key(3), "unshipped")
	if err != nil {
		t.Fatal(err)
	}
	n.crash(1)
	if p := n.stubs[0].Primary(); p != 2 {
		t.Fatalf("primary after brick 1 died: %d, want 2 (the next in order)", p)
	}
	if v, err := n.read(0, shippedCk); err != nil || v != "shipped" {
		t.Fatalf("shipped write after failover: %q, %v", v, err)
	}
	if v, err := n.read(0, lostCk); !errors.Is(err, ErrStateLost) {
		t.Fatalf("unshipped write after failover: %q, %v; want ErrStateLost", v, err)
	}
	if v, err := n.read(0, newCk); !errors.Is(err, ErrStateCorrupt) {
		t.Fatalf("unshipped rewrite after failover: %q, %v; want ErrStateCorrupt (the backup's older value fails the cookie)", v, err)
	}
	ev := strings.Join(n.events, "\n")
	if !strings.Contains(ev, "brick 2 promoted to primary (primary brick 1 down: connection broke)") {
		t.Fatalf("no promotion event:\n%s", ev)
	}
	// Writes go on at the new primary, which ships to brick 3.
	ck, err := n.write(0, key(4), "after")
	if err != nil || !slices.Equal(ck.Bricks, []uint16{2}) {
		t.Fatalf("write after failover: %+v, %v", ck, err)
	}
	n.step(backupInterval)
	if !n.holds(3, ck, "after") {
		t.Fatal("the new primary did not ship to brick 3")
	}
}

// A hung primary neither beacons nor answers: operations time out, and
// after BeaconTimeout the stub declares it dead and promotes brick 2.
func TestPassivePromotionAfterBeaconTimeout(t *testing.T) {
	n := newPassiveNet(t, 3, 1, 2)
	if _, err := n.write(0, key(1), "v1"); err != nil {
		t.Fatal(err)
	}
	n.bricks[1].hung = true
	id, out, err := n.stubs[0].Write(n.now, key(2), []byte("v2"), n.now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	n.sendAll(0, out)
	n.step(DefaultConfig().Timeout)
	if r := n.done[0][id]; !errors.Is(r.Err, ErrTimeout) {
		t.Fatalf("write to a hung primary: %+v, want ErrTimeout", r)
	}
	if n.stubs[0].Primary() != 1 {
		t.Fatal("promoted before the beacon timeout")
	}
	n.step(DefaultConfig().BeaconTimeout + beaconEvery)
	if p := n.stubs[0].Primary(); p != 2 {
		t.Fatalf("primary %d after the beacon timeout, want 2", p)
	}
	if !strings.Contains(strings.Join(n.events, "\n"), "brick 2 promoted to primary (primary brick 1 down: no beacon for") {
		t.Fatalf("no promotion event:\n%s", strings.Join(n.events, "\n"))
	}
}

// A brick that comes back — restarted empty — does not take the primary's
// place back: it would answer every session "lost". It becomes a backup.
func TestPassiveRestartedBrickRejoinsAsBackup(t *testing.T) {
	n := newPassiveNet(t, 3, 1, 2)
	if _, err := n.write(0, key(1), "v1"); err != nil {
		t.Fatal(err)
	}
	n.crash(1)
	n.start(1, 2)
	n.step(beaconEvery)
	if p := n.stubs[0].Primary(); p != 2 {
		t.Fatalf("primary %d after brick 1 came back, want 2 still", p)
	}
	ck, err := n.write(0, key(2), "v2")
	if err != nil || !slices.Equal(ck.Bricks, []uint16{2}) {
		t.Fatalf("write: %+v, %v", ck, err)
	}
	n.step(backupInterval)
	if !n.holds(1, ck, "v2") || n.holds(3, ck, "v2") {
		t.Fatalf("degree 2: brick 2 must ship to brick 1 (its lowest live peer), not 3")
	}
}

// Two front ends with their own stubs choose the same primary and see the
// same failover.
func TestPassiveStubsAgreeOnThePrimary(t *testing.T) {
	n := newPassiveNet(t, 3, 2, 3)
	ck, err := n.write(0, key(1), "from 0")
	if err != nil {
		t.Fatal(err)
	}
	n.step(backupInterval)
	if v, err := n.read(1, ck); err != nil || v != "from 0" {
		t.Fatalf("stub 1 reads stub 0's write: %q, %v", v, err)
	}
	n.crash(1)
	if a, b := n.stubs[0].Primary(), n.stubs[1].Primary(); a != 2 || b != 2 {
		t.Fatalf("primaries after failover: %d and %d, want 2 and 2", a, b)
	}
	if v, err := n.read(1, ck); err != nil || v != "from 0" {
		t.Fatalf("after failover: %q, %v", v, err)
	}
}

// The primary's window bounds it alone: a full window refuses at once,
// nothing sent, as the active style does when too few windows are open.
func TestPassiveOverloadRefusesWithoutSending(t *testing.T) {
	n := newPassiveNet(t, 3, 1, 3)
	c := n.stubs[0]
	for i := range int(DefaultConfig().InitialWindow) {
		if _, _, err := c.Write(n.now, key(byte(i)), []byte("v"), n.now.Add(time.Minute)); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if _, out, err := c.Write(n.now, key(99), []byte("v"), n.now.Add(time.Minute)); !errors.Is(err, ErrOverloaded) || len(out) != 0 {
		t.Fatalf("write past the primary's window: %v, sent %d; want ErrOverloaded, nothing sent", err, len(out))
	}
}

// With no brick live the stub refuses at once.
func TestPassiveNoLiveBrick(t *testing.T) {
	n := newPassiveNet(t, 2, 1, 2)
	if _, err := n.write(0, key(1), "v"); err != nil {
		t.Fatal(err)
	}
	n.crash(1)
	n.crash(2)
	if _, _, err := n.stubs[0].Write(n.now, key(1), []byte("v"), n.now.Add(time.Minute)); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("write with no brick: %v, want ErrUnavailable", err)
	}
	if !strings.Contains(strings.Join(n.events, "\n"), "no live brick to promote") {
		t.Fatalf("events:\n%s", strings.Join(n.events, "\n"))
	}
}
