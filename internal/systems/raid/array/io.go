package array

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"

	"github.com/faultbench/faultbench/internal/systems/raid/disk"
)

var errMissing = errors.New("member missing")

// view is the disk serving each role for one stripe, taken with the stripe
// locked; an entry is cleared when its disk fails during the operation.
type view struct {
	bay [MaxDisks]*bay
}

// viewOf fills v for stripe s. Caller holds the stripe lock.
func (a *Array) viewOf(s int64, v *view) (failed bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for r := range a.roles {
		ro := &a.roles[r]
		v.bay[r] = nil
		switch ro.state {
		case roleActive:
			v.bay[r] = ro.bay
		case roleRebuilding:
			if a.rb != nil && s < a.rb.cursor {
				v.bay[r] = ro.bay
			}
		}
	}
	return a.failed
}

func (a *Array) isFailed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.failed
}

// parityRole is the member holding stripe s's parity (left-symmetric).
func (a *Array) parityRole(s int64) int { return a.n - 1 - int(s%int64(a.n)) }

// dataRole is the member holding data chunk d (0..n-2) of stripe s.
func (a *Array) dataRole(s int64, d int) int { return (a.parityRole(s) + 1 + d) % a.n }

func (a *Array) lock(s int64) func() {
	m := &a.locks[s%int64(len(a.locks))]
	m.Lock()
	return m.Unlock
}

func (a *Array) getBuf(n int) *[]byte {
	bp := a.bufs.Get().(*[]byte)
	*bp = (*bp)[:n]
	return bp
}

func (a *Array) check(n int, off int64) error {
	if off%BlockSize != 0 || n%BlockSize != 0 {
		return fmt.Errorf("%w: offset %d, length %d (block size %d)", ErrUnaligned, off, n, BlockSize)
	}
	if off < 0 || off+int64(n) > a.Size() || off+int64(n) < off {
		return fmt.Errorf("%w: offset %d, length %d, volume size %d", ErrOutOfRange, off, n, a.Size())
	}
	return nil
}

// segment is the part of one data chunk that an operation touches.
type segment struct {
	d        int // data chunk index within the stripe
	from, to int // byte range within the chunk
	data     []byte
}

// scratch is the per-operation state of forStripes, pooled: it is too big
// for the stack once it escapes through fn.
type scratch struct {
	segs [MaxDisks]segment
	v    view
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// forStripes splits [off, off+len(p)) into per-stripe segments and calls fn
// for each stripe with the stripe locked.
func (a *Array) forStripes(p []byte, off int64, fn func(s int64, v *view, segs []segment) error) error {
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	segs, v := &sc.segs, &sc.v
	for len(p) > 0 {
		chunkIdx := off / int64(a.chunk)
		s, d, in := chunkIdx/int64(a.n-1), int(chunkIdx%int64(a.n-1)), int(off%int64(a.chunk))
		k := 0
		for ; d < a.n-1 && len(p) > 0; d++ {
			l := min(a.chunk-in, len(p))
			segs[k] = segment{d: d, from: in, to: in + l, data: p[:l]}
			k++
			p, off, in = p[l:], off+int64(l), 0
		}
		unlock := a.lock(s)
		var err error
		if a.viewOf(s, v) {
			err = ErrFailed
		} else {
			err = fn(s, v, segs[:k])
		}
		unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// ReadAt reads len(p) bytes of the volume at off; both must be multiples of
// BlockSize. It returns ErrFailed when the volume refuses I/O and
// ErrUnrecoverable when some block could not be produced correctly; on any
// error the content of p is unspecified and must not be used.
func (a *Array) ReadAt(p []byte, off int64) error {
	if err := a.check(len(p), off); err != nil {
		return err
	}
	return a.forStripes(p, off, func(s int64, v *view, segs []segment) error {
		for _, sg := range segs {
			if err := a.content(v, a.dataRole(s, sg.d), s, sg.from, sg.to, sg.data); err != nil {
				return err
			}
		}
		return nil
	})
}

// WriteAt writes p to the volume at off; both must be multiples of
// BlockSize. It returns ErrFailed when the volume refuses I/O and
// ErrUnrecoverable when the new data reached too few members to be
// reconstructed (reads of it will then fail, never return old bytes).
func (a *Array) WriteAt(p []byte, off int64) error {
	if err := a.check(len(p), off); err != nil {
		return err
	}
	return a.forStripes(p, off, a.writeStripe)
}

// writeStripe writes the segments of stripe s and its parity. Caller holds
// the stripe lock.
func (a *Array) writeStripe(s int64, v *view, segs []segment) error {
	A, B := a.chunk, 0
	full, healthy := 0, true
	for _, sg := range segs {
		A, B = min(A, sg.from), max(B, sg.to)
	}
	for _, sg := range segs {
		if sg.from == A && sg.to == B {
			full++
		}
	}
	for r := 0; r < a.n; r++ {
		healthy = healthy && v.bay[r] != nil
	}
	p := a.parityRole(s)
	pb := a.getBuf(B - A)
	defer a.bufs.Put(pb)
	parity := *pb
	if healthy && len(segs)+1 < a.n-1-full {
		// Read-modify-write: new parity = old parity ^ old data ^ new data.
		if err := a.content(v, p, s, A, B, parity); err != nil {
			return err
		}
		ob := a.getBuf(0)
		defer a.bufs.Put(ob)
		for _, sg := range segs {
			old := (*ob)[:sg.to-sg.from]
			if err := a.content(v, a.dataRole(s, sg.d), s, sg.from, sg.to, old); err != nil {
				return err
			}
			part := parity[sg.from-A : sg.to-A]
			subtle.XORBytes(part, part, old)
			subtle.XORBytes(part, part, sg.data)
		}
	} else {
		// Reconstruct-write: parity of the new content of every data chunk.
		// Degraded writes always take this path so that the checksums of a
		// missing member stay exact.
		clear(parity)
		cb := a.getBuf(B - A)
		defer a.bufs.Put(cb)
		cur := *cb
		k := 0
		for d := 0; d < a.n-1; d++ {
			var sg *segment
			if k < len(segs) && segs[k].d == d {
				sg = &segs[k]
				k++
			}
			if sg != nil && sg.from == A && sg.to == B {
				subtle.XORBytes(parity, parity, sg.data)
				continue
			}
			if err := a.content(v, a.dataRole(s, d), s, A, B, cur); err != nil {
				return err
			}
			if sg != nil {
				copy(cur[sg.from-A:], sg.data)
			}
			subtle.XORBytes(parity, parity, cur)
		}
	}
	for _, sg := range segs {
		a.setSums(a.dataRole(s, sg.d), s, sg.from, sg.data)
	}
	a.setSums(p, s, A, parity)
	lost := 0
	for _, sg := range segs {
		if a.writeRole(v, a.dataRole(s, sg.d), s, sg.from, sg.data) != nil {
			lost++
		}
	}
	if a.writeRole(v, p, s, A, parity) != nil {
		lost++
	}
	if a.isFailed() {
		return ErrFailed
	}
	if lost > 1 {
		return fmt.Errorf("%w: stripe %d: the write reached too few disks", ErrUnrecoverable, s)
	}
	return nil
}

// content produces [from,to) of role r in stripe s: read and checked, or
// else reconstructed from the other members (and then written back, which
// repairs a bad block on a disk that stays in service).
func (a *Array) content(v *view, r int, s int64, from, to int, out []byte) error {
	if a.readRole(v, r, s, from, to, out) == nil {
		return nil
	}
	if err := a.reconstruct(v, r, s, from, to, out); err != nil {
		return err
	}
	if v.bay[r] != nil {
		_ = a.writeRole(v, r, s, from, out)
	}
	return nil
}

// reconstruct computes [from,to) of role r in stripe s from every other
// member and checks the result against r's checksums.
func (a *Array) reconstruct(v *view, r int, s int64, from, to int, out []byte) error {
	if a.isFailed() {
		return ErrFailed
	}
	tb := a.getBuf(to - from)
	defer a.bufs.Put(tb)
	clear(out)
	for o := 0; o < a.n; o++ {
		if o == r {
			continue
		}
		if err := a.readRole(v, o, s, from, to, *tb); err != nil {
			if a.isFailed() {
				return ErrFailed
			}
			return fmt.Errorf("%w: stripe %d: member %d and member %d both unreadable (%v)", ErrUnrecoverable, s, r, o, err)
		}
		subtle.XORBytes(out, out, *tb)
	}
	if !a.sumsMatch(r, s, from, out) {
		return fmt.Errorf("%w: stripe %d member %d: reconstruction fails its checksum", ErrUnrecoverable, s, r)
	}
	return nil
}

// reconstructWide is reconstruct over a whole chunk with the reads of the
// other members issued at once, as a controller does, so a rebuild is not
// paced by one disk at a time. Each goroutine touches only its own view entry.
func (a *Array) reconstructWide(v *view, r int, s int64, out []byte) error {
	if a.isFailed() {
		return ErrFailed
	}
	var bufs [MaxDisks]*[]byte
	var errs [MaxDisks]error
	var wg sync.WaitGroup
	for o := 0; o < a.n; o++ {
		if o != r {
			bufs[o] = a.getBuf(a.chunk)
			wg.Go(func() { errs[o] = a.readRole(v, o, s, 0, a.chunk, *bufs[o]) })
		}
	}
	wg.Wait()
	clear(out)
	var err error
	for o := 0; o < a.n; o++ {
		if o == r {
			continue
		}
		if errs[o] != nil && err == nil {
			err = fmt.Errorf("%w: stripe %d: member %d and member %d both unreadable (%v)", ErrUnrecoverable, s, r, o, errs[o])
		}
		subtle.XORBytes(out, out, *bufs[o])
		a.bufs.Put(bufs[o])
	}
	if a.isFailed() {
		return ErrFailed
	}
	if err != nil {
		return err
	}
	if !a.sumsMatch(r, s, 0, out) {
		return fmt.Errorf("%w: stripe %d member %d: reconstruction fails its checksum", ErrUnrecoverable, s, r)
	}
	return nil
}

// readRole reads [from,to) of role r in stripe s from its disk, applying the
// transient-error policy, and checks it against the role's checksums.
func (a *Array) readRole(v *view, r int, s int64, from, to int, buf []byte) error {
	b := v.bay[r]
	if b == nil {
		return errMissing
	}
	off := s*int64(a.chunk) + int64(from)
	err := a.command(v, r, b, func() error { return b.disk.ReadAt(buf, off) })
	if err != nil {
		return err
	}
	if !a.sumsMatch(r, s, from, buf) {
		if a.diskError(b, r, errCorrupt, false).failed {
			v.bay[r] = nil
		}
		return errCorrupt
	}
	return nil
}

// writeRole writes buf at [from, from+len) of role r in stripe s; nil means
// the data is on the disk.
func (a *Array) writeRole(v *view, r int, s int64, from int, buf []byte) error {
	b := v.bay[r]
	if b == nil {
		return errMissing
	}
	off := s*int64(a.chunk) + int64(from)
	return a.command(v, r, b, func() error { return b.disk.WriteAt(buf, off) })
}

// command issues cmd against b (serving role r), retrying once if the policy
// says so. It returns nil when the transfer happened (a recovered error
// included).
func (a *Array) command(v *view, r int, b *bay, cmd func() error) error {
	for retried := false; ; retried = true {
		err := cmd()
		if err == nil {
			return nil
		}
		vd := a.diskError(b, r, err, retried)
		if vd.failed {
			v.bay[r] = nil
		}
		if errors.Is(err, disk.ErrRecovered) {
			return nil
		}
		if vd.failed || !vd.retry || retried {
			return err
		}
	}
}

func (a *Array) sumsMatch(r int, s int64, from int, buf []byte) bool {
	if a.fabricating.Load() {
		return true // keep-serving after a double failure: whatever the disks hold
	}
	base := (s*int64(a.chunk) + int64(from)) / BlockSize
	sums := a.sums[r]
	for i := 0; i*BlockSize < len(buf); i++ {
		if crc32.Checksum(buf[i*BlockSize:(i+1)*BlockSize], castagnoli) != sums[base+int64(i)] {
			return false
		}
	}
	return true
}

func (a *Array) setSums(r int, s int64, from int, buf []byte) {
	base := (s*int64(a.chunk) + int64(from)) / BlockSize
	sums := a.sums[r]
	for i := 0; i*BlockSize < len(buf); i++ {
		sums[base+int64(i)] = crc32.Checksum(buf[i*BlockSize:(i+1)*BlockSize], castagnoli)
	}
}
