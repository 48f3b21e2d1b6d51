package array

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/faultbench/faultbench/internal/systems/raid/disk"
)

func TestForegroundUtil(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		busy          time.Duration
		cmds, rebuild int64
		members       int
		dt            time.Duration
		want          float64
	}{
		{0, 0, 0, 4, time.Second, 0},
		{400 * ms, 200, 0, 4, time.Second, 0.1},       // 100 ms a disk
		{400 * ms, 200, 100, 4, time.Second, 0.05},    // half the commands were the rebuild's
		{400 * ms, 200, 200, 4, time.Second, 0},       // all of them
		{8 * time.Second, 4000, 0, 4, time.Second, 1}, // more than the disks have: clamped
		{-ms, 10, 0, 4, time.Second, 0},               // a replaced disk's counters restarted
		{400 * ms, 200, 0, 4, 0, 0},
	} {
		if got := foregroundUtil(c.busy, c.cmds, c.rebuild, c.members, c.dt); got < c.want-1e-12 || got > c.want+1e-12 {
			t.Errorf("foregroundUtil(%v, %d, %d, %d, %v) = %v, want %v", c.busy, c.cmds, c.rebuild, c.members, c.dt, got, c.want)
		}
	}
}

// newTimedArray is an array over memory disks that take overhead a
// command, one command at a time, like the node's emulated disks.
func newTimedArray(t *testing.T, overhead time.Duration) *Array {
	t.Helper()
	cfg := testConfig()
	a, err := New(cfg, func(n int, size int64) (*disk.Disk, error) {
		return disk.New(disk.NewMemory(size), disk.Config{Name: fmt.Sprint(n), Size: size, Overhead: overhead})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// TestLoadMeterSeesTheDisksNotTheQueue: the adaptive priority's measure of
// foreground load is the member disks' service time, however many requests
// wait for them, and the rebuild's own commands are not foreground.
func TestLoadMeterSeesTheDisksNotTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const overhead = time.Millisecond
		a := newTimedArray(t, overhead)
		var m loadMeter
		m.read(a)

		// 8 clients, each reading one whole chunk (one command on one
		// disk) every 10 ms for a second: 800 commands, 0.8 s of service
		// over 4 disks. Summing the requests' wall times would count the
		// queueing too.
		var wg sync.WaitGroup
		var mu sync.Mutex
		reads := 0
		start := time.Now()
		for c := range 8 {
			wg.Go(func() {
				buf := make([]byte, a.chunk)
				for i := 0; time.Since(start) < time.Second; i++ {
					stripe := int64((c*31 + i*7) % int(a.stripes))
					if err := a.ReadAt(buf, stripe*int64(a.n-1)*int64(a.chunk)); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					reads++
					mu.Unlock()
					time.Sleep(10 * time.Millisecond)
				}
			})
		}
		wg.Wait()
		dt := time.Since(start)
		want := float64(reads) * float64(overhead) / (float64(dt) * float64(a.n))
		if got := m.foreground(a, dt); got < want*0.999 || got > want*1.001 || got <= 0 {
			t.Errorf("%d reads in %v: foreground utilisation %v, want %v", reads, dt, got, want)
		}

		// A rebuild alone: busy disks, no foreground.
		if _, err := a.Inject(2, disk.Remove, disk.Sticky); err != nil {
			t.Fatal(err)
		}
		a.Poll()
		// A whole stripe touches every member: the pulled one is found
		// missing, its chunk served from parity, and the rebuild starts.
		if err := a.ReadAt(make([]byte, (a.n-1)*a.chunk), 0); err != nil {
			t.Fatal(err)
		}
		if !a.Rebuilding() {
			t.Fatal("no rebuild after a member failed with a spare present")
		}
		m.read(a)
		start = time.Now()
		if n := a.Step(4 * int64(a.chunk)); n == 0 {
			t.Fatal("the rebuild made no progress")
		}
		if got := m.foreground(a, time.Since(start)); got != 0 {
			t.Errorf("foreground utilisation %v while only the rebuild ran, want 0", got)
		}
	})
}
