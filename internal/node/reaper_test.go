package node

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReap lists a sleeping process group, closes the reaper's input as a
// dying controller would, and checks the group is killed — but not one that
// was unlisted.
func TestReap(t *testing.T) {
	start := func() *exec.Cmd {
		cmd := exec.Command("sleep", "30")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	listed, unlisted := start(), start()
	defer unlisted.Process.Kill()
	in := "+" + strconv.Itoa(listed.Process.Pid) + "\n+" + strconv.Itoa(unlisted.Process.Pid) + "\ngarbage\n+1\n-" +
		strconv.Itoa(unlisted.Process.Pid) + "\n"
	if err := Reap(context.Background(), strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- listed.Wait() }()
	select {
	case err := <-done:
		if ws, ok := listed.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("listed group ended with %v, want SIGKILL", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("listed group survived the reaper")
	}
	if err := unlisted.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("unlisted group was killed: %v", err)
	}
}

// TestReapTagsAndCgroups: a daemon that left its process group (setsid) and
// carries a node's environment tag, and a process in a listed cgroup, are
// both ended when the reaper's input closes; an untagged process is not.
func TestReapTagsAndCgroups(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	const entry = "FAULTBENCH_NODE_TAG=reaptest-" + "1/3/"
	tagged := exec.Command("sh", "-c", "setsid sleep 997.1 & wait")
	tagged.Env = append(os.Environ(), entry)
	if err := tagged.Start(); err != nil {
		t.Fatal(err)
	}
	defer tagged.Process.Kill()
	untagged := exec.Command("sleep", "997.2")
	if err := untagged.Start(); err != nil {
		t.Fatal(err)
	}
	defer untagged.Process.Kill()
	daemon := awaitCmdline(t, "997.1")

	in := "#" + entry + "\n#NOEQUALS\n@relative/dir\n"
	var cgroup string
	var inCgroup *exec.Cmd
	if dir := testCgroup(t); dir != "" {
		cgroup = dir
		inCgroup = exec.Command("sleep", "997.3")
		if err := inCgroup.Start(); err != nil {
			t.Fatal(err)
		}
		defer inCgroup.Process.Kill()
		if err := os.WriteFile(dir+"/cgroup.procs", []byte(strconv.Itoa(inCgroup.Process.Pid)), 0); err != nil {
			t.Fatal(err)
		}
		in += "@" + dir + "\n"
	}
	if err := Reap(context.Background(), strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	waitGone(t, daemon)
	if err := untagged.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("an untagged process was killed: %v", err)
	}
	if inCgroup != nil {
		_ = inCgroup.Wait()
		if ws, ok := inCgroup.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Errorf("process in the cgroup ended with %v, want SIGKILL", inCgroup.ProcessState)
		}
		if _, err := os.Stat(cgroup); !os.IsNotExist(err) {
			t.Errorf("cgroup %s not removed: %v", cgroup, err)
		}
	}
}

// testCgroup creates a cgroup v2 directory for a test, "" when this process
// may not (not root, no cgroup2 mount at the usual places).
func testCgroup(t *testing.T) string {
	if os.Geteuid() != 0 {
		return ""
	}
	for _, base := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		if _, err := os.Stat(base + "/cgroup.controllers"); err != nil {
			continue // not a cgroup2 mount
		}
		dir := fmt.Sprintf("%s/faultbench-reaptest-%d", base, os.Getpid())
		if err := os.Mkdir(dir, 0o755); err == nil {
			t.Cleanup(func() { _ = os.Remove(dir) })
			return dir
		}
	}
	return ""
}

func awaitCmdline(t *testing.T, marker string) int {
	t.Helper()
	for range 250 {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if strings.Contains(string(b), marker) {
				pid, _ := strconv.Atoi(e.Name())
				return pid
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no process %s", marker)
	return 0
}

// waitGone waits (bounded) until pid has exited; a zombie has.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for range 250 {
		if zombie(pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("process %d still alive", pid)
}
