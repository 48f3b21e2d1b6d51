package disk

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"
)

func newTestDisk(t *testing.T, timeout time.Duration) (*Disk, *Memory) {
	t.Helper()
	m := NewMemory(64 * 1024)
	d, err := New(m, Config{Name: "1", Size: 64 * 1024, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return d, m
}

// TestFaultEffects checks each kind's effect on reads and writes, and that a
// transient fault fires once while a sticky one keeps firing.
func TestFaultEffects(t *testing.T) {
	cases := []struct {
		kind             Kind
		onRead, onWrite  error // nil: unaffected
		readData, wrData bool  // the transfer happens despite the error
	}{
		{ReadCorrectable, ErrRecovered, nil, true, true},
		{ReadUncorrectable, ErrMedium, nil, false, true},
		{WriteCorrectable, nil, ErrRecovered, true, true},
		{WriteUncorrectable, nil, ErrMedium, true, false},
		{HardwareError, ErrHardware, ErrHardware, false, false},
		{IllegalCommand, ErrIllegalRequest, ErrIllegalRequest, false, false},
	}
	for _, c := range cases {
		for _, mode := range []Mode{Transient, Sticky} {
			t.Run(c.kind.String()+"/"+mode.String(), func(t *testing.T) {
				for _, write := range []bool{false, true} {
					d, m := newTestDisk(t, 0)
					copy(m.Bytes(), bytes.Repeat([]byte{7}, 512))
					if _, err := d.Inject(c.kind, mode); err != nil {
						t.Fatal(err)
					}
					want, transfers := c.onRead, c.readData
					if write {
						want, transfers = c.onWrite, c.wrData
					}
					for try := 0; try < 3; try++ {
						buf := bytes.Repeat([]byte{9}, 512)
						var err error
						if write {
							err = d.WriteAt(buf, 0)
						} else {
							err = d.ReadAt(buf, 0)
						}
						expect := want
						if mode == Transient && try > 0 {
							expect = nil
						}
						if expect == nil && err != nil || expect != nil && !errors.Is(err, expect) {
							t.Fatalf("write=%v try %d: err %v, want %v", write, try, err, expect)
						}
						if try > 0 || expect == nil {
							continue
						}
						var did bool
						if write {
							did = m.Bytes()[0] == 9
						} else {
							did = buf[0] == 7
						}
						if did != transfers {
							t.Fatalf("write=%v: transfer happened=%v, want %v", write, did, transfers)
						}
					}
				}
			})
		}
	}
}

func TestRevertStopsStickyFault(t *testing.T) {
	d, _ := newTestDisk(t, 0)
	id, _ := d.Inject(ReadUncorrectable, Sticky)
	buf := make([]byte, 512)
	if err := d.ReadAt(buf, 0); !errors.Is(err, ErrMedium) {
		t.Fatalf("err %v", err)
	}
	if !d.Revert(id) {
		t.Fatal("revert: unknown id")
	}
	if err := d.ReadAt(buf, 0); err != nil {
		t.Fatalf("after revert: %v", err)
	}
	if d.Revert(id) {
		t.Fatal("second revert found the fault again")
	}
	if len(d.Faults()) != 0 {
		t.Fatalf("faults %v", d.Faults())
	}
}

func TestHangTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, _ := newTestDisk(t, 2*time.Second)
		d.Inject(HangRead, Transient)
		start := time.Now()
		if err := d.ReadAt(make([]byte, 512), 0); !errors.Is(err, ErrTimeout) {
			t.Fatalf("err %v", err)
		}
		if el := time.Since(start); el != 2*time.Second {
			t.Fatalf("hung for %v", el)
		}
		if err := d.WriteAt(make([]byte, 512), 0); err != nil {
			t.Fatalf("write during a read hang: %v", err)
		}
		if err := d.ReadAt(make([]byte, 512), 0); err != nil {
			t.Fatalf("transient hang fired twice: %v", err)
		}
	})
}

func TestHangEndsOnRevert(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, _ := newTestDisk(t, 0) // no timeout: waits for ever
		id, _ := d.Inject(HangIdle, Sticky)
		done := make(chan error)
		go func() { done <- d.WriteAt(make([]byte, 512), 0) }()
		time.Sleep(time.Hour)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("hung write returned %v", err)
		default:
		}
		d.Revert(id)
		if err := <-done; err != nil {
			t.Fatalf("after revert: %v", err)
		}
	})
}

func TestHangEndsOnClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, _ := newTestDisk(t, 0)
		d.Inject(HangRead, Sticky)
		done := make(chan error)
		go func() { done <- d.ReadAt(make([]byte, 512), 0) }()
		synctest.Wait()
		d.Close()
		if err := <-done; !errors.Is(err, ErrNotPresent) {
			t.Fatalf("err %v", err)
		}
		d.Close()
	})
}

func TestPowerFailTearsWrite(t *testing.T) {
	d, m := newTestDisk(t, 0)
	id, _ := d.Inject(PowerFail, Transient)
	if !d.Present() {
		t.Fatal("absent before the command")
	}
	if err := d.WriteAt(bytes.Repeat([]byte{5}, 4096), 0); !errors.Is(err, ErrNotPresent) {
		t.Fatalf("err %v", err)
	}
	if m.Bytes()[0] != 5 || m.Bytes()[4095] != 0 {
		t.Fatal("write not torn in the middle")
	}
	if d.Present() {
		t.Fatal("present after power failure")
	}
	if err := d.ReadAt(make([]byte, 512), 0); !errors.Is(err, ErrNotPresent) {
		t.Fatalf("err %v", err)
	}
	d.Revert(id)
	if err := d.ReadAt(make([]byte, 512), 0); err != nil {
		t.Fatalf("power back: %v", err)
	}
}

func TestRemoveAndReinsert(t *testing.T) {
	d, _ := newTestDisk(t, 0)
	id, _ := d.Inject(Remove, Transient)
	if d.Present() {
		t.Fatal("present after removal")
	}
	if err := d.WriteAt(make([]byte, 512), 0); !errors.Is(err, ErrNotPresent) {
		t.Fatalf("err %v", err)
	}
	if f := d.Faults(); len(f) != 1 || !f[0].Active {
		t.Fatalf("faults %+v", f)
	}
	d.Revert(id)
	if !d.Present() {
		t.Fatal("absent after reinsertion")
	}
}

func TestOutOfRange(t *testing.T) {
	d, _ := newTestDisk(t, 0)
	for _, off := range []int64{-512, 64*1024 - 256, 64 * 1024} {
		if err := d.ReadAt(make([]byte, 512), off); !errors.Is(err, ErrOutOfRange) {
			t.Fatalf("off %d: err %v", off, err)
		}
	}
}

func TestCreateFile(t *testing.T) {
	d, err := Create(filepath.Join(t.TempDir(), "d.img"), Config{Name: "1", Size: 8192})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.WriteAt(bytes.Repeat([]byte{1}, 512), 4096); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 512)
	if err := d.ReadAt(buf, 4096); err != nil || buf[511] != 1 {
		t.Fatalf("read back: %v %v", err, buf[511])
	}
	if _, err := Create(filepath.Join(t.TempDir(), "x"), Config{Size: 100}); err == nil {
		t.Fatal("odd size accepted")
	}
}

func TestParseKindRoundTrip(t *testing.T) {
	for _, k := range Kinds() {
		got, err := ParseKind(k.String())
		if err != nil || got != k {
			t.Fatalf("%v: %v %v", k, got, err)
		}
	}
	if _, err := ParseKind("disk-melt"); err == nil {
		t.Fatal("unknown kind accepted")
	}
	if _, err := ParseMode("forever"); err == nil {
		t.Fatal("unknown mode accepted")
	}
}

// TestOverheadQueues: with a per-command overhead the disk serves one
// command at a time, so two concurrent commands take two overheads.
func TestOverheadQueues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, err := New(NewMemory(8192), Config{Name: "1", Size: 8192, Overhead: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		done := make(chan error, 2)
		for i := 0; i < 2; i++ {
			go func() { done <- d.ReadAt(make([]byte, 512), 0) }()
		}
		<-done
		<-done
		if el := time.Since(start); el != 20*time.Millisecond {
			t.Fatalf("two commands took %v", el)
		}
	})
}

// TestBusyCountsServiceNotWaiting: Busy is the time the disk served
// commands; with an overhead the disk serves one at a time, so three
// concurrent commands keep it busy 3 × overhead, although their waits add
// up to more (0 + 1 + 2 overheads in the queue).
func TestBusyCountsServiceNotWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const overhead = 2 * time.Millisecond
		d, err := New(NewMemory(64*1024), Config{Name: "1", Size: 64 * 1024, Overhead: overhead})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		done := make(chan error, 3)
		for i := range 3 {
			go func() { done <- d.ReadAt(make([]byte, SectorSize), int64(i)*SectorSize) }()
		}
		for range 3 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		if st := d.Stats(); st.Busy != 3*overhead || st.Reads != 3 {
			t.Errorf("busy %v after %d reads, want %v", st.Busy, st.Reads, 3*overhead)
		}
		// A hung command is not service: the disk is not busy while it hangs.
		id, err := d.Inject(HangRead, Sticky)
		if err != nil {
			t.Fatal(err)
		}
		go func() { done <- d.ReadAt(make([]byte, SectorSize), 0) }()
		time.Sleep(time.Second)
		d.Revert(id)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if st := d.Stats(); st.Busy != 4*overhead {
			t.Errorf("busy %v after a hang of 1 s and a read, want %v", st.Busy, 4*overhead)
		}
	})
}
