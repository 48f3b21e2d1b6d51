package benchcpu

import (
	"os"
	"testing"
	"time"
)

// Of this process grows by the clock ticks it spins, and agrees with
// getrusage to within a few ticks; a process that does not exist is an
// error.
func TestOfThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc on this system:", err)
	}
	before, err := Of(0)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	x := 0
	for {
		for i := range 1_000_000 {
			x += i
		}
		now, err := Of(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if now-before >= 2*clockTick {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU time went from %v to %v in 10 s of spinning", before, now)
		}
	}
	_ = x
	proc, _ := Of(0)
	if d := Process() - proc; d < -5*clockTick || d > 5*clockTick {
		t.Errorf("/proc says %v, getrusage %v", proc, Process())
	}
	if _, err := Of(1 << 30); err == nil {
		t.Error("Of a process that does not exist: no error")
	}
}
