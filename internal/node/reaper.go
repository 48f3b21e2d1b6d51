package node

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ReaperKind is the internal node kind the testbed starts once per cluster
// to guarantee no orphans. It reads lines on stdin:
//
//	+PGID   a process group to kill        -PGID  no longer
//	#ENTRY  kill every process whose environment has an entry starting ENTRY
//	@DIR    kill every process in the cgroup v2 directory DIR, then remove it
//
// and when stdin reaches EOF (the controller exited or was SIGKILLed) it
// does all of that and exits. Pdeathsig alone only reaches the testbed's
// direct children; the process group reaches their children (e.g. the
// processes a user's `command` forks), and the environment tag and the
// cgroup reach daemons that left the group with setsid.
const ReaperKind = "reaper"

func init() {
	Register(ReaperKind, func(ctx context.Context, cfg Config) error {
		return Reap(ctx, stdin)
	})
}

// stdin is a variable so the reaper can be tested in-process.
var stdin io.Reader = os.Stdin

// Reap runs the reaper protocol on r until EOF or ctx ends, then SIGKILLs
// every listed process group. It never returns an error for a bad line: a
// reaper that dies early would leave orphans.
func Reap(ctx context.Context, r io.Reader) error {
	groups := map[int]bool{}
	var tags, cgroups []string
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	defer func() {
		for pgid := range groups {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		for _, dir := range cgroups {
			_ = KillCgroup(dir, true)
		}
		for _, entry := range tags {
			KillByEnv(entry)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case line, ok := <-lines:
			if !ok {
				return nil
			}
			if len(line) < 2 {
				continue
			}
			switch line[0] {
			case '#':
				if strings.Contains(line, "=") { // never a bare prefix that could match every process
					tags = append(tags, line[1:])
				}
				continue
			case '@':
				if filepath.IsAbs(line[1:]) {
					cgroups = append(cgroups, filepath.Clean(line[1:]))
				}
				continue
			}
			pgid, err := strconv.Atoi(line[1:])
			if err != nil || pgid <= 1 {
				continue
			}
			switch line[0] {
			case '+':
				groups[pgid] = true
			case '-':
				delete(groups, pgid)
			}
		}
	}
}

// KillByEnv SIGKILLs every process (but this one) whose environment has an
// entry starting with entry (e.g. "FAULTBENCH_NODE_TAG=run/3/"), scanning
// /proc again until a scan finds none, at most 50 times, so a process that
// forks while it is being killed is caught on the next scan. It returns how
// many processes it signalled. A process that cleared its environment is
// not found: the cgroup (KillCgroup) is what reaches it.
func KillByEnv(entry string) int {
	if !strings.Contains(entry, "=") {
		return 0
	}
	self := os.Getpid()
	want := []byte(entry)
	killed := 0
	for range 50 {
		found := 0
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self {
				continue
			}
			env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			if err != nil || !hasEntry(env, want) {
				continue
			}
			if syscall.Kill(pid, syscall.SIGKILL) == nil && !zombie(pid) {
				found++
				killed++
			}
		}
		if found == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond) // let the kernel finish the kills before the next scan
	}
	return killed
}

// hasEntry reports whether the NUL-separated environment env has an entry
// starting with prefix.
func hasEntry(env, prefix []byte) bool {
	for len(env) > 0 {
		entry := env
		if i := bytes.IndexByte(env, 0); i >= 0 {
			entry, env = env[:i], env[i+1:]
		} else {
			env = nil
		}
		if bytes.HasPrefix(entry, prefix) {
			return true
		}
	}
	return false
}

// zombie reports whether pid has exited but not been reaped (its environ is
// still readable, empty, and it must not count as alive).
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}

// KillCgroup kills every process (but this one) in the cgroup directory dir
// and its sub-cgroups (cgroup v2's cgroup.kill, Linux 5.14+; else, and in
// cgroup v1, SIGKILL to each process listed in cgroup.procs, repeated),
// waits up to 5 s until none is left and, with remove, removes dir and its
// sub-directories. A dir that does not exist is no error.
func KillCgroup(dir string, remove bool) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var subs []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			subs = append(subs, p)
		}
		return nil
	})
	killErr := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := 0
		for _, sub := range subs {
			pids := cgroupProcs(sub)
			left += len(pids)
			if killErr != nil {
				for _, pid := range pids {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s: %d processes left after SIGKILL", dir, left)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !remove {
		return nil
	}
	var errs []error
	deadline = time.Now().Add(5 * time.Second)
	for i := len(subs) - 1; i >= 0; i-- { // children before parents
		if err := removeCgroup(subs[i], deadline); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeCgroup removes an empty cgroup directory, retrying until deadline
// while the kernel says it is busy: a killed process leaves cgroup.procs at
// once but holds its cgroup until its parent has reaped it.
func removeCgroup(dir string, deadline time.Time) error {
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cgroupProcs lists the processes in one cgroup (not its children), never
// this process (cgroup v1 lists a process one of whose threads is in the
// cgroup, and the testbed's spawner thread visits node cgroups). Zombies
// are not listed by the kernel.
func cgroupProcs(dir string) []int {
	self := os.Getpid()
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid != self {
			out = append(out, pid)
		}
	}
	return out
}
