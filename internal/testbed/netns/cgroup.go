package netns

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroup is one node's control group: every process of the node (its
// services, a balloon, a burner) is in it, so that node-freeze freezes them
// all and node-crash kills them all. Two layouts exist: cgroup v1 (one
// directory per controller) and the unified v2 hierarchy.
type cgroup struct {
	v2   bool
	dirs []string // v1: one per controller, freezer first; v2: one
}

// cgroupRoot is where the hierarchy is mounted; tests point it elsewhere.
var cgroupRoot = "/sys/fs/cgroup"

// v1Controllers are the v1 controllers a node's cgroup joins; freezer is
// required, the others are joined when mounted. Not cpu: a v1 cpu cgroup
// weighs all of a node's threads as one task against every other task of
// the host, which starves the nodes on a busy machine (a 2-node static
// cluster's knee fell from 1600/s to 400/s with it).
var v1Controllers = []string{"freezer", "memory", "pids"}

// isV2 reports whether root holds the unified (v2) hierarchy.
func isV2(root string) bool {
	_, err := os.Stat(filepath.Join(root, "cgroup.controllers"))
	return err == nil
}

// cgroupPaths are the directories of the cgroup named rel (faultbench/RUN/node-I)
// under root, without creating them.
func cgroupPaths(root, rel string) (cgroup, error) {
	if isV2(root) {
		return cgroup{v2: true, dirs: []string{filepath.Join(root, rel)}}, nil
	}
	var cg cgroup
	for _, c := range v1Controllers {
		base := filepath.Join(root, c)
		if _, err := os.Stat(filepath.Join(base, "cgroup.procs")); err != nil {
			if c == "freezer" {
				return cgroup{}, fmt.Errorf("cgroup v1 freezer is not mounted at %s: mount it (mount -t cgroup -o freezer cgroup %s)", base, base)
			}
			continue
		}
		cg.dirs = append(cg.dirs, filepath.Join(base, rel))
	}
	return cg, nil
}

// create makes the cgroup's directories.
func (cg cgroup) create() error {
	for _, d := range cg.dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create cgroup %s: %w", d, err)
		}
	}
	return nil
}

// procsFiles are the cgroup.procs files a new process writes its pid to.
func (cg cgroup) procsFiles() []string {
	out := make([]string, len(cg.dirs))
	for i, d := range cg.dirs {
		out[i] = filepath.Join(d, "cgroup.procs")
	}
	return out
}

// pids lists the processes in the cgroup (the first directory: every
// process joins all of them).
func (cg cgroup) pids() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(cg.dirs[0], "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var out []int
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if p, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// addPid moves pid into the cgroup.
func (cg cgroup) addPid(pid int) error {
	for _, f := range cg.procsFiles() {
		if err := os.WriteFile(f, []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("move pid %d into %s: %w", pid, f, err)
		}
	}
	return nil
}

// freezeFile is the file that freezes the cgroup and the values that
// freeze and thaw it.
func (cg cgroup) freezeFile() (file, frozen, thawed string) {
	if cg.v2 {
		return filepath.Join(cg.dirs[0], "cgroup.freeze"), "1", "0"
	}
	return filepath.Join(cg.dirs[0], "freezer.state"), "FROZEN", "THAWED"
}

// setFrozen freezes or thaws every process of the cgroup and waits
// (bounded) until the kernel reports the state reached.
func (cg cgroup) setFrozen(on bool) error {
	file, frozen, thawed := cg.freezeFile()
	want := thawed
	if on {
		want = frozen
	}
	if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
		return fmt.Errorf("write %s to %s: %w", want, file, err)
	}
	return waitFor(2*time.Second, func() (bool, error) {
		got, err := cg.frozen()
		return got == on, err
	})
}

// frozen reports whether the kernel has the cgroup frozen.
func (cg cgroup) frozen() (bool, error) {
	if cg.v2 {
		b, err := os.ReadFile(filepath.Join(cg.dirs[0], "cgroup.events"))
		if err != nil {
			return false, err
		}
		return bytes.Contains(b, []byte("frozen 1")), nil
	}
	b, err := os.ReadFile(filepath.Join(cg.dirs[0], "freezer.state"))
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(string(b)) == "FROZEN", nil
}

// kill ends every process of the cgroup with SIGKILL (thawing it first, as
// a frozen process cannot die) and waits, bounded, until it is empty.
func (cg cgroup) kill() error {
	if f, _ := cg.frozen(); f {
		if err := cg.setFrozen(false); err != nil {
			return err
		}
	}
	if cg.v2 {
		if err := os.WriteFile(filepath.Join(cg.dirs[0], "cgroup.kill"), []byte("1"), 0o644); err == nil {
			return waitFor(5*time.Second, func() (bool, error) { p, err := cg.pids(); return len(p) == 0, err })
		}
	}
	return waitFor(5*time.Second, func() (bool, error) {
		pids, err := cg.pids()
		if err != nil {
			return false, err
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		return len(pids) == 0, nil
	})
}

// remove kills what is left and removes the cgroup's directories. A
// missing directory is not an error.
func (cg cgroup) remove() error {
	if _, err := os.Stat(cg.dirs[0]); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var errs []error
	if err := cg.kill(); err != nil {
		errs = append(errs, err)
	}
	for _, d := range cg.dirs {
		if err := waitFor(2*time.Second, func() (bool, error) {
			err := syscall.Rmdir(d)
			return err == nil || errors.Is(err, syscall.ENOENT), nil
		}); err != nil {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// memoryUsage is the cgroup's resident memory in bytes, from the memory
// controller (v1 memory.usage_in_bytes, v2 memory.current); -1 when the
// controller is absent.
func (cg cgroup) memoryUsage() int64 {
	for _, d := range cg.dirs {
		for _, f := range []string{"memory.current", "memory.usage_in_bytes"} {
			if b, err := os.ReadFile(filepath.Join(d, f)); err == nil {
				if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
					return n
				}
			}
		}
	}
	return -1
}

// waitFor polls cond every 10 ms until it holds, fails, or limit passes.
func waitFor(limit time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(limit)
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		last = err
		if time.Now().After(deadline) {
			if last != nil {
				return fmt.Errorf("not done after %v: %w", limit, last)
			}
			return fmt.Errorf("not done after %v", limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
