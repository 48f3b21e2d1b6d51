package array

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/faultbench/faultbench/internal/systems/raid/disk"
)

// Brown and Patterson (2000) §4.2's double failure with a spare: a member fails, the rebuild
// onto the spare starts, the wrong live disk is pulled (volume failed), put
// back and the volume forced. The rebuild that follows, under concurrent
// reads and writes, loses no block and every read returns what was written.
func TestForceThenRebuildUnderLoadLosesNothing(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		cfg := testConfig()
		cfg.DiskSize = 64 * int64(cfg.ChunkSize)
		cfg.Recon.Auto = true
		f := newFixture(t, cfg, 0)
		rng := rand.New(rand.NewPCG(seed, 7))
		data := fill(rng, int(f.Size()))
		if err := f.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
		f.Inject(2, disk.Remove, disk.Sticky)
		for range 1 + rng.IntN(20) {
			f.Step(int64(f.chunk))
		}
		resp, err := f.Inject(3, disk.Remove, disk.Sticky)
		if err != nil {
			t.Fatal(err)
		}
		if st := f.Status(); st.State != "failed" {
			t.Fatalf("seed %d: after the wrong pull: %+v; events %v", seed, st, f.kinds())
		}
		f.Revert(resp)
		if err := f.Force(); err != nil {
			t.Fatalf("seed %d: force: %v (events %v)", seed, err, f.kinds())
		}
		var mu sync.Mutex // guards data against the writer
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for c := range 3 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(seed, uint64(c)))
				buf := make([]byte, BlockSize)
				for {
					select {
					case <-stop:
						return
					default:
					}
					off := int64(r.IntN(int(f.Size()/BlockSize))) * BlockSize
					if c == 0 {
						mu.Lock()
						nb := fill(r, BlockSize)
						if err := f.WriteAt(nb, off); err == nil {
							copy(data[off:], nb)
						}
						mu.Unlock()
						continue
					}
					mu.Lock()
					err := f.ReadAt(buf, off)
					if err == nil && !bytes.Equal(buf, data[off:off+BlockSize]) {
						t.Errorf("seed %d: block %d: wrong bytes", seed, off/BlockSize)
					}
					mu.Unlock()
				}
			})
		}
		f.rebuildAll(t)
		close(stop)
		wg.Wait()
		if st := f.Status(); st.LostBlocks != 0 {
			t.Fatalf("seed %d: %d blocks lost after force and rebuild; events %v", seed, st.LostBlocks, f.kinds())
		}
	}
}

// Closing the array (the node shutting down) in the middle of a rebuild
// is not a loss: no block is marked lost and no blocks.lost event is
// emitted (a run's end used to report hundreds).
func TestCloseDuringRebuildLosesNothing(t *testing.T) {
	cfg := testConfig()
	cfg.DiskSize = 64 * int64(cfg.ChunkSize)
	f := newFixture(t, cfg, 0)
	if err := f.WriteAt(fill(rand.New(rand.NewPCG(1, 1)), int(f.Size())), 0); err != nil {
		t.Fatal(err)
	}
	f.Inject(2, disk.Remove, disk.Sticky)
	f.Step(int64(f.chunk))
	if !f.Rebuilding() {
		t.Fatal("no rebuild after the removal")
	}
	f.Close()
	for range 3 {
		f.Step(int64(f.chunk))
	}
	if st := f.Status(); st.LostBlocks != 0 || f.has("blocks.lost") {
		t.Fatalf("%d blocks lost at close; events %v", st.LostBlocks, f.kinds())
	}
}
