package main

import (
	"os"
	"testing"
	"time"
)

func TestCPUTimeOfThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc on this system:", err)
	}
	before, err := cpuTime(0)
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the kernel has charged this process at least two clock
	// ticks more, bounded in time.
	deadline := time.Now().Add(10 * time.Second)
	x := 0
	for {
		for i := range 1_000_000 {
			x += i
		}
		now, err := cpuTime(0)
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
	if _, err := cpuTime(1 << 30); err == nil {
		t.Error("cpuTime of a process that does not exist: no error")
	}
}
