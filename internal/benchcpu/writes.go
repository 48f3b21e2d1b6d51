package benchcpu

import (
	"bytes"
	"os"
	"strconv"
	"testing"
)

// Writes is how many write system calls (write, writev, sendto, ...) the
// process has made so far, from /proc/self/io's syscw; ok is false where
// that file cannot be read.
func Writes() (n int64, ok bool) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, false
	}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if v, found := bytes.CutPrefix(line, []byte("syscw:")); found {
			n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// WritesPerOp starts counting; the function it returns, called at the end
// of the benchmark, reports the write system calls per operation as
// "writes/op" (nothing where /proc/self/io cannot be read). For a
// benchmark whose servers run in process, their writes count too.
func WritesPerOp(b *testing.B) func() {
	start, ok := Writes()
	return func() {
		if end, ok2 := Writes(); ok && ok2 {
			b.ReportMetric(float64(end-start)/float64(b.N), "writes/op")
		}
	}
}
