package brick

import (
	"slices"
	"time"

	"github.com/faultbench/faultbench/internal/systems/ssm/wire"
)

// Warm-passive replication, the brick's half (the stub's half is
// stub.Passive): the brick a stub takes for primary stores and acknowledges
// every write alone, and a Shipper sends the writes it acknowledged to its
// backups every BackupInterval — a checkpoint of what changed, not a log:
// only the last value of a key is shipped. A write acknowledged after the
// last shipment lives on the primary alone, so it dies with it. That is
// the known price of passive replication (Dumitras and Narasimhan 2005,
// §2.1, docs/papers.md), and the session driver reports it as data_error
// when the promoted backup answers the user's next read.

// Outbound is one frame for one peer brick. Frame is shared by every
// Outbound of the same shipment and must not be modified.
type Outbound struct {
	Peer  uint16
	Frame []byte
}

// Shipper is a passive brick's record of its peers and of the writes it
// acknowledged that its backups do not have yet. It is a deterministic
// state machine: it advances only on Beacon and Down (a peer's stream),
// Wrote (a stub's write stored here) and Flush (a tick), with time passed
// in. Every brick of a passive cluster has one; only the one stubs write to
// (the primary) has anything to ship.
//
// The backups are the Degree−1 lowest-numbered peers taken for alive, so
// that the brick stubs promote when this one dies — the lowest-numbered
// live brick — is the first backup.
//
// Shipper is not safe for concurrent use: the brick's processing goroutine
// owns it.
type Shipper struct {
	degree  int
	timeout time.Duration
	peers   map[uint16]*peer
	order   []uint16 // peer ids ascending
	keys    []wire.Key
	pending map[wire.Key]shipment
	shipped uint64
}

type peer struct {
	live       bool
	lastBeacon time.Time
}

type shipment struct {
	expiry   int64
	checksum uint32
	value    []byte
}

// NewShipper returns a Shipper for a brick replicated degree times (itself
// and degree−1 backups; 1 ships nothing) that takes a peer for dead after
// timeout without a beacon.
func NewShipper(degree int, timeout time.Duration) *Shipper {
	return &Shipper{degree: max(degree, 1), timeout: timeout, peers: map[uint16]*peer{}, pending: map[wire.Key]shipment{}}
}

// Beacon records that peer id announced itself at now: it is alive.
func (s *Shipper) Beacon(now time.Time, id uint16) {
	p := s.peers[id]
	if p == nil {
		p = &peer{}
		s.peers[id] = p
		s.order = append(s.order, id)
		slices.Sort(s.order)
	}
	p.live, p.lastBeacon = true, now
}

// Down takes peer id for dead at once (its stream broke).
func (s *Shipper) Down(id uint16) {
	if p := s.peers[id]; p != nil {
		p.live = false
	}
}

// Backups are the peers the next Flush ships to: the Degree−1
// lowest-numbered live peers, ascending. The caller owns the slice.
func (s *Shipper) Backups() []uint16 {
	var out []uint16
	for _, id := range s.order {
		if len(out) == s.degree-1 {
			break
		}
		if s.peers[id].live {
			out = append(out, id)
		}
	}
	return out
}

// Wrote records a stub's write this brick stored and acknowledged; value
// is copied. A later write of the same key before the next Flush replaces
// it: only the state at the shipment counts.
func (s *Shipper) Wrote(key wire.Key, expiry int64, checksum uint32, value []byte) {
	if s.degree < 2 {
		return
	}
	if _, ok := s.pending[key]; !ok {
		s.keys = append(s.keys, key)
	}
	s.pending[key] = shipment{expiry: expiry, checksum: checksum, value: append([]byte(nil), value...)}
}

// Pending is the number of keys written since the last Flush: what this
// brick would take with it if it died now.
func (s *Shipper) Pending() int { return len(s.keys) }

// Shipped is the number of key copies shipped so far (keys × backups).
func (s *Shipper) Shipped() uint64 { return s.shipped }

// Flush takes peers silent for longer than the timeout for dead, then
// ships every pending write to the backups — one wire.TBackup frame per
// key, in the order the keys were first written — and forgets them. A
// backup that is down now misses them for good: a brick that comes back
// holds only what is shipped after it (there is no state transfer, as in
// the active style no brick copies another's state).
func (s *Shipper) Flush(now time.Time) []Outbound {
	for _, id := range s.order {
		if p := s.peers[id]; p.live && now.Sub(p.lastBeacon) > s.timeout {
			p.live = false
		}
	}
	if len(s.keys) == 0 {
		return nil
	}
	backups := s.Backups()
	var out []Outbound
	for _, k := range s.keys {
		sh := s.pending[k]
		if len(backups) > 0 {
			frame := wire.Append(make([]byte, 0, wire.HeaderLen+64+len(sh.value)), &wire.Msg{
				Type: wire.TBackup, Key: k[:], Expiry: sh.expiry, Checksum: sh.checksum, Sent: now.UnixMicro(), Value: sh.value,
			})
			for _, id := range backups {
				out = append(out, Outbound{Peer: id, Frame: frame})
			}
			s.shipped += uint64(len(backups))
		}
		delete(s.pending, k)
	}
	s.keys = s.keys[:0]
	return out
}

// Apply is what a brick does with one request, deterministically, now in
// Unix milliseconds: a stub's write is checked against its checksum,
// stored and acknowledged — and, when ship is not nil (the passive style),
// recorded for the backups; a primary's backup copy is stored and not
// answered (reply false); a read is answered from the store. The reply's
// Value aliases the store: encode it before the next call.
func Apply(store *Store, ship *Shipper, now int64, m *wire.Msg) (reply wire.Msg, answer bool) {
	var key wire.Key
	copy(key[:], m.Key)
	reply.ID = m.ID
	switch m.Type {
	case wire.TWrite:
		reply.Type = wire.TWriteAck
		if wire.Checksum(m.Value) != m.Checksum {
			reply.Status = wire.Corrupt
			break
		}
		reply.Status = store.Put(now, key, m.Expiry, m.Checksum, m.Value)
		if reply.Status == wire.OK && ship != nil {
			ship.Wrote(key, m.Expiry, m.Checksum, m.Value)
		}
	case wire.TBackup:
		if wire.Checksum(m.Value) == m.Checksum {
			store.Put(now, key, m.Expiry, m.Checksum, m.Value)
		}
		return reply, false
	case wire.TRead:
		reply.Type = wire.TReadReply
		v, st := store.Get(now, key, m.Expiry)
		reply.Status = st
		if st == wire.OK {
			reply.Value = v
		}
	default:
		reply.Type, reply.Status = wire.TError, wire.BadRequest
	}
	return reply, true
}
