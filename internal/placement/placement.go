// Package placement pins processes to CPUs — sched_setaffinity(2), what
// taskset(1) does — and describes where a run's processes ran.
//
// Dumitras and Narasimhan (2005) gave every client and every replica its
// own machine; on one host they share its cores, so a measurement partly
// measures the scheduler. Pinning the nodes (scenario key cluster.cpus,
// carried out by a backend that can: the local backend sets the affinity
// every node process is born with) and the controller with its load
// generator (workload.cpus: PinProcess, every thread of this process)
// to disjoint CPUs separates them as far as the machine allows. The
// placement is recorded in every run (provenance.json and summary.json,
// Record). See docs/scenario.md and docs/magical-1pct.md.
package placement

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Mechanism names how a placement was carried out, in Record.
const (
	// MechanismNone: nothing was pinned; the processes ran wherever the
	// scheduler put them.
	MechanismNone = "none"
	// MechanismAffinity: sched_setaffinity, inherited by every thread and
	// child of a pinned process. A process could widen its own affinity
	// again (the nodes of this binary never do; a `command` might).
	MechanismAffinity = "sched_setaffinity"
)

// Record is where a run's processes ran: in provenance.json and in
// summary.json's run section. Key names are part of the results contract:
// add, never rename.
type Record struct {
	// HostCPUs are the CPUs the controller could run on when the run
	// started (its affinity before any pinning), as a CPU list.
	HostCPUs string `json:"host_cpus"`
	// NodeCPUs are the CPUs every node process was pinned to (cluster.cpus);
	// "" when the nodes were not pinned.
	NodeCPUs string `json:"node_cpus"`
	// ControllerCPUs are the CPUs the controller — load generator,
	// recorder, and on the local backend the faultnet link proxies and
	// Pinpoint — was pinned to (workload.cpus); "" when not pinned.
	ControllerCPUs string `json:"controller_cpus"`
	// Mechanism is MechanismAffinity when anything was pinned, else
	// MechanismNone.
	Mechanism string `json:"mechanism"`
}

// ParseCPUList parses a Linux CPU list ("0", "0-1", "0,2-3", the format of
// /proc/PID/status Cpus_allowed_list and taskset -c) and refuses CPUs this
// process may not run on, naming them and the CPUs it may.
func ParseCPUList(s string) ([]int, error) {
	var avail unix.CPUSet
	if err := unix.SchedGetaffinity(0, &avail); err != nil {
		return nil, fmt.Errorf("cpus %q: reading this process's CPU affinity: %w", s, err)
	}
	var cpus []int
	seen := map[int]bool{}
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b-a > 4096 {
			return nil, fmt.Errorf("cpus %q: %q is not a CPU or a range lo-hi (e.g. \"0,2-3\")", s, part)
		}
		for c := a; c <= b; c++ {
			if !avail.IsSet(c) {
				return nil, fmt.Errorf("cpus %q: CPU %d is not available here (available: %s)", s, c, formatSet(&avail))
			}
			if !seen[c] {
				seen[c] = true
				cpus = append(cpus, c)
			}
		}
	}
	return cpus, nil
}

// FormatCPUList writes cpus as a canonical CPU list: ascending, ranges
// joined ("0-2,5").
func FormatCPUList(cpus []int) string {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return formatSet(&set)
}

// Allowed returns the CPUs the calling thread may run on.
func Allowed() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("reading this thread's CPU affinity: %w", err)
	}
	return setCPUs(&set), nil
}

// AllowedList returns Cpus_allowed_list of process (or thread) pid from
// /proc/PID/status: where the kernel lets it run.
func AllowedList(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("/proc/%d/status has no Cpus_allowed_list", pid)
}

// Pin restricts process (or thread) pid to cpus, as taskset -p -c does.
// pid 0 is the calling thread. Only that one thread changes; threads and
// children it creates afterwards inherit the affinity.
func Pin(pid int, cpus []int) error {
	if len(cpus) == 0 {
		return fmt.Errorf("pin %d: no CPUs given", pid)
	}
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(pid, &set); err != nil {
		return fmt.Errorf("pin %d to CPUs %v: %w", pid, cpus, err)
	}
	return nil
}

// PinProcess restricts every thread of this process to cpus and sets
// GOMAXPROCS to their number, so that the Go scheduler does not run more
// threads than the CPUs it may use. (runtime.LockOSThread would pin one
// goroutine's thread, not the goroutines a load generator spreads its
// work over; the process as a whole is what moves.) Threads created later
// inherit the affinity from the thread that creates them. restore puts
// every thread back on the CPUs the calling thread had before and the
// runtime's default GOMAXPROCS; call it once, when the pinned work ended.
func PinProcess(cpus []int) (restore func() error, err error) {
	before, err := Allowed()
	if err != nil {
		return nil, err
	}
	if err := pinThreads(cpus); err != nil {
		_ = pinThreads(before)
		return nil, err
	}
	runtime.GOMAXPROCS(len(cpus))
	return func() error {
		err := pinThreads(before)
		runtime.SetDefaultGOMAXPROCS() // computed from the affinity just restored
		return err
	}, nil
}

// pinThreads sets the affinity of every thread in /proc/self/task,
// repeating until a pass finds no thread it has not set (threads are
// created concurrently; a new one inherits from its creator, which may
// have been set after it was created). A thread that exits meanwhile is
// no error.
func pinThreads(cpus []int) error {
	done := map[int]bool{}
	for pass := 0; pass < 20; pass++ {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("listing this process's threads: %w", err)
		}
		fresh := 0
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			fresh++
			done[tid] = true
			if err := Pin(tid, cpus); err != nil && !errors.Is(err, unix.ESRCH) {
				return err
			}
		}
		if fresh == 0 {
			return nil
		}
	}
	return errors.New("pinning this process's threads: new threads kept appearing")
}

func setCPUs(set *unix.CPUSet) []int {
	var out []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out
}

// formatSet writes set as a CPU list.
func formatSet(set *unix.CPUSet) string {
	var parts []string
	for c := 0; c < len(set)*64; c++ {
		if !set.IsSet(c) {
			continue
		}
		e := c
		for e+1 < len(set)*64 && set.IsSet(e+1) {
			e++
		}
		if e == c {
			parts = append(parts, strconv.Itoa(c))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", c, e))
		}
		c = e
	}
	return strings.Join(parts, ",")
}
