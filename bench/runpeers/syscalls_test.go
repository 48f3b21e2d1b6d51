package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// perfStatOut is perf stat -x, output of this machine's perf 6.1 (stderr),
// a process counted for 2 s.
const perfStatOut = `20644,,raw_syscalls:sys_enter,272276972,100.00,,
3497,,syscalls:sys_enter_read,272276972,100.00,,
3970,,syscalls:sys_enter_epoll_pwait,272276972,100.00,,
0,,syscalls:sys_enter_ioctl,272276972,100.00,,
`

func TestParsePerfStat(t *testing.T) {
	got, err := parsePerfStat(perfStatOut, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"all": 10322, "read": 1748.5, "epoll_pwait": 1985, "ioctl": 0}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %v a second, want %v", k, got[k], v)
		}
	}
	tr := trial{okRate: 1000, syscalls: got}
	row := tr.perRequest()
	if row[0] != 10.322 {
		t.Errorf("all: %v a request, want 10.322", row[0])
	}
	if ew := row[3]; ew != 1.985 { // epoll_wait and epoll_pwait summed
		t.Errorf("epoll_wait column: %v a request, want 1.985", ew)
	}
}

func TestParsePerfStatErrors(t *testing.T) {
	for name, out := range map[string]string{
		"process ended": "<not counted>,,raw_syscalls:sys_enter,0,100.00,,\n",
		"no total":      "12,,syscalls:sys_enter_read,1,100.00,,\n",
		"empty":         "",
	} {
		if _, err := parsePerfStat(out, time.Second); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func FuzzParsePerfStat(f *testing.F) {
	f.Add(perfStatOut)
	f.Add("<not supported>,,syscalls:sys_enter_x,0,0,,\n1,,raw_syscalls:sys_enter,1,1,,")
	f.Fuzz(func(t *testing.T, out string) {
		counts, err := parsePerfStat(out, time.Second)
		if err != nil {
			return
		}
		if _, ok := counts["all"]; !ok {
			t.Fatal("no error and no total")
		}
		if !strings.Contains(out, "raw_syscalls:sys_enter") {
			t.Fatal("a total from output that has none")
		}
	})
}

// TestWaitCountedCountsAProcess counts a real process's system calls with
// perf: dd copying one byte at a time makes a read and a write each.
func TestWaitCountedCountsAProcess(t *testing.T) {
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf not installed")
	}
	if os.Geteuid() != 0 {
		t.Skip("perf's syscall tracepoints need root here")
	}
	cmd := exec.Command("dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=3000000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	o := options{probe: true, duration: time.Second} // probeLength: 0.5 s
	counts, err := o.waitCounted(context.Background(), cmd, "dd", 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if counts == nil {
		t.Skip("perf stat counted nothing (tracepoints unavailable?); see the message above")
	}
	if counts["read"] < 1000 || counts["write"] < 1000 {
		t.Errorf("read %v/s, write %v/s: dd makes one of each a byte", counts["read"], counts["write"])
	}
	if counts["all"] < counts["read"]+counts["write"] {
		t.Errorf("all %v/s is fewer than read and write together", counts["all"])
	}
}

func TestWaitCountedWithoutProbeOnlyWaits(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	counts, err := options{}.waitCounted(context.Background(), cmd, "true", time.Hour)
	if err != nil || counts != nil {
		t.Fatalf("counts %v, err %v; want nil, nil at once", counts, err)
	}
}
