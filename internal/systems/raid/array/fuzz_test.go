package array

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzBlockRequest: any (offset, length) is either rejected as unaligned or
// out of range, or served; a write then a read of the same range returns
// the bytes written, and nothing outside it changes.
func FuzzBlockRequest(f *testing.F) {
	f.Add(int64(0), 4096, byte(1))
	f.Add(int64(4096*5), 4096*7, byte(2))
	f.Add(int64(-4096), 4096, byte(3))
	f.Add(int64(1)<<62, 4096, byte(4))
	f.Add(int64(100), 5, byte(5))
	f.Fuzz(func(t *testing.T, off int64, n int, fillByte byte) {
		a := newFixture(t, testConfig(), 0)
		if n < 0 || n > int(a.Size())+2*BlockSize {
			return
		}
		p := bytes.Repeat([]byte{fillByte}, n)
		err := a.WriteAt(p, off)
		aligned := off%BlockSize == 0 && n%BlockSize == 0
		inRange := off >= 0 && off+int64(n) <= a.Size() && off+int64(n) >= off
		switch {
		case !aligned:
			if !errors.Is(err, ErrUnaligned) {
				t.Fatalf("unaligned (%d,%d): %v", off, n, err)
			}
			return
		case !inRange:
			if !errors.Is(err, ErrOutOfRange) {
				t.Fatalf("out of range (%d,%d): %v", off, n, err)
			}
			return
		case err != nil:
			t.Fatalf("write (%d,%d): %v", off, n, err)
		}
		all := make([]byte, a.Size())
		if err := a.ReadAt(all, 0); err != nil {
			t.Fatal(err)
		}
		want := make([]byte, a.Size())
		copy(want[off:], p)
		if !bytes.Equal(all, want) {
			t.Fatalf("volume content after write (%d,%d) is wrong", off, n)
		}
	})
}

func FuzzParseTransientPolicy(f *testing.F) {
	for _, s := range []string{"paranoid", "tolerant", "threshold(3, 10m)", "threshold(1,1ns)", "threshold(,)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseTransientPolicy(s)
		if err != nil {
			return
		}
		q, err := ParseTransientPolicy(p.String())
		if err != nil || q != p {
			t.Fatalf("%q -> %v -> %v %v", s, p, q, err)
		}
	})
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"20MB/s", "1KB/s", "1e3", "0.5GB/s", "B/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err == nil && r <= 0 {
			t.Fatalf("%q -> %d", s, r)
		}
	})
}
