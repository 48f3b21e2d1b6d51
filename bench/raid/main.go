// Command raid measures the RAID-5 array of internal/systems/raid over
// file-backed emulated disks, beside the same workload on one backing file
// (the overhead of RAID), healthy and degraded, and the reconstruction
// speed at each priority, idle and under a random-read load (how much the
// foreground loses while the array rebuilds: the trade-off of Brown and Patterson 2000, §4.2).
// docs/benchmarks.md ("RAID") records its output.
//
//	go run ./bench/raid [-dir DIR] [-disk-size 64MiB] [-time 2s]
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/systems/raid"
	"github.com/faultbench/faultbench/internal/systems/raid/array"
	"github.com/faultbench/faultbench/internal/systems/raid/disk"
)

var (
	rebuildOverhead time.Duration
	onlyRebuild     bool
	// loadClients is the number of concurrent clients of the reconstruction
	// runs: 4 keep each disk busy about two thirds of the time, 32 saturate
	// them.
	loadClients int
)

type device interface {
	ReadAt(p []byte, off int64) error
	WriteAt(p []byte, off int64) error
}

func main() {
	dir := flag.String("dir", "", "directory for the backing files (default: a temporary one)")
	sizeFlag := flag.String("disk-size", "64MiB", "bytes per disk")
	rebuildFlag := flag.String("rebuild-size", "16MiB", "bytes per disk for the reconstruction runs")
	dur := flag.Duration("time", 2*time.Second, "duration of each throughput case")
	flag.DurationVar(&rebuildOverhead, "io-overhead", 500*time.Microsecond, "per-command disk overhead in the reconstruction runs (disks then serve one command at a time)")
	flag.BoolVar(&onlyRebuild, "only-rebuild", false, "skip the throughput cases")
	flag.IntVar(&loadClients, "clients", 4, "concurrent clients of the load during the reconstruction runs (1-256)")
	flag.Parse()
	if loadClients < 1 || loadClients > 256 {
		fmt.Fprintf(os.Stderr, "bench/raid: -clients %d: want 1 to 256\n", loadClients)
		os.Exit(2)
	}
	if err := run(*dir, *sizeFlag, *rebuildFlag, *dur); err != nil {
		fmt.Fprintln(os.Stderr, "raid bench:", err)
		os.Exit(1)
	}
}

func run(dir, sizeFlag, rebuildFlag string, dur time.Duration) error {
	size, err := raid.ParseSize(sizeFlag)
	if err != nil {
		return err
	}
	rebuildSize, err := raid.ParseSize(rebuildFlag)
	if err != nil {
		return err
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "faultbench-bench-raid-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	fmt.Printf("disk size %s, chunk 32KiB, 4 active disks + 1 spare, %s a case in %d alternating rounds (median), files in %s\n\n", sizeFlag, dur, rounds, dir)
	fmt.Println("| workload | single file MB/s | RAID-5 MB/s | ratio | degraded MB/s | ratio |")
	fmt.Println("|---|---|---|---|---|---|")
	workloads := []struct {
		name   string
		write  bool
		random bool
		io     int
	}{
		{"sequential read 1 MiB", false, false, 1 << 20}, {"sequential write 1 MiB", true, false, 1 << 20},
		{"random read 4 KiB", false, true, 4 << 10}, {"random write 4 KiB", true, true, 4 << 10},
		{"random read 64 KiB", false, true, 64 << 10}, {"random write 64 KiB", true, true, 64 << 10},
	}
	if onlyRebuild {
		workloads = nil
	}
	for _, w := range workloads {
		// The machine is shared: the three devices take turns, rounds times,
		// and each gets the median of its rounds.
		single, err := disk.Create(filepath.Join(dir, "single.img"), disk.Config{Name: "single", Size: 3 * size})
		if err != nil {
			return err
		}
		if err := single.WriteAt(make([]byte, 3*size), 0); err != nil {
			return err
		}
		healthy, err := newArray(dir+"/h", size, array.Reconstruction{Auto: false, Priority: array.High})
		if err != nil {
			return err
		}
		degradedArr, err := newArray(dir+"/d", size, array.Reconstruction{Auto: false, Priority: array.High})
		if err != nil {
			return err
		}
		degradedArr.Inject(2, disk.Remove, disk.Sticky)
		var runs [3][]float64
		for r := 0; r < rounds; r++ {
			runs[0] = append(runs[0], measure(single, 3*size, w.write, w.random, w.io, dur/rounds))
			runs[1] = append(runs[1], measure(healthy, healthy.Size(), w.write, w.random, w.io, dur/rounds))
			runs[2] = append(runs[2], measure(degradedArr, degradedArr.Size(), w.write, w.random, w.io, dur/rounds))
		}
		single.Close()
		healthy.Close()
		degradedArr.Close()
		s, rates := median(runs[0]), [2]float64{median(runs[1]), median(runs[2])}
		fmt.Printf("| %s | %.0f | %.0f | %.2f | %.0f | %.2f |\n", w.name, s, rates[0], rates[0]/s, rates[1], rates[1]/s)
	}

	fmt.Printf("\nreconstruction of a %s disk (array.Run ticking every %s), disks with a %s overhead a command; load: %d clients doing random 4 KiB reads\n\n",
		rebuildFlag, raid.Tick, rebuildOverhead, loadClients)
	fmt.Println("| priority | idle: rebuild time | idle: MB/s | loaded: rebuild time | loaded: MB/s | load's reads/s during rebuild ÷ before |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, p := range []struct {
		name string
		r    array.Reconstruction
	}{
		{"none (degraded, no rebuild, 3 s)", array.Reconstruction{Priority: array.Low, LowRate: array.DefaultLowRate}},
		{"low (2MB/s)", array.Reconstruction{Auto: true, Priority: array.Low, LowRate: array.DefaultLowRate}},
		{"adaptive (2..200MB/s)", array.Reconstruction{Auto: true, Priority: array.Adaptive, LowRate: array.DefaultLowRate, MaxRate: array.DefaultMaxRate}},
		{"high (unlimited)", array.Reconstruction{Auto: true, Priority: array.High}},
		{"fixed 20MB/s", array.Reconstruction{Auto: true, Priority: array.Fixed, Rate: 20 * array.MB}},
	} {
		idle, _, err := rebuild(dir, rebuildSize, p.r, false)
		if err != nil {
			return err
		}
		loaded, ratio, err := rebuild(dir, rebuildSize, p.r, true)
		if err != nil {
			return err
		}
		mbps := func(d time.Duration) float64 { return float64(rebuildSize) / 1e6 / d.Seconds() }
		if !p.r.Auto {
			fmt.Printf("| %s | — | — | — | — | %.2f |\n", p.name, ratio)
			continue
		}
		fmt.Printf("| %s | %s | %.1f | %s | %.1f | %.2f |\n", p.name, idle.Round(time.Millisecond), mbps(idle),
			loaded.Round(time.Millisecond), mbps(loaded), ratio)
	}
	return nil
}

const rounds = 5

func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}

func newArray(dir string, size int64, r array.Reconstruction) (*array.Array, error) {
	return newArrayOverhead(dir, size, r, 0)
}

func newArrayOverhead(dir string, size int64, r array.Reconstruction, overhead time.Duration) (*array.Array, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cfg := array.DefaultConfig()
	cfg.DiskSize = size
	cfg.Recon = r
	a, err := array.New(cfg, func(n int, size int64) (*disk.Disk, error) {
		return disk.Create(filepath.Join(dir, fmt.Sprintf("disk-%d.img", n)), disk.Config{Name: fmt.Sprint(n), Size: size, Overhead: overhead})
	})
	if err != nil {
		return nil, err
	}
	// Every block written once, like the single file (in large writes, so
	// the overhead does not make this slow).
	return a, a.WriteAt(make([]byte, a.Size()), 0) // every block written once, like the single file
}

// measure runs one client for dur and returns MB/s.
func measure(dev device, size int64, write, random bool, ioSize int, dur time.Duration) float64 {
	buf := make([]byte, ioSize)
	rng := rand.New(rand.NewPCG(1, 2))
	slots := size / int64(ioSize)
	var n int64
	start := time.Now()
	for i := int64(0); time.Since(start) < dur; i++ {
		off := i % slots * int64(ioSize)
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
			fmt.Fprintln(os.Stderr, "I/O error:", err)
			return 0
		}
		n += int64(ioSize)
	}
	return float64(n) / 1e6 / time.Since(start).Seconds()
}

// rebuild removes a member and times the reconstruction onto the spare;
// with load, it also returns the load's read rate during the rebuild over
// its rate just before.
func rebuild(dir string, size int64, r array.Reconstruction, load bool) (time.Duration, float64, error) {
	a, err := newArrayOverhead(dir, size, r, rebuildOverhead)
	if err != nil {
		return 0, 0, err
	}
	defer a.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var reads atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for c := 0; load && c < loadClients; c++ {
		wg.Go(func() {
			buf := make([]byte, 4096)
			rng := rand.New(rand.NewPCG(3, uint64(c)))
			for ctx.Err() == nil {
				if a.ReadAt(buf, rng.Int64N(a.Size()/4096)*4096) == nil {
					reads.Add(1)
				}
			}
		})
	}
	time.Sleep(time.Second)
	before := float64(reads.Load())
	wg.Go(func() { a.Run(ctx, raid.Tick) })
	a.Inject(1, disk.Remove, disk.Sticky)
	start := time.Now()
	r0 := reads.Load()
	for a.Rebuilding() {
		if time.Since(start) > 5*time.Minute {
			return 0, 0, fmt.Errorf("reconstruction at %s did not finish in 5 minutes", r)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !r.Auto {
		time.Sleep(3 * time.Second) // degraded, no rebuild: the cost of degraded mode alone
	}
	took := time.Since(start)
	ratio := 0.0
	if before > 0 {
		ratio = float64(reads.Load()-r0) / took.Seconds() / before
	}
	return took, ratio, nil
}
