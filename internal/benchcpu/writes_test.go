package benchcpu

import (
	"os"
	"testing"
)

// Ten writes to a pipe are ten more write system calls.
func TestWritesCountsThisProcess(t *testing.T) {
	if _, ok := Writes(); !ok {
		t.Skip("/proc/self/io cannot be read here")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	before, _ := Writes()
	for range 10 {
		if _, err := w.Write([]byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	after, _ := Writes()
	// Other goroutines of the test binary may write too: at least ten.
	if after-before < 10 {
		t.Fatalf("syscw went from %d to %d after 10 writes", before, after)
	}
}
