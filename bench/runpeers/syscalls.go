package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// The system calls a generator makes a request (-syscalls), counted with
// perf stat on the syscalls tracepoints in runs at the same-rate runs'
// rate, after them (the tracepoints cost each system call a little, so no
// CPU figure is taken from these runs): how many times each tool enters
// the kernel for one request, the other half of its CPU per request beside
// what each entry costs (bench/perfsplit).

// syscallNames are the system calls counted by name; "all" counts every
// one (raw_syscalls:sys_enter), so "all" minus the named ones is the rest.
var syscallNames = []string{
	"read", "write", "epoll_wait", "epoll_pwait", "epoll_ctl", "timerfd_settime", "ioctl", "futex",
	"nanosleep", "connect", "close", "socket", "setsockopt", "getsockopt", "getpeername", "fcntl",
}

// syscallColumns are the same-rate table's columns: each a name, or names
// summed.
var syscallColumns = []struct {
	head  string
	names []string
}{
	{"read", []string{"read"}},
	{"write", []string{"write"}},
	{"epoll_wait", []string{"epoll_wait", "epoll_pwait"}},
	{"epoll_ctl", []string{"epoll_ctl"}},
	{"timerfd_settime", []string{"timerfd_settime"}},
	{"ioctl", []string{"ioctl"}},
	{"futex", []string{"futex"}},
	{"connect, socket, close, sockopts", []string{"connect", "socket", "close", "setsockopt", "getsockopt", "getpeername", "fcntl"}},
}

// waitCounted waits for cmd, which has started, and with o.probe (the
// same-rate runs with -syscalls) counts its system calls meanwhile with
// perf stat, for probeLength from after its start: the delay puts the
// count inside the load (past faultbench's cluster start and warm-up).
// The count is nil without a probe, and when perf failed (said on stderr:
// the run stands, its system calls uncounted); the error is cmd's.
func (o options) waitCounted(ctx context.Context, cmd *exec.Cmd, tool string, after time.Duration) (map[string]float64, error) {
	if !o.probe {
		return nil, cmd.Wait()
	}
	type count struct {
		perSecond map[string]float64
		err       error
	}
	done := make(chan count, 1)
	go func() {
		c, err := o.countSyscalls(ctx, cmd.Process.Pid, after)
		done <- count{c, err}
	}()
	err := cmd.Wait()
	c := <-done // bounded by after + probeLength, or sooner when the process is gone
	if c.err != nil {
		fmt.Fprintf(os.Stderr, "runpeers: %s's system calls not counted: %v\n", tool, c.err)
	}
	return c.perSecond, err
}

// countSyscalls counts pid's system calls a second by name, with perf
// stat, for probeLength from after.
func (o options) countSyscalls(ctx context.Context, pid int, after time.Duration) (map[string]float64, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(after):
	}
	events := []string{"raw_syscalls:sys_enter"}
	for _, n := range syscallNames {
		events = append(events, "syscalls:sys_enter_"+n)
	}
	length := o.probeLength()
	cmd := exec.CommandContext(ctx, "perf", "stat", "-x,", "-e", strings.Join(events, ","), "-p", strconv.Itoa(pid),
		"--", "sleep", strconv.FormatFloat(length.Seconds(), 'f', 3, 64))
	var out bytes.Buffer
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("perf stat: %w\n%s", err, out.String())
	}
	return parsePerfStat(out.String(), length)
}

// probeLength is how long each run's system calls are counted.
func (o options) probeLength() time.Duration {
	return max(500*time.Millisecond, min(2*time.Second, o.duration-2*time.Second))
}

// parsePerfStat reads perf stat -x, output (count,unit,event,...) into
// counts per second by system call name.
func parsePerfStat(out string, length time.Duration) (map[string]float64, error) {
	counts := map[string]float64{}
	for line := range strings.Lines(out) {
		f := strings.Split(strings.TrimSpace(line), ",")
		if len(f) < 3 {
			continue
		}
		n, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			if strings.HasPrefix(f[0], "<not") {
				return nil, fmt.Errorf("perf stat did not count %s: did the process end first?", f[2])
			}
			continue
		}
		name, ok := strings.CutPrefix(f[2], "syscalls:sys_enter_")
		switch {
		case f[2] == "raw_syscalls:sys_enter":
			name = "all"
		case !ok || name == "all":
			continue // not an event asked for
		}
		counts[name] = n / length.Seconds()
	}
	if _, ok := counts["all"]; !ok {
		return nil, fmt.Errorf("perf stat printed no count of raw_syscalls:sys_enter:\n%s", out)
	}
	return counts, nil
}

// perRequest is the trial's system calls a request, by column ("all"
// first); nil when they were not counted.
func (t trial) perRequest() []float64 {
	if t.syscalls == nil || t.okRate <= 0 {
		return nil
	}
	row := []float64{t.syscalls["all"] / t.okRate}
	for _, c := range syscallColumns {
		var n float64
		for _, name := range c.names {
			n += t.syscalls[name]
		}
		row = append(row, n/t.okRate)
	}
	return row
}

// printSyscalls prints the same-rate runs' system calls a request, the
// median of each column over the runs.
func printSyscalls(mode string, rate float64, length time.Duration, tools []string, got [][]trial) {
	head := "| mode | rate/s | tool | all"
	rule := "|---|---|---|---"
	for _, c := range syscallColumns {
		head += " | " + c.head
		rule += "|---"
	}
	fmt.Printf("\nSystem calls a request at %.0f/s, %s (perf stat on the syscalls tracepoints for %s of each run; median of the runs):\n\n%s |\n%s|\n",
		rate, mode, length, head, rule)
	for i, name := range tools {
		var cols [][]float64
		for _, t := range got[i] {
			if row := t.perRequest(); row != nil {
				for len(cols) < len(row) {
					cols = append(cols, nil)
				}
				for j, v := range row {
					cols[j] = append(cols[j], v)
				}
			}
		}
		if cols == nil {
			fmt.Printf("| %s | %.0f | %s | not counted |\n", mode, rate, name)
			continue
		}
		line := fmt.Sprintf("| %s | %.0f | %s", mode, rate, name)
		for _, c := range cols {
			line += fmt.Sprintf(" | %.2f", median(c))
		}
		fmt.Println(line + " |")
	}
}
