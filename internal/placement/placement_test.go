package placement

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func cpusAllowed(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("no Cpus_allowed_list in /proc/PID/status")
	return ""
}

// TestPinChild: a pinned child process is allowed exactly the CPU asked.
func TestPinChild(t *testing.T) {
	avail := cpusAllowed(t, os.Getpid())
	cpus, err := ParseCPUList(avail)
	if err != nil {
		t.Fatalf("this process's own CPUs %q: %v", avail, err)
	}
	last := cpus[len(cpus)-1]
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if err := Pin(cmd.Process.Pid, []int{last}); err != nil {
		t.Fatal(err)
	}
	if got := cpusAllowed(t, cmd.Process.Pid); got != strconv.Itoa(last) {
		t.Errorf("Cpus_allowed_list %q, want %d", got, last)
	}
}

func TestParseCPUList(t *testing.T) {
	got, err := ParseCPUList("0")
	if err != nil || len(got) != 1 || got[0] != 0 {
		t.Errorf("0: %v %v", got, err)
	}
	for _, bad := range []string{"", "x", "1-0", "-1", "100000"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	_, err = ParseCPUList("4000")
	if err == nil || !strings.Contains(err.Error(), "not available here") {
		t.Errorf("a CPU the machine lacks: %v", err)
	}
}

func TestFormatCPUList(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{{nil, ""}, {[]int{0}, "0"}, {[]int{3, 0, 1, 2, 7}, "0-3,7"}, {[]int{1, 1}, "1"}} {
		if got := FormatCPUList(c.in); got != c.want {
			t.Errorf("FormatCPUList(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestPinProcess: every thread of this process — including ones started
// after the pin — runs on the CPU asked, GOMAXPROCS follows, and restore
// puts every thread back.
func TestPinProcess(t *testing.T) {
	before := cpusAllowed(t, os.Getpid())
	cpus, err := ParseCPUList(before)
	if err != nil {
		t.Fatal(err)
	}
	last := cpus[len(cpus)-1]
	restore, err := PinProcess([]int{last})
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOMAXPROCS(0) != 1 {
		t.Errorf("GOMAXPROCS %d while pinned to one CPU", runtime.GOMAXPROCS(0))
	}
	// A thread the runtime creates now inherits the pin.
	done := make(chan struct{})
	go func() { runtime.LockOSThread(); <-done }()
	for _, tid := range threads(t) {
		if got, err := AllowedList(tid); err == nil && got != strconv.Itoa(last) {
			t.Errorf("thread %d: Cpus_allowed_list %q, want %d", tid, got, last)
		}
	}
	close(done)
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	for _, tid := range threads(t) {
		if got, err := AllowedList(tid); err == nil && got != before {
			t.Errorf("after restore, thread %d: %q, want %q", tid, got, before)
		}
	}
	if runtime.GOMAXPROCS(0) != runtime.NumCPU() && len(cpus) == runtime.NumCPU() {
		t.Errorf("GOMAXPROCS %d after restore", runtime.GOMAXPROCS(0))
	}
}

func threads(t *testing.T) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skip(err)
	}
	var out []int
	for _, e := range ents {
		if id, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, id)
		}
	}
	return out
}
