package local

import (
	"bufio"
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

// setsidHolderEnv makes the test binary a controller holding a cluster of
// daemon-forking nodes until it is killed (see runSetsidHolder). It is
// checked in init, before TestMain, so this file needs nothing of main_test.go.
const setsidHolderEnv = "FAULTBENCH_TESTBED_SETSID_HOLDER"

func init() {
	if dir := os.Getenv(setsidHolderEnv); dir != "" && (len(os.Args) < 2 || os.Args[1] != "node") {
		os.Exit(runSetsidHolder(dir))
	}
}

// daemonSpec is a 2-node cluster of the user's own command, each node
// starting a daemon that leaves the node's process group and session
// (setsid) before exec'ing the server, as many real services do. Node i's
// daemon is `sleep <marker>i`.
func daemonSpec(dir, marker string) Spec {
	spec := testSpec(dir)
	spec.System = CommandSystem
	spec.Ready = "/health"
	spec.Command = []string{"sh", "-c", "setsid sleep " + marker + "{node} & exec " + os.Args[0] + " node static --listen {addr}:{port} --node {node}"}
	return spec
}

// awaitDaemon waits (bounded) until the daemon with marker runs, and returns its pid.
func awaitDaemon(t *testing.T, marker string) int {
	t.Helper()
	for range 250 {
		if pids := findCmdline(marker); len(pids) == 1 {
			return pids[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("daemon %s never started (found %v)", marker, findCmdline(marker))
	return 0
}

// sessionOf is pid's session id from /proc/PID/stat.
func sessionOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	must(t, err)
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // state ppid pgrp session ...
	sid, err := strconv.Atoi(f[3])
	must(t, err)
	return sid
}

// TestSetsidDaemonEndsWithItsNode: a daemon in a session of its own dies
// with its node's application (a kill by a fault) and with the cluster; a
// restarted node's daemon too. As root it runs twice: with cgroup v2 (or
// whatever this host has) and with cgroup v1's pids hierarchy where mounted.
func TestSetsidDaemonEndsWithItsNode(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid on this machine")
	}
	t.Run("default", func(t *testing.T) { testSetsidDaemon(t, "1000.5") })
	t.Run("cgroup-v1", func(t *testing.T) {
		if os.Geteuid() != 0 || cgroupMount("cgroup", "pids") == "" {
			t.Skip("needs root and a cgroup v1 pids hierarchy")
		}
		preferV1 = true
		defer func() { preferV1 = false }()
		testSetsidDaemon(t, "1000.6")
	})
}

func testSetsidDaemon(t *testing.T, marker string) {
	c, err := Start(context.Background(), daemonSpec(t.TempDir(), marker), nil)
	must(t, err)
	defer c.Stop()
	d1, d2 := awaitDaemon(t, marker+"1"), awaitDaemon(t, marker+"2")
	if sessionOf(t, d1) == sessionOf(t, c.Pids()[0]) {
		t.Fatal("the daemon did not leave its node's session: the test proves nothing")
	}
	if os.Geteuid() == 0 && c.Cgroup() == "" && (cgroupMount("cgroup2", "") != "" || cgroupMount("cgroup", "pids") != "") {
		t.Error("root with a cgroup mount, but the cluster runs without a cgroup")
	}

	must(t, c.KillApp(1))
	assertGone(t, []int{d1})
	if !alive(d2) {
		t.Fatal("killing node 1 also ended node 2's daemon")
	}
	must(t, c.StartApp(1)) // a restart gets a cgroup of its own
	d1 = awaitDaemon(t, marker+"1")
	must(t, c.Stop())
	assertGone(t, []int{d1, d2})
	if dir := c.Cgroup(); dir != "" {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("cgroup %s left behind: %v", dir, err)
		}
	}
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil && strings.Contains(string(b), "faultbench-") {
		t.Errorf("the controller is left in a node's cgroup: %s", b)
	}
}

// runSetsidHolder starts a daemonSpec cluster, prints its cgroup and its
// daemons' marker, and waits (bounded) to be killed.
func runSetsidHolder(dir string) int {
	c, err := Start(context.Background(), daemonSpec(dir, "1000.8"), nil)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Printf("cgroup %q\n", c.Cgroup())
	time.Sleep(30 * time.Second) // bounded: the test kills us long before
	_ = c.Stop()
	return 0
}

// TestNoSetsidDaemonAfterControllerSIGKILL kills a controller holding a
// cluster of daemon-forking nodes with SIGKILL: the reaper must end the
// daemons too (they are in neither the nodes' process groups nor the
// controller's children) and remove the cgroup.
func TestNoSetsidDaemonAfterControllerSIGKILL(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid on this machine")
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), setsidHolderEnv+"="+t.TempDir())
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "cgroup ") {
		t.Fatalf("holder said %q, %v", line, err)
	}
	cgroup, err := strconv.Unquote(strings.TrimSpace(strings.TrimPrefix(line, "cgroup ")))
	must(t, err)
	daemons := []int{awaitDaemon(t, "1000.81"), awaitDaemon(t, "1000.82")}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	assertGone(t, daemons)
	if cgroup != "" {
		for range 250 {
			if _, err := os.Stat(cgroup); os.IsNotExist(err) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("cgroup %s left behind by the reaper", cgroup)
	}
}

// stoppedOrFrozen reports whether pid is stopped (/proc/PID/stat state T)
// or in a cgroup v2 cgroup the kernel reports frozen.
func stoppedOrFrozen(t *testing.T, pid int) bool {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	must(t, err)
	s := string(b)
	if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 0 && f[0] == "T" {
		return true
	}
	mount := cgroupMount("cgroup2", "")
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if mount == "" || err != nil {
		return false
	}
	for _, line := range strings.Split(string(cg), "\n") {
		if rel, ok := strings.CutPrefix(line, "0::"); ok {
			ev, err := os.ReadFile(mount + rel + "/cgroup.events")
			return err == nil && strings.Contains(string(ev), "frozen 1")
		}
	}
	return false
}

// TestPauseReachesSetsidDaemon: app-hang and node-freeze (Pause) stop a
// node's daemon that left its session, not only its process group, and
// Resume continues it; the other node's daemon is left alone. As root it
// runs with the cgroup v2 freezer (or whatever this host has) and with
// cgroup v1's pids hierarchy, where the tag is signalled.
func TestPauseReachesSetsidDaemon(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid on this machine")
	}
	t.Run("default", func(t *testing.T) { testPauseDaemon(t, "1000.91") })
	t.Run("cgroup-v1", func(t *testing.T) {
		if os.Geteuid() != 0 || cgroupMount("cgroup", "pids") == "" {
			t.Skip("needs root and a cgroup v1 pids hierarchy")
		}
		preferV1 = true
		defer func() { preferV1 = false }()
		testPauseDaemon(t, "1000.92")
	})
}

func testPauseDaemon(t *testing.T, marker string) {
	c, err := Start(context.Background(), daemonSpec(t.TempDir(), marker), nil)
	must(t, err)
	defer c.Stop()
	d1, d2 := awaitDaemon(t, marker+"1"), awaitDaemon(t, marker+"2")
	if sessionOf(t, d1) == sessionOf(t, c.Pids()[0]) {
		t.Fatal("the daemon did not leave its node's session: the test proves nothing")
	}
	must(t, c.Pause(1))
	if !stoppedOrFrozen(t, d1) {
		t.Errorf("node 1 paused (cgroup %q), but its setsid daemon %d runs on", c.Cgroup(), d1)
	}
	if stoppedOrFrozen(t, d2) {
		t.Error("pausing node 1 stopped node 2's daemon")
	}
	must(t, c.Resume(1))
	for range 100 { // SIGCONT and a thaw take effect asynchronously; bounded
		if !stoppedOrFrozen(t, d1) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if stoppedOrFrozen(t, d1) {
		t.Errorf("node 1 resumed, but its daemon %d is still stopped", d1)
	}
	// A paused node stops gracefully and whole, daemon included.
	must(t, c.Pause(1))
	must(t, c.Stop())
	assertGone(t, []int{d1, d2})
}
