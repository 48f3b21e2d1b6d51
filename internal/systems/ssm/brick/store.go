package brick

import (
	"math/rand"
	"slices"
	"sort"

	"github.com/faultbench/faultbench/internal/systems/ssm/wire"
)

// Store is a brick's memory: a set of hash tables, one per expiry generation
// (Ling, Kiciman and Fox 2004, §3.3). State expiring at e lives in the table of generation
// ceil(e/G); the table is dropped whole once its generation has passed, so
// garbage collection never scans entries. A read names the expiry, so it
// looks in exactly one table.
//
// Store is a deterministic state machine: time enters only as the now
// argument (Unix milliseconds). It is not safe for concurrent use; the
// brick's processing goroutine owns it.
type Store struct {
	gen    int64 // generation width, ms
	tables map[int64]map[wire.Key]*entry
	where  map[wire.Key]int64 // key → generation holding it
	bytes  int64
	recent [recentLen]wire.Key // the keys of the last puts, a ring
	puts   int                 // puts so far; recent[(puts-1)%recentLen] is the latest
}

// recentLen bounds how far back Flip's "latest" reaches.
const recentLen = 64

// entry is one stored session copy. Besides the value's checksum (the
// writer's, checked against the value), it keeps the key and expiry it was
// written with and a guard over key, expiry and checksum — the paper's
// checksum(H, v, E) (§3.2) — so a bit flip in the entry's structure (its
// expiry or checksum field, §5.6) is found on the next read like one in its
// value, instead of passing for "not found".
type entry struct {
	value    []byte
	checksum uint32
	expiry   int64
	key      wire.Key
	guard    uint64
}

// entryGuard is FNV-1a-64 over key, expiry and checksum. Each step of
// FNV-1a is a bijection of its 64-bit state, so any change to one input
// byte — in particular every single-bit flip — changes the guard. It is
// computed inline (no slice to hand to a hash function), so Put and Get
// allocate nothing for it.
func entryGuard(key wire.Key, expiry int64, checksum uint32) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for _, b := range key {
		h = (h ^ uint64(b)) * prime
	}
	for i := range 8 {
		h = (h ^ uint64(byte(expiry>>(8*i)))) * prime
	}
	for i := range 4 {
		h = (h ^ uint64(byte(checksum>>(8*i)))) * prime
	}
	return h
}

// intact reports whether e's structure is as written, e filed under key.
func (e *entry) intact(key wire.Key) bool {
	return e.key == key && e.guard == entryGuard(e.key, e.expiry, e.checksum)
}

// entryOverhead approximates the bytes a stored entry costs beyond its value
// (key, map slots, header), so MemoryUsed moves with NumElements too.
const entryOverhead = 96

// NewStore returns an empty store with generations genMillis wide (≥ 1).
func NewStore(genMillis int64) *Store {
	if genMillis < 1 {
		genMillis = 1
	}
	return &Store{gen: genMillis, tables: map[int64]map[wire.Key]*entry{}, where: map[wire.Key]int64{}}
}

func (s *Store) generation(expiry int64) int64 {
	g := expiry / s.gen
	if expiry%s.gen != 0 && expiry > 0 {
		g++
	}
	return g
}

// Put stores a copy of value under key. It answers Expired when expiry is
// not after now. A key already stored (in any generation) is replaced: a
// session is written whole and only its last value matters. The copy goes
// into the replaced entry's memory when it fits, so a brick whose sessions
// are rewritten at a steady size allocates nothing for them (and its
// collector has nothing to do); a value Get returned earlier may change.
func (s *Store) Put(now int64, key wire.Key, expiry int64, checksum uint32, value []byte) wire.Status {
	if expiry <= now {
		return wire.Expired
	}
	e := s.remove(key)
	if e == nil || cap(e.value) < len(value) {
		e = &entry{value: make([]byte, 0, len(value))}
	}
	e.value = append(e.value[:0], value...)
	e.checksum, e.expiry, e.key = checksum, expiry, key
	e.guard = entryGuard(key, expiry, checksum)
	g := s.generation(expiry)
	t := s.tables[g]
	if t == nil {
		t = map[wire.Key]*entry{}
		s.tables[g] = t
	}
	t[key] = e
	s.where[key] = g
	s.bytes += int64(len(value)) + entryOverhead
	s.recent[s.puts%recentLen] = key
	s.puts++
	return wire.OK
}

// Get returns the value stored under key with this expiry. The value aliases
// the store: the caller must copy or encode it before the next call. Corrupt
// means a bit flip in memory: the entry found under key fails its guard (its
// key, expiry or checksum field changed) or its value no longer matches its
// checksum. NotFound means no intact entry with this expiry: never written,
// rewritten with another expiry, or filed under a flipped key (FlipKey).
func (s *Store) Get(now int64, key wire.Key, expiry int64) ([]byte, wire.Status) {
	if expiry <= now {
		return nil, wire.Expired
	}
	e := s.tables[s.generation(expiry)][key]
	if e == nil {
		return nil, wire.NotFound
	}
	if !e.intact(key) {
		return nil, wire.Corrupt
	}
	if e.expiry != expiry {
		return nil, wire.NotFound
	}
	if wire.Checksum(e.value) != e.checksum {
		return e.value, wire.Corrupt
	}
	return e.value, wire.OK
}

// remove takes key's entry out of the store and returns it (nil when there
// was none), for Put to reuse.
func (s *Store) remove(key wire.Key) *entry {
	g, ok := s.where[key]
	if !ok {
		return nil
	}
	e := s.tables[g][key]
	if e != nil {
		s.bytes -= int64(len(e.value)) + entryOverhead
		delete(s.tables[g], key)
	}
	delete(s.where, key)
	return e
}

// Expire drops every generation whose time has passed and returns how many
// entries went with them.
func (s *Store) Expire(now int64) int {
	removed := 0
	for g, t := range s.tables {
		if g*s.gen > now {
			continue
		}
		for k, e := range t {
			s.bytes -= int64(len(e.value)) + entryOverhead
			delete(s.where, k)
			removed++
		}
		delete(s.tables, g)
	}
	return removed
}

// Len is the number of stored entries (NumElements).
func (s *Store) Len() int { return len(s.where) }

// Bytes is the memory the entries use, approximately (MemoryUsed).
func (s *Store) Bytes() int64 { return s.bytes }

// Generations is the number of live hash tables.
func (s *Store) Generations() int { return len(s.tables) }

// FlipTarget says what a bit flip damages.
type FlipTarget string

// Flip targets: the stored value (the brick's own check, and the stub's,
// catch it), or the hash table's structure — the entry's checksum or expiry
// field (its guard catches it: the next read answers Corrupt), or the key
// the entry is filed under (the entry becomes unreachable: reads answer
// NotFound, which no check can tell from a session never written there).
const (
	FlipValue    FlipTarget = "value"
	FlipKey      FlipTarget = "key"
	FlipChecksum FlipTarget = "checksum"
	FlipExpiry   FlipTarget = "expiry"
)

// Flip flips one bit of one entry: the most recently written one when
// latest is set (the paper's "object just written and about to be read"),
// else one drawn from rng. It reports false when the store is empty or the
// latest entry is gone.
func (s *Store) Flip(target FlipTarget, latest bool, rng *rand.Rand) (wire.Key, bool) {
	if latest {
		keys := s.Latest(1)
		if len(keys) == 0 || keys[0] != s.recent[(s.puts-1)%recentLen] {
			return wire.Key{}, false
		}
		s.FlipEntry(target, keys[0], rng)
		return keys[0], true
	}
	var key wire.Key
	{
		if len(s.where) == 0 {
			return key, false
		}
		keys := make([]wire.Key, 0, len(s.where))
		for k := range s.where {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return string(keys[i][:]) < string(keys[j][:]) })
		key = keys[rng.Intn(len(keys))]
	}
	s.FlipEntry(target, key, rng)
	return key, true
}

// Latest returns up to n distinct stored keys, most recently written first
// (at most recentLen puts back).
func (s *Store) Latest(n int) []wire.Key {
	var out []wire.Key
	for i := s.puts - 1; i >= 0 && i >= s.puts-recentLen && len(out) < n; i-- {
		k := s.recent[i%recentLen]
		if _, ok := s.where[k]; ok && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// FlipEntry flips one bit (drawn from rng) of target in the entry stored
// under key; false when there is none.
func (s *Store) FlipEntry(target FlipTarget, key wire.Key, rng *rand.Rand) bool {
	g, ok := s.where[key]
	if !ok {
		return false
	}
	e := s.tables[g][key]
	switch target {
	case FlipValue:
		if len(e.value) == 0 {
			e.checksum ^= 1
			break
		}
		bit := rng.Intn(len(e.value) * 8)
		e.value[bit/8] ^= 1 << (bit % 8)
	case FlipKey:
		bit := rng.Intn(wire.KeyLen * 8)
		flipped := key
		flipped[bit/8] ^= 1 << (bit % 8)
		delete(s.tables[g], key)
		delete(s.where, key)
		if old, ok := s.tables[g][flipped]; ok {
			s.bytes -= int64(len(old.value)) + entryOverhead
		}
		s.tables[g][flipped] = e
		s.where[flipped] = g
	case FlipChecksum:
		e.checksum ^= 1 << rng.Intn(32)
	case FlipExpiry:
		e.expiry ^= 1 << rng.Intn(8)
	}
	return true
}
