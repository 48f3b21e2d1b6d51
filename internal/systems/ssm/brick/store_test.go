package brick

import (
	"math/rand"
	"testing"

	"github.com/faultbench/faultbench/internal/systems/ssm/wire"
)

func key(b byte) wire.Key { var k wire.Key; k[0] = b; return k }

func TestStoreGenerations(t *testing.T) {
	s := NewStore(1000)
	v := []byte("state")
	cs := wire.Checksum(v)
	// Expiries 1500 and 2000 share generation 2; 2500 is in generation 3.
	for i, exp := range []int64{1500, 2000, 2500} {
		if st := s.Put(0, key(byte(i)), exp, cs, v); st != wire.OK {
			t.Fatalf("Put %d: %v", i, st)
		}
	}
	if s.Generations() != 2 || s.Len() != 3 {
		t.Fatalf("generations=%d len=%d, want 2 and 3", s.Generations(), s.Len())
	}
	if got, st := s.Get(100, key(0), 1500); st != wire.OK || string(got) != "state" {
		t.Fatalf("Get = %q %v", got, st)
	}
	if _, st := s.Get(100, key(0), 1600); st != wire.NotFound {
		t.Fatalf("Get with another expiry = %v, want not-found", st)
	}
	if n := s.Expire(1999); n != 0 {
		t.Fatalf("Expire(1999) removed %d before generation 2 ended", n)
	}
	if n := s.Expire(2000); n != 2 {
		t.Fatalf("Expire(2000) removed %d, want 2", n)
	}
	if s.Len() != 1 || s.Bytes() != int64(len(v))+entryOverhead {
		t.Fatalf("after expiry len=%d bytes=%d", s.Len(), s.Bytes())
	}
	if _, st := s.Get(2600, key(2), 2500); st != wire.Expired {
		t.Fatalf("Get after expiry = %v, want expired", st)
	}
	if st := s.Put(3000, key(4), 3000, cs, v); st != wire.Expired {
		t.Fatalf("Put of expired state = %v", st)
	}
}

func TestStoreRewriteMovesGeneration(t *testing.T) {
	s := NewStore(1000)
	s.Put(0, key(1), 1500, 1, []byte("a"))
	s.Put(0, key(1), 5500, 2, []byte("bb"))
	if s.Len() != 1 || s.Bytes() != 2+entryOverhead {
		t.Fatalf("len=%d bytes=%d after rewrite", s.Len(), s.Bytes())
	}
	if _, st := s.Get(0, key(1), 1500); st != wire.NotFound {
		t.Fatalf("old expiry still readable: %v", st)
	}
}

// A rewrite at the same size or smaller reuses the replaced entry: no
// allocation, and what is read back is the last value, whole, with the
// right bytes count; a larger one gets memory of its own.
func TestStoreRewriteReusesMemory(t *testing.T) {
	s := NewStore(1000)
	a, b := make([]byte, 8192), make([]byte, 8192)
	for i := range a {
		a[i], b[i] = byte(i), byte(i*7)
	}
	ca, cb := wire.Checksum(a), wire.Checksum(b)
	s.Put(0, key(1), 1500, ca, a)
	allocs := testing.AllocsPerRun(100, func() {
		s.Put(0, key(1), 1500, cb, b) // same generation
		s.Put(0, key(1), 2500, ca, a) // another generation
	})
	if allocs != 0 {
		t.Errorf("rewrites of the same size: %.1f allocations each pair, want 0", allocs)
	}
	if got, st := s.Get(0, key(1), 2500); st != wire.OK || string(got) != string(a) {
		t.Fatalf("Get after rewrites: status %v, value equal %v", st, string(got) == string(a))
	}
	short := []byte("short")
	s.Put(0, key(1), 1500, wire.Checksum(short), short)
	if got, st := s.Get(0, key(1), 1500); st != wire.OK || string(got) != "short" {
		t.Fatalf("Get after a shorter rewrite = %q %v", got, st)
	}
	if want := int64(len(short)) + entryOverhead; s.Bytes() != want || s.Len() != 1 {
		t.Fatalf("Bytes %d, Len %d after rewrites; want %d and 1", s.Bytes(), s.Len(), want)
	}
	long := append(append([]byte(nil), a...), b...)
	s.Put(0, key(1), 1500, wire.Checksum(long), long)
	if got, st := s.Get(0, key(1), 1500); st != wire.OK || string(got) != string(long) {
		t.Fatalf("Get after a longer rewrite: status %v, %d bytes", st, len(got))
	}
}

// A flip in a value or in an entry's checksum or expiry field is found on
// the next read (Corrupt: exit_on_corrupt crashes on it); one in the key an
// entry is filed under makes it unreachable (NotFound). Never OK.
func TestStoreFlips(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	v := []byte("0123456789")
	for _, tc := range []struct {
		target FlipTarget
		want   wire.Status
	}{{FlipValue, wire.Corrupt}, {FlipChecksum, wire.Corrupt}, {FlipKey, wire.NotFound}, {FlipExpiry, wire.Corrupt}} {
		s := NewStore(1000)
		if _, ok := s.Flip(tc.target, true, rng); ok {
			t.Fatalf("flip in an empty store succeeded")
		}
		s.Put(0, key(1), 1500, wire.Checksum(v), v)
		if _, ok := s.Flip(tc.target, true, rng); !ok {
			t.Fatalf("%s: no flip", tc.target)
		}
		if _, st := s.Get(0, key(1), 1500); st != tc.want {
			t.Errorf("%s: Get = %v, want %v", tc.target, st, tc.want)
		}
	}
}

// Every single-bit flip of every structure field, one at a time, is caught
// or hides the entry; none reads back as OK.
func TestStoreEveryStructureFlip(t *testing.T) {
	v := []byte("session")
	k := key(7)
	for _, target := range []FlipTarget{FlipChecksum, FlipExpiry, FlipKey, FlipValue} {
		for seed := range int64(64) {
			s := NewStore(1000)
			s.Put(0, k, 1500, wire.Checksum(v), v)
			s.Put(0, key(8), 1500, wire.Checksum(v), v) // a neighbour, so key flips may collide
			if !s.FlipEntry(target, k, rand.New(rand.NewSource(seed))) {
				t.Fatalf("%s: no entry", target)
			}
			if _, st := s.Get(0, k, 1500); st == wire.OK {
				t.Fatalf("%s seed %d: damaged entry read back OK", target, seed)
			}
			if _, st := s.Get(0, key(8), 1500); st != wire.OK && target != FlipKey {
				t.Fatalf("%s seed %d: the neighbour reads %v", target, seed, st)
			}
		}
	}
}

// Latest lists distinct stored keys, most recently written first, so a
// "latest" bit flip of count n damages the n objects written last.
func TestStoreLatest(t *testing.T) {
	s := NewStore(1000)
	v := []byte("v")
	if got := s.Latest(3); len(got) != 0 {
		t.Fatalf("empty store: %v", got)
	}
	for _, k := range []byte{1, 2, 3, 2, 4} {
		s.Put(0, key(k), 1500, wire.Checksum(v), v)
	}
	got := s.Latest(3)
	if len(got) != 3 || got[0] != key(4) || got[1] != key(2) || got[2] != key(3) {
		t.Fatalf("Latest(3) = %x, want keys 4, 2, 3", got)
	}
	if got := s.Latest(10); len(got) != 4 {
		t.Fatalf("Latest(10) = %d keys, want the 4 stored", len(got))
	}
	for range recentLen + 5 {
		s.Put(0, key(9), 1500, wire.Checksum(v), v)
	}
	if got := s.Latest(10); len(got) != 1 || got[0] != key(9) {
		t.Fatalf("after %d puts of one key: %x, want only it (recentLen bounds the look-back)", recentLen+5, got)
	}
}

func BenchmarkStorePutGet8K(b *testing.B) {
	s := NewStore(1000)
	v := make([]byte, 8192)
	cs := wire.Checksum(v)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k := key(byte(i))
		s.Put(0, k, 60_000, cs, v)
		if _, st := s.Get(0, k, 60_000); st != wire.OK {
			b.Fatal(st)
		}
		i++
	}
}

// The guard changes under every single-bit flip of key, expiry and
// checksum (exhaustively: 224 bits).
func TestEntryGuardEveryBit(t *testing.T) {
	k, exp, cs := key(42), int64(1_795_000_000_123), uint32(0xdeadbeef)
	g := entryGuard(k, exp, cs)
	for bit := range wire.KeyLen * 8 {
		f := k
		f[bit/8] ^= 1 << (bit % 8)
		if entryGuard(f, exp, cs) == g {
			t.Errorf("key bit %d: guard unchanged", bit)
		}
	}
	for bit := range 64 {
		if entryGuard(k, exp^(1<<bit), cs) == g {
			t.Errorf("expiry bit %d: guard unchanged", bit)
		}
	}
	for bit := range 32 {
		if entryGuard(k, exp, cs^(1<<bit)) == g {
			t.Errorf("checksum bit %d: guard unchanged", bit)
		}
	}
}
