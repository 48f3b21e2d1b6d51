package brick

import (
	"slices"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/systems/ssm/wire"
)

var p0 = time.Unix(1_700_000_000, 0)

func decodeOut(t *testing.T, o Outbound) wire.Msg {
	t.Helper()
	m, err := wire.Decode(o.Frame[4:])
	if err != nil || m.Type != wire.TBackup {
		t.Fatalf("frame to %d: %+v, %v", o.Peer, m, err)
	}
	return m
}

// The backups are the degree−1 lowest-numbered live peers; a peer is dead
// from its stream's break or from beacon silence, and alive again at its
// next beacon.
func TestShipperBackups(t *testing.T) {
	s := NewShipper(3, 500*time.Millisecond)
	for _, id := range []uint16{7, 3, 5} {
		s.Beacon(p0, id)
	}
	if got := s.Backups(); !slices.Equal(got, []uint16{3, 5}) {
		t.Fatalf("backups %v, want [3 5]", got)
	}
	s.Down(3)
	if got := s.Backups(); !slices.Equal(got, []uint16{5, 7}) {
		t.Fatalf("after 3 broke: %v, want [5 7]", got)
	}
	s.Beacon(p0.Add(time.Second), 3)
	s.Wrote(wire.Key{1}, 1, wire.Checksum([]byte("v")), []byte("v"))
	// 5 and 7 last beaconed at p0: silent for 1s > 500ms when flushing.
	out := s.Flush(p0.Add(time.Second))
	if len(out) != 1 || out[0].Peer != 3 {
		t.Fatalf("flush went to %v, want brick 3 alone (5 and 7 silent)", out)
	}
}

// Only the last value of a key written between two shipments is shipped,
// keys in the order they were first written; after a flush nothing is
// pending; degree 1 ships nothing; with no backup alive the writes are
// dropped, not kept for a backup that comes later.
func TestShipperCoalescesAndForgets(t *testing.T) {
	s := NewShipper(2, time.Second)
	s.Beacon(p0, 2)
	for _, w := range []struct {
		k byte
		v string
	}{{9, "a1"}, {4, "b1"}, {9, "a2"}} {
		s.Wrote(wire.Key{w.k}, 100, wire.Checksum([]byte(w.v)), []byte(w.v))
	}
	if s.Pending() != 2 {
		t.Fatalf("pending %d, want 2 keys", s.Pending())
	}
	out := s.Flush(p0)
	if len(out) != 2 {
		t.Fatalf("%d frames, want 2", len(out))
	}
	if m := decodeOut(t, out[0]); m.Key[0] != 9 || string(m.Value) != "a2" || m.Checksum != wire.Checksum([]byte("a2")) {
		t.Fatalf("first frame %+v, want key 9's last value a2", m)
	}
	if m := decodeOut(t, out[1]); m.Key[0] != 4 || string(m.Value) != "b1" {
		t.Fatalf("second frame %+v", m)
	}
	if s.Pending() != 0 || len(s.Flush(p0)) != 0 || s.Shipped() != 2 {
		t.Fatalf("after flush: pending %d, shipped %d", s.Pending(), s.Shipped())
	}
	s.Down(2)
	s.Wrote(wire.Key{1}, 100, 0, nil)
	if out := s.Flush(p0); len(out) != 0 || s.Pending() != 0 {
		t.Fatalf("no backup alive: %d frames, %d pending; want the write dropped", len(out), s.Pending())
	}
	s.Beacon(p0, 2)
	if out := s.Flush(p0); len(out) != 0 {
		t.Fatal("a backup that came back got a write made while it was away")
	}
	one := NewShipper(1, time.Second)
	one.Beacon(p0, 2)
	one.Wrote(wire.Key{1}, 100, 0, nil)
	if one.Pending() != 0 || len(one.Flush(p0)) != 0 {
		t.Fatal("degree 1 shipped")
	}
}

// Apply stores a backup copy without answering and without shipping it on
// (only a stub's write is the primary's to ship), and refuses to store a
// copy whose value fails its checksum.
func TestApplyBackup(t *testing.T) {
	st, sh := NewStore(1000), NewShipper(3, time.Second)
	sh.Beacon(p0, 2)
	k := wire.Key{5}
	m := &wire.Msg{Type: wire.TBackup, Key: k[:], Expiry: p0.UnixMilli() + 60000, Checksum: wire.Checksum([]byte("v")), Value: []byte("v")}
	if _, answer := Apply(st, sh, p0.UnixMilli(), m); answer {
		t.Fatal("a backup copy was answered")
	}
	if v, s := st.Get(p0.UnixMilli(), k, m.Expiry); s != wire.OK || string(v) != "v" || sh.Pending() != 0 {
		t.Fatalf("stored %q %v, pending %d", v, s, sh.Pending())
	}
	bad := *m
	bad.Key, bad.Value = []byte{6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []byte("x")
	Apply(st, sh, p0.UnixMilli(), &bad)
	if st.Len() != 1 {
		t.Fatal("a copy failing its checksum was stored")
	}
	w := &wire.Msg{Type: wire.TWrite, ID: 3, Key: k[:], Expiry: m.Expiry, Checksum: wire.Checksum([]byte("w")), Value: []byte("w")}
	if r, answer := Apply(st, sh, p0.UnixMilli(), w); !answer || r.Type != wire.TWriteAck || r.Status != wire.OK || r.ID != 3 || sh.Pending() != 1 {
		t.Fatalf("stub write: %+v %v, pending %d", r, answer, sh.Pending())
	}
}
