package node

import (
	"context"
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
