package main

import (
	"time"

	"github.com/faultbench/faultbench/internal/benchcpu"
)

// cpuTime is the CPU time, user and system, that the processes pids have
// used so far, all their threads counted; pid 0 is this process.
func cpuTime(pids ...int) (time.Duration, error) {
	var total time.Duration
	for _, pid := range pids {
		t, err := benchcpu.Of(pid)
		if err != nil {
			return 0, err
		}
		total += t
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
