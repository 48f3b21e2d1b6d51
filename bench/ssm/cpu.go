package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc/PID/stat's utime and stime (USER_HZ,
// 100 on Linux whatever the kernel's HZ).
const clockTick = 10 * time.Millisecond

// cpuTime is the CPU time, user and system, that the processes pids have
// used so far, all their threads counted; pid 0 is this process. A process
// that cannot be read counts nothing, and the error says which.
func cpuTime(pids ...int) (time.Duration, error) {
	var total time.Duration
	for _, pid := range pids {
		name := "/proc/self/stat"
		if pid != 0 {
			name = "/proc/" + strconv.Itoa(pid) + "/stat"
		}
		b, err := os.ReadFile(name)
		if err != nil {
			return 0, err
		}
		// The command name, field 2, is in parentheses and may hold
		// spaces: count fields after its closing one. utime and stime
		// are fields 14 and 15, so the 12th and 13th after it.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		if i < 0 || len(f) < 13 {
			return 0, fmt.Errorf("%s: %d fields after the command name, want at least 13", name, len(f))
		}
		for _, v := range f[11:13] {
			t, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", name, err)
			}
			total += time.Duration(t) * clockTick
		}
	}
	return total, nil
}

// cpuMeter measures the CPU time a set of processes spend between start
// and stop.
type cpuMeter struct {
	pids  []int
	begin time.Duration
	err   error
}

func startCPU(pids ...int) *cpuMeter {
	m := &cpuMeter{pids: pids}
	m.begin, m.err = cpuTime(pids...)
	return m
}

// perOp is the CPU time spent since start divided by ops, plus extra (a
// child process's own time, known once it exited); 0 when it could not be
// read or nothing succeeded.
func (m *cpuMeter) perOp(ops int, extra time.Duration) time.Duration {
	end, err := cpuTime(m.pids...)
	if m.err != nil || err != nil || ops == 0 {
		return 0
	}
	return (end - m.begin + extra) / time.Duration(ops)
}
