package array

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/faultbench/faultbench/internal/systems/raid/disk"
)

// policyOutcome is whether each policy takes the faulty disk out of service
// (true) or keeps it (false), for a fault in a mode, under a read/write load.
// This table is the one docs/raid.md describes.
var policyOutcome = map[disk.Kind]map[disk.Mode][4]bool{ // paranoid, tolerant, threshold(3, 1m), strict-writes
	disk.ReadCorrectable:    {disk.Transient: {true, false, false, false}, disk.Sticky: {true, false, true, false}},
	disk.ReadUncorrectable:  {disk.Transient: {true, false, false, false}, disk.Sticky: {true, true, true, true}},
	disk.WriteCorrectable:   {disk.Transient: {true, false, false, false}, disk.Sticky: {true, false, true, false}},
	disk.WriteUncorrectable: {disk.Transient: {true, false, false, true}, disk.Sticky: {true, true, true, true}},
	disk.HardwareError:      {disk.Transient: {true, false, false, false}, disk.Sticky: {true, true, true, true}},
	disk.IllegalCommand:     {disk.Transient: {true, true, false, false}, disk.Sticky: {true, true, true, true}},
	disk.HangRead:           {disk.Transient: {true, false, false, false}, disk.Sticky: {true, true, true, true}},
	disk.HangWrite:          {disk.Transient: {true, false, false, false}, disk.Sticky: {true, true, true, true}},
	disk.HangIdle:           {disk.Transient: {true, false, false, false}, disk.Sticky: {true, true, true, true}},
	disk.PowerFail:          {disk.Transient: {true, true, true, true}, disk.Sticky: {true, true, true, true}},
	disk.Remove:             {disk.Transient: {true, true, true, true}, disk.Sticky: {true, true, true, true}},
}

var policies = []TransientPolicy{
	{Kind: Paranoid}, {Kind: Tolerant}, {Kind: Threshold, Count: 3, Period: time.Minute}, {Kind: StrictWrites},
}

// TestEveryFaultEveryPolicy injects each fault of Table 1 in each mode under
// each policy into one disk of a loaded array and checks the policy's
// verdict (out of service or kept), that every read returns exactly the
// data written, and that an automatic rebuild restores redundancy.
func TestEveryFaultEveryPolicy(t *testing.T) {
	for _, k := range disk.Kinds() {
		for _, mode := range []disk.Mode{disk.Transient, disk.Sticky} {
			for pi, pol := range policies {
				name := fmt.Sprintf("%s/%s/%s", k, mode, pol.Kind.name())
				t.Run(name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						checkFault(t, k, mode, pol, policyOutcome[k][mode][pi])
					})
				})
			}
		}
	}
}

func (k PolicyKind) name() string { return TransientPolicy{Kind: k}.String()[:5] }

func checkFault(t *testing.T, k disk.Kind, mode disk.Mode, pol TransientPolicy, wantFailed bool) {
	cfg := testConfig()
	cfg.Policy = pol
	f := newFixture(t, cfg, time.Second)
	rng := rand.New(rand.NewPCG(uint64(k), uint64(mode)))
	data := fill(rng, int(f.Size()))
	if err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Inject(2, k, mode); err != nil {
		t.Fatal(err)
	}
	readAll := func(what string) {
		for off := int64(0); off < f.Size(); off += 4 * BlockSize {
			p := make([]byte, 4*BlockSize)
			if err := f.ReadAt(p, off); err != nil {
				t.Fatalf("%s: read at %d: %v", what, off, err)
			}
			if !bytes.Equal(p, data[off:off+4*BlockSize]) {
				t.Fatalf("%s: wrong bytes at %d", what, off)
			}
		}
	}
	// Writes first (so write faults fire), then reads.
	for off := int64(0); off < f.Size(); off += 8 * BlockSize {
		p := fill(rng, 2*BlockSize)
		if err := f.WriteAt(p, off); err != nil {
			t.Fatalf("write at %d: %v", off, err)
		}
		copy(data[off:], p)
	}
	readAll("under fault")
	failed := f.Status().Disks[1].State != "member"
	if failed != wantFailed {
		t.Fatalf("disk out of service: %v, want %v (events %v)", failed, wantFailed, f.kinds())
	}
	if failed {
		if !f.has("disk.failed") || !f.has("reconstruction.started") {
			t.Fatalf("events %v", f.kinds())
		}
		f.rebuildAll(t)
		if st := f.Status(); st.Redundancy != 1 {
			t.Fatalf("after rebuild: %+v", st)
		}
	} else if f.Status().Redundancy != 1 {
		t.Fatal("redundancy lost although the disk was kept")
	}
	readAll("after")
}

// TestNoFaultSequenceServesWrongBytes drives seeded random sequences of
// faults (every kind, both modes, several disks at once), reverts,
// replacements, forced restarts and rebuild steps under random I/O. Reads
// may fail; a read that succeeds returns exactly what was written (or, for
// a block whose write failed, its old or its new content).
func TestNoFaultSequenceServesWrongBytes(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		for _, pol := range policies {
			t.Run(fmt.Sprintf("seed%d/%s", seed, pol.Kind.name()), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { randomFaultRun(t, seed, pol) })
			})
		}
	}
}

func randomFaultRun(t *testing.T, seed uint64, pol TransientPolicy) {
	cfg := testConfig()
	cfg.Policy = pol
	f := newFixture(t, cfg, time.Second)
	m := newModel(f.Size())
	rng := rand.New(rand.NewPCG(seed, uint64(pol.Kind)))
	kinds := disk.Kinds()
	var ids []int
	blocks := f.Size() / BlockSize
	served := 0
	for i := 0; i < 400; i++ {
		off := rng.Int64N(blocks) * BlockSize
		l := min(int64(1+rng.IntN(6)), blocks-off/BlockSize) * BlockSize
		switch x := rng.IntN(100); {
		case x < 3:
			mode := disk.Transient
			if rng.IntN(2) == 0 {
				mode = disk.Sticky
			}
			id, err := f.Inject(1+rng.IntN(f.Disks()), kinds[rng.IntN(len(kinds))], mode)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		case x < 11 && len(ids) > 0:
			j := rng.IntN(len(ids))
			f.Revert(ids[j])
			ids = append(ids[:j], ids[j+1:]...)
		case x < 13:
			f.ReplaceDisk(1 + rng.IntN(f.Disks()))
		case x < 15:
			if f.Force() != nil && f.isFailed() {
				// Nothing to force back: restore from backup, as the
				// paper's Linux administrator had to.
				f, m, ids = newFixture(t, cfg, time.Second), newModel(f.Size()), nil
			}
		case x < 25:
			f.Poll()
			f.Step(int64(f.chunk) * int64(1+rng.IntN(4)))
		case x < 60:
			p := fill(rng, int(l))
			err := f.WriteAt(p, off)
			m.write(p, off, err == nil)
		default:
			p := make([]byte, l)
			if err := f.ReadAt(p, off); err == nil {
				m.check(t, p, off, fmt.Sprintf("op %d", i))
				served++
			}
		}
		f.clock = f.clock.Add(time.Second)
	}
	if served < 10 {
		t.Errorf("only %d reads served: the sequence is too harsh to test much", served)
	}
}
