package kernelfault

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/node"
)

// Helper is a process that the process applying the fault starts inside
// the target's cgroup and namespace and holds until the revert: a CPU
// burner (cpu-hog) or a balloon that holds resident memory
// (mem-pressure). It is the faultbench binary's node kind of that name,
// started from the applying process's own executable; never a command
// from the request.
type Helper struct {
	Kind  string `json:"kind"`            // HelperBurner or HelperBalloon
	CPUs  int    `json:"cpus,omitempty"`  // burner: busy threads, 1..64
	Bytes int64  `json:"bytes,omitempty"` // balloon: resident bytes, up to 64G
}

// helperProof bounds the wait for a helper's effect (the burner's CPU
// time, the balloon's resident set). It stays below the controller's wait
// for the warden's answer to an inject.
const helperProof = 20 * time.Second

func (h *Helper) check(id string, t Target) error {
	switch {
	case h.Kind == HelperBurner && (h.CPUs < 1 || h.CPUs > 64 || h.Bytes != 0):
		return fmt.Errorf("fault %s: burner of %d cpus (bytes %d): want 1..64 cpus and no bytes", id, h.CPUs, h.Bytes)
	case h.Kind == HelperBalloon && (h.Bytes < 1 || h.Bytes > maxBalloon || h.CPUs != 0):
		return fmt.Errorf("fault %s: balloon of %d bytes (cpus %d): want 1 byte to 64G and no cpus", id, h.Bytes, h.CPUs)
	case h.Kind != HelperBurner && h.Kind != HelperBalloon:
		return fmt.Errorf("fault %s: helper kind %q: want %s or %s", id, h.Kind, HelperBurner, HelperBalloon)
	}
	if err := t.checkNet(); err != nil {
		return fmt.Errorf("fault %s: %w", id, err)
	}
	return checkCgroup(t.Cgroup)
}

// helping is a helper process this process started.
type helping struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once it exited and was reaped
}

// joinScript moves the shell into the cgroup (every cgroup.procs file in
// $FB_CGROUP_PROCS, colon-separated) before it execs the command, so that
// the helper never runs outside the node's cgroup. The command comes as
// arguments, never through the script.
const joinScript = `IFS=:; for f in $FB_CGROUP_PROCS; do echo $$ > "$f" || exit 125; done; unset FB_CGROUP_PROCS; exec "$@"`

// argv is the helper's command line. The fault's id is on it, so that a
// process that did not start the helper can still find it by its id.
func (h *Helper) argv(exe, id string) []string {
	opts := map[string]string{"fault": id}
	if h.Kind == HelperBurner {
		opts["cpus"] = strconv.Itoa(h.CPUs)
	} else {
		opts["bytes"] = strconv.FormatInt(h.Bytes, 10)
	}
	return append([]string{exe, "node", h.Kind}, node.Config{Listen: "-", Options: opts}.Args()...)
}

// applyProc starts the helper in the target's cgroup and namespace and
// waits, bounded, until it is in effect and in the cgroup.
func applyProc(id string, t Target, h *Helper) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	procs := make([]string, len(t.Cgroup))
	for i, d := range t.Cgroup {
		procs[i] = filepath.Join(d, "cgroup.procs")
	}
	args := append([]string{"-c", joinScript, "faultbench-helper", "nsenter", "--net=" + t.path(), "--"}, h.argv(exe, id)...)
	cmd := exec.Command("/bin/sh", args...)
	cmd.Env = append(os.Environ(), "FB_CGROUP_PROCS="+strings.Join(procs, ":"))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr // the warden's log
	// Its own process group, so a Ctrl-C meant for the applying process
	// does not reach it; no parent-death signal: if the applying process
	// dies the cgroup's removal ends the helper.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start %s: %w", h.Kind, err)
	}
	run := &helping{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(run.done) }()
	pid := cmd.Process.Pid
	undo := func() error { _, err := run.stop(h.Kind, t); return err }
	var detail string
	ok := false
	for deadline := time.Now().Add(helperProof); !ok; {
		select {
		case <-run.done:
			return "", fmt.Errorf("%s pid %d exited before it took effect (%s): see the log of the process that started it", h.Kind, pid, cmd.ProcessState)
		default:
		}
		if detail, ok = h.proof(pid); ok {
			break
		}
		if time.Now().After(deadline) {
			return "", withUndo(fmt.Errorf("%s not in effect after %v: %s", h.Kind, helperProof, detail), undo)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !slices.Contains(cgroupPids(t.Cgroup[0]), pid) {
		return "", withUndo(fmt.Errorf("%s pid %d is not in cgroup %s", h.Kind, pid, t.Cgroup[0]), undo)
	}
	hold(id, run)
	return fmt.Sprintf("%s pid %d in cgroup %s: %s", h.Kind, pid, t.Cgroup[0], detail), nil
}

// proof says whether the helper pid is in effect, and what shows it.
func (h *Helper) proof(pid int) (string, bool) {
	if h.Kind == HelperBurner {
		ticks := cpuTicks(pid)
		return fmt.Sprintf("used %d CPU ticks", ticks), ticks >= 5
	}
	rss := rssBytes(pid)
	return fmt.Sprintf("resident %d MiB of %d MiB", rss>>20, h.Bytes>>20), rss >= h.Bytes*9/10
}

// stop kills the helper and waits, bounded, until it was reaped.
func (r *helping) stop(kind string, t Target) (string, error) {
	pid := r.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGKILL)
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		return "", fmt.Errorf("%s pid %d did not exit within 5s of SIGKILL (a frozen node?)", kind, pid)
	}
	return fmt.Sprintf("%s pid %d ended; cgroup memory now %d MiB", kind, pid, cgroupMemory(t.Cgroup)>>20), nil
}

// revertProc ends the helper. One this process did not start (cleanup of
// a dead run) it finds in the target's cgroup by the fault id on its
// command line.
func revertProc(id string, t Target, h *Helper) (string, error) {
	if run, ok := release(id).(*helping); ok {
		ev, err := run.stop(h.Kind, t)
		if err != nil {
			hold(id, run) // a retry waits again
		}
		return ev, err
	}
	if _, err := os.Stat(t.Cgroup[0]); err != nil {
		return "cgroup " + t.Cgroup[0] + " gone, its " + h.Kind + " with it", nil
	}
	var killed []int
	for _, pid := range cgroupPids(t.Cgroup[0]) {
		if helperOf(pid, h.Kind, id) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			killed = append(killed, pid)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range killed {
		for slices.Contains(cgroupPids(t.Cgroup[0]), pid) {
			if time.Now().After(deadline) {
				return "", fmt.Errorf("%s pid %d of fault %s still in cgroup %s 5s after SIGKILL (a frozen node?)", h.Kind, pid, id, t.Cgroup[0])
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if len(killed) == 0 {
		return fmt.Sprintf("no %s of fault %s left in cgroup %s", h.Kind, id, t.Cgroup[0]), nil
	}
	return fmt.Sprintf("%s pid %v of fault %s killed (the process that started it had ended)", h.Kind, killed, id), nil
}

// helperOf reports whether pid runs the helper kind of fault id.
func helperOf(pid int, kind, id string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")
	i := slices.Index(args, "node")
	return i >= 0 && i+1 < len(args) && args[i+1] == kind && slices.Contains(args, "fault="+id)
}

// cgroupPids lists the processes of the cgroup directory dir.
func cgroupPids(dir string) []int {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// cgroupMemory is the cgroup's memory use in bytes (v2 memory.current,
// v1 memory.usage_in_bytes), -1 without a memory controller.
func cgroupMemory(dirs []string) int64 {
	for _, d := range dirs {
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

// cpuTicks is a process's user+system CPU time in clock ticks.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// rssBytes is process pid's resident anonymous memory (RssAnon): what a
// balloon holds and its cgroup is charged for. VmRSS would also count the
// pages of the executable, which the page cache shares and charges
// elsewhere, and so overstate the pressure by tens of MiB.
func rssBytes(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
