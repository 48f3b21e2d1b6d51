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
	// dd makes almost nothing but reads and writes, so "all" is their sum
	// give or take the calls made while perf enabled or disabled its
	// counters one after another (a CI run saw it fall just short).
	if rw := counts["read"] + counts["write"]; counts["all"] < 0.99*rw {
		t.Errorf("all %v/s is fewer than read and write together (%v/s)", counts["all"], rw)
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

func TestTimeWaits(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0B00007F:4C24 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1065 1 0 100 0 0 10 0
   1: 0B00007F:4C24 0100007F:D334 06 00000000:00000000 03:00000220 00000000     0        0 0 3 0
   2: 0100007F:D335 0B00007F:4C24 06 00000000:00000000 03:00000220 00000000     0        0 0 3 0
   3: 0100007F:97B7 0100007F:D334 06 00000000:00000000 03:00000220 00000000     0        0 0 3 0
   4: 0B00007F:4C24 0100007F:D336 01 00000000:00000000 00:00000000 00000000     0        0 0 3 0
`
	if n := timeWaits(table, peerIPHex); n != 2 {
		t.Errorf("timeWaits = %d, want 2: one each way to 127.0.0.11; not the listener, the established one, nor another address's", n)
	}
	table6 := `  sl  local_address                         remote_address                        st
   0: 0000000000000000FFFF00000B00007F:4C24 0000000000000000FFFF00000100007F:D334 06 0
`
	if n := timeWaits(table6, peerIPHex); n != 1 {
		t.Errorf("timeWaits over tcp6 = %d, want 1 (an IPv4-mapped 127.0.0.11)", n)
	}
}
