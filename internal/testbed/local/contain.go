package local

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/node"
)

// TagEnv is the environment variable that marks every process a node
// starts, daemons included: TagEnv=<cluster>/<node>/. Children inherit it,
// so the processes of a node are found (and killed) even after they left
// its process group with setsid.
const TagEnv = "FAULTBENCH_NODE_TAG"

// containment keeps every process a node starts inside the node: each node
// runs in cgroups of its own (when this process may create them: root and a
// cgroup2 mount, or else cgroup v1's pids hierarchy), and every process
// carries the node's environment tag. Ending a node ends both; the reaper is
// told both, so they also end when the controller dies.
type containment struct {
	id     string // unique per cluster: pid and start time
	cgroup string // the cluster's cgroup directory; "" without cgroups
	v1     string // cgroup v1 only: this process's own cgroup, where the spawner thread returns
	starts atomic.Uint64
}

// newContainment sets up the cluster's containment and tells the reaper.
// A cgroup that cannot be created is no error: the environment tag remains.
func newContainment(r *reaper) *containment {
	c := &containment{id: fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())}
	if base, v1 := ownCgroup(); base != "" {
		dir := filepath.Join(base, "faultbench-"+c.id)
		if err := os.Mkdir(dir, 0o755); err == nil {
			c.cgroup = dir
			if v1 {
				c.v1 = base
			} else if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
				// Before Linux 5.14: no cgroup.kill, and maybe no
				// CLONE_INTO_CGROUP (5.7), which would fail every start.
				_ = os.Remove(dir)
				c.cgroup = ""
			}
		}
	}
	r.sendLine("#" + c.entry(0))
	if c.cgroup != "" {
		r.sendLine("@" + c.cgroup)
	}
	return c
}

// entry is the environment entry of node's processes; node 0 gives the
// prefix shared by every node of the cluster.
func (c *containment) entry(id int) string {
	if id == 0 {
		return TagEnv + "=" + c.id + "/"
	}
	return fmt.Sprintf("%s=%s/%d/", TagEnv, c.id, id)
}

// Cgroup is the cgroup directory of the cluster's nodes, "" when the
// cluster runs without one (not root, no usable cgroup mount), for tests
// and diagnostics.
func (c *Processes) Cgroup() string { return c.contain.cgroup }

// launcher tags cmd with node id's environment entry and returns what must
// run on the spawner's thread around cmd's start to place it in a fresh
// cgroup of the node (nil without cgroups).
func (c *containment) launcher(id int, cmd *exec.Cmd) func(start func() error) error {
	cmd.Env = append(cmd.Env, c.entry(id))
	if c.cgroup == "" {
		return nil
	}
	// A fresh cgroup for every start: some kernels (seen on 6.18) kill a
	// child cloned into a cgroup that was once the target of cgroup.kill,
	// so a restarted node must not reuse the cgroup its previous process
	// was killed in.
	dir := filepath.Join(c.cgroup, fmt.Sprintf("node-%d", id), strconv.FormatUint(c.starts.Add(1), 10))
	return func(start func() error) error {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("cgroup for node %d: %w", id, err)
		}
		if c.v1 != "" {
			return c.startInV1(dir, start)
		}
		fd, err := syscall.Open(dir, syscall.O_DIRECTORY|syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("cgroup for node %d: %w", id, err)
		}
		defer syscall.Close(fd)
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		// The child is born inside the cgroup (clone3 CLONE_INTO_CGROUP), so
		// nothing it forks, however early, is outside it.
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
		return start()
	}
}

// startInV1 starts a child inside the cgroup v1 directory dir: cgroup v1
// moves single threads, so the spawner's thread (locked to its goroutine)
// enters dir, forks (the child inherits the cgroup before it runs a single
// instruction of its own) and returns to this process's cgroup.
func (c *containment) startInV1(dir string, start func() error) error {
	tid := []byte(strconv.Itoa(syscall.Gettid()))
	if err := os.WriteFile(filepath.Join(dir, "tasks"), tid, 0); err != nil {
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	err := start()
	if back := os.WriteFile(filepath.Join(c.v1, "tasks"), tid, 0); back != nil {
		// The thread would drag the controller into the node's cgroup;
		// node.KillCgroup never kills its own process, but say so.
		err = errors.Join(err, fmt.Errorf("cgroup %s: the spawner thread could not leave: %w", dir, back))
	}
	return err
}

// killNode ends every process node started that is still alive: what is in
// its cgroups, and what carries its tag.
func (c *containment) killNode(id int) {
	if c.cgroup != "" {
		_ = node.KillCgroup(filepath.Join(c.cgroup, fmt.Sprintf("node-%d", id)), true)
	}
	node.KillByEnv(c.entry(id))
}

// freezeNode stops (frozen true) or continues every process of node id
// that a signal to its process group misses: a daemon that left the group
// with setsid. With a cgroup v2 cgroup it writes the node's cgroup.freeze
// (every process in it, whatever its session or environment) and waits,
// bounded, until the kernel reports it frozen; else (cgroup v1 pids
// hierarchy, or none) it sends SIGSTOP or SIGCONT to every process
// carrying the node's tag. Its error is only the cgroup's: the tag path
// reaches what it can.
func (c *containment) freezeNode(id int, frozen bool) error {
	if c.cgroup != "" && c.v1 == "" {
		dir := filepath.Join(c.cgroup, fmt.Sprintf("node-%d", id))
		val := []byte("0")
		if frozen {
			val = []byte("1")
		}
		err := os.WriteFile(filepath.Join(dir, "cgroup.freeze"), val, 0)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			if err == nil && frozen {
				awaitFrozen(dir)
			}
			return nil
		}
		// A cgroup without a freezer: fall back on the tag.
		signalTagged(c.entry(id), frozen)
		return fmt.Errorf("cgroup %s: freeze: %w", dir, err)
	}
	signalTagged(c.entry(id), frozen)
	return nil
}

// awaitFrozen waits (at most a second) until cgroup dir's cgroup.events
// says "frozen 1", so that a caller sees the fault in effect.
func awaitFrozen(dir string) {
	for range 100 {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
		if err != nil || strings.Contains(string(b), "frozen 1") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// signalTagged sends SIGSTOP (stop true) or SIGCONT to every process whose
// environment holds entry.
func signalTagged(entry string, stop bool) {
	sig := syscall.SIGCONT
	if stop {
		sig = syscall.SIGSTOP
	}
	self := os.Getpid()
	want := []byte(entry)
	var stopped []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !envHas(env, want) {
			continue
		}
		if syscall.Kill(pid, sig) == nil && stop {
			stopped = append(stopped, pid)
		}
	}
	for _, pid := range stopped {
		waitStopped(pid) // bounded: the fault is in effect when Pause returns
	}
}

// envHas reports whether the NUL-separated environment env has an entry
// starting with prefix.
func envHas(env, prefix []byte) bool {
	for _, entry := range bytes.Split(env, []byte{0}) {
		if bytes.HasPrefix(entry, prefix) {
			return true
		}
	}
	return false
}

// close ends every process of every node and removes the cgroups.
func (c *containment) close() error {
	var err error
	if c.cgroup != "" {
		err = node.KillCgroup(c.cgroup, true)
	}
	node.KillByEnv(c.entry(0))
	return err
}

// preferV1 makes ownCgroup skip cgroup v2 (tests of the v1 path on a host
// that has both).
var preferV1 bool

// ownCgroup is the cgroup directory this process is in, under which it may
// create the nodes' cgroups: cgroup v2 when mounted, else cgroup v1's pids
// hierarchy (v1 true); "" when not root or neither is mounted.
func ownCgroup() (dir string, v1 bool) {
	if os.Geteuid() != 0 {
		return "", false
	}
	if !preferV1 {
		if mount := cgroupMount("cgroup2", ""); mount != "" {
			if rel, ok := ownCgroupPath("0::"); ok {
				return filepath.Join(mount, rel), false
			}
		}
	}
	if mount := cgroupMount("cgroup", "pids"); mount != "" {
		if rel, ok := ownCgroupPath(":pids:"); ok {
			return filepath.Join(mount, rel), true
		}
	}
	return "", false
}

// ownCgroupPath is this process's path in the hierarchy whose
// /proc/self/cgroup line holds marker ("0::" for v2, ":pids:" for v1).
func ownCgroupPath(marker string) (string, bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if i := strings.Index(line, marker); i >= 0 && (marker != "0::" || i == 0) {
			return filepath.Clean("/" + line[i+len(marker):]), true
		}
	}
	return "", false
}

// cgroupMount is where a cgroup filesystem of type fstype is mounted
// ("cgroup2": /sys/fs/cgroup on a unified host, /sys/fs/cgroup/unified on a
// hybrid one; "cgroup" with option controller for a v1 hierarchy), "" if
// nowhere.
func cgroupMount(fstype, controller string) string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
		fields := strings.Fields(sc.Text())
		for i, f := range fields {
			if f != "-" || i+3 >= len(fields) || len(fields) < 5 || fields[i+1] != fstype {
				continue
			}
			if controller == "" || slices.Contains(strings.Split(fields[i+3], ","), controller) {
				return fields[4]
			}
		}
	}
	return ""
}

// sendLine tells the reaper one line of its protocol (see node.Reap).
func (r *reaper) sendLine(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pipe != nil {
		_, _ = fmt.Fprintln(r.pipe, line)
	}
}
