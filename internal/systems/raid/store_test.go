package raid

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/pageset"
)

// memVolume is a Volume in memory.
type memVolume []byte

func (m memVolume) ReadAt(p []byte, off int64) error  { copy(p, m[off:]); return nil }
func (m memVolume) WriteAt(p []byte, off int64) error { copy(m[off:], p); return nil }
func (m memVolume) Size() int64                       { return int64(len(m)) }

func TestStoreLogWraps(t *testing.T) {
	vol := make(memVolume, 1<<20)
	s, err := NewStore(vol, 2, 100, 8192)
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	for i := 0; i < 300; i++ {
		line := []byte("line " + string(rune('a'+i%26)) + " of the access log\n")
		all = append(all, line...)
		s.AppendLog(line)
		if i%7 == 0 {
			if err := s.FlushLog(); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.FlushLog()
	got, err := s.ReadLog(5000)
	if err != nil || !bytes.Equal(got, all[len(all)-5000:]) {
		t.Fatalf("tail after wrap: %v\n%q", err, got)
	}
	if _, err := NewStore(vol, 1000, 4096, 8192); err == nil {
		t.Fatal("a store larger than the volume was accepted")
	}
}

// FuzzStoreRecord: whatever bytes a page slot holds, Get returns either an
// error or a body that matches the checksum in the slot's header — the
// store's own end-to-end guard behind the array's block checksums.
func FuzzStoreRecord(f *testing.F) {
	good := make([]byte, slotSize(200))
	body := pageset.Body(1, 200)
	copy(good[recordHeader:], body)
	encodeHeader(good, 1, body)
	f.Add(good)
	f.Add(good[:20])
	f.Add([]byte("FBP1\x01\x00\x00\x00\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, slot []byte) {
		vol := make(memVolume, 1<<16)
		s, err := NewStore(vol, 4, 200, 4096)
		if err != nil {
			t.Fatal(err)
		}
		copy(vol[s.slot:2*s.slot], slot)
		got, err := s.Get(nil, 1)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if crc32.Checksum(got, crcTable) != binary.LittleEndian.Uint32(vol[s.slot+12:]) || int(binary.LittleEndian.Uint32(vol[s.slot+8:])) != len(got) {
			t.Fatal("served a body that does not match its record")
		}
	})
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"32KiB", "4096", "1G", "0", "-1k", "9999999999999GiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err == nil && n <= 0 {
			t.Fatalf("%q -> %d", s, n)
		}
	})
}

// blockingVolume is a memVolume whose writes wait until release is closed:
// a log write stuck on a hung disk. entered is told when a write starts.
type blockingVolume struct {
	memVolume
	entered chan struct{}
	release chan struct{}
}

func (b blockingVolume) WriteAt(p []byte, off int64) error {
	b.entered <- struct{}{}
	<-b.release
	return b.memVolume.WriteAt(p, off)
}

// A flush stuck on the volume does not hold up the page requests that log
// their lines meanwhile; their lines go out with the next flush.
func TestAppendLogDoesNotWaitForAStuckFlush(t *testing.T) {
	vol := blockingVolume{memVolume: make(memVolume, 1<<20), entered: make(chan struct{}, 2), release: make(chan struct{})}
	s, err := NewStore(vol, 4, 4096, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	s.AppendLog([]byte("first\n"))
	flushed := make(chan error, 1)
	go func() { flushed <- s.FlushLog() }()
	<-vol.entered // the flush is now stuck in WriteAt
	appended := make(chan struct{})
	go func() { s.AppendLog([]byte("second\n")); close(appended) }()
	select {
	case <-appended:
	case <-time.After(time.Minute): // a bound, not a timing: it returns at once unless it waits for the flush
		close(vol.release)
		t.Fatal("AppendLog waits for the stuck flush")
	}
	close(vol.release)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if err := s.FlushLog(); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadLog(64 << 10)
	if err != nil || string(got) != "first\nsecond\n" {
		t.Fatalf("log %q, %v; want both lines", got, err)
	}
}
