package array

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/faultbench/faultbench/internal/systems/raid/disk"
)

// The read/write hot paths, over memory disks so that only the RAID layer's
// own cost (mapping, parity, checksums, locking) is measured, beside the
// same workload on one memory disk. bench/raid does the same over files.

const benchDiskSize = 32 << 20

type blockDevice interface {
	ReadAt(p []byte, off int64) error
	WriteAt(p []byte, off int64) error
}

func benchArray(b *testing.B, degraded bool) (*Array, int64) {
	cfg := DefaultConfig()
	cfg.DiskSize = benchDiskSize
	cfg.Spares = 0
	a, err := New(cfg, func(n int, size int64) (*disk.Disk, error) {
		return disk.New(disk.NewMemory(size), disk.Config{Name: fmt.Sprint(n), Size: size})
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close() })
	if err := a.WriteAt(make([]byte, a.Size()), 0); err != nil { // every block written once
		b.Fatal(err)
	}
	if degraded {
		a.Inject(2, disk.Remove, disk.Sticky)
	}
	return a, a.Size()
}

func benchSingle(b *testing.B) (blockDevice, int64) {
	d, err := disk.New(disk.NewMemory(3*benchDiskSize), disk.Config{Name: "single", Size: 3 * benchDiskSize})
	if err != nil {
		b.Fatal(err)
	}
	if err := d.WriteAt(make([]byte, 3*benchDiskSize), 0); err != nil { // as the array: every block written once
		b.Fatal(err)
	}
	return d, 3 * benchDiskSize
}

func runIO(b *testing.B, dev blockDevice, size int64, write, random bool, ioSize int) {
	buf := make([]byte, ioSize)
	rng := rand.New(rand.NewPCG(1, 2))
	slots := size / int64(ioSize)
	b.SetBytes(int64(ioSize))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		off := int64(i) % slots * int64(ioSize)
		if random {
			off = rng.Int64N(slots) * int64(ioSize)
		}
		var err error
		if write {
			err = dev.WriteAt(buf, off)
		} else {
			err = dev.ReadAt(buf, off)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

var patterns = []struct {
	name   string
	random bool
	size   int
}{{"seq1M", false, 1 << 20}, {"rand4K", true, 4096}, {"rand64K", true, 64 << 10}}

func BenchmarkRead(b *testing.B) {
	for _, p := range patterns {
		b.Run(p.name+"/single", func(b *testing.B) { d, n := benchSingle(b); runIO(b, d, n, false, p.random, p.size) })
		b.Run(p.name+"/raid5", func(b *testing.B) { a, n := benchArray(b, false); runIO(b, a, n, false, p.random, p.size) })
		b.Run(p.name+"/raid5-degraded", func(b *testing.B) { a, n := benchArray(b, true); runIO(b, a, n, false, p.random, p.size) })
	}
}

func BenchmarkWrite(b *testing.B) {
	for _, p := range patterns {
		b.Run(p.name+"/single", func(b *testing.B) { d, n := benchSingle(b); runIO(b, d, n, true, p.random, p.size) })
		b.Run(p.name+"/raid5", func(b *testing.B) { a, n := benchArray(b, false); runIO(b, a, n, true, p.random, p.size) })
		b.Run(p.name+"/raid5-degraded", func(b *testing.B) { a, n := benchArray(b, true); runIO(b, a, n, true, p.random, p.size) })
	}
}

// BenchmarkRebuildStep is the cost of reconstructing one chunk onto a spare.
func BenchmarkRebuildStep(b *testing.B) {
	cfg := DefaultConfig()
	cfg.DiskSize = benchDiskSize
	a, err := New(cfg, func(n int, size int64) (*disk.Disk, error) {
		return disk.New(disk.NewMemory(size), disk.Config{Name: fmt.Sprint(n), Size: size})
	})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	a.Inject(1, disk.Remove, disk.Sticky)
	b.SetBytes(int64(cfg.ChunkSize))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !a.Rebuilding() {
			b.StopTimer()
			a.ReplaceDisk(1)
			a.Inject(5, disk.Remove, disk.Sticky) // lose the rebuilt disk: rebuild onto the new spare
			b.StartTimer()
		}
		a.Step(int64(cfg.ChunkSize))
	}
}
