package warden

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestGuardEndsWhenThePipeCloses(t *testing.T) {
	r, w := io.Pipe()
	got := make(chan string, 1)
	go func() { got <- Guard(context.Background(), r, time.Hour) }()
	_, _ = w.Write([]byte("renew\n"))
	_ = w.Close()
	select {
	case why := <-got:
		if why != "controller gone" {
			t.Fatalf("Guard = %q, want controller gone", why)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Guard did not return within 10s of the pipe closing")
	}
}

func TestGuardEndsWhenTheLeaseLapses(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	got := make(chan string, 1)
	go func() { got <- Guard(context.Background(), r, 20*time.Millisecond) }()
	select {
	case why := <-got:
		if !strings.Contains(why, "lapsed") {
			t.Fatalf("Guard = %q, want the lease lapsed", why)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Guard did not notice the lapsed lease within 10s")
	}
}

func TestGuardKeepsARenewedLease(t *testing.T) {
	r, w := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan string, 1)
	go func() { got <- Guard(ctx, r, time.Hour) }()
	for range 5 {
		if _, err := w.Write([]byte("renew\n")); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	if why := <-got; why != "stopped" {
		t.Fatalf("Guard = %q, want stopped", why)
	}
	_ = w.Close()
}

func TestJournalRoundTripSkipsATornLine(t *testing.T) {
	old := Dir
	Dir = t.TempDir()
	t.Cleanup(func() { Dir = old })
	j, err := Open("0123456789ab")
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Add(KindNetns, "fb-0123456789ab-n1"); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(Path("0123456789ab"), os.O_WRONLY|os.O_APPEND, 0)
	_, _ = f.WriteString(`{"kind":"link","na`) // the controller died mid-write
	f.Close()
	recs, err := Read(Path("0123456789ab"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Kind != KindController || recs[1].Kind != KindNetns || recs[1].Name != "fb-0123456789ab-n1" {
		t.Fatalf("records = %+v", recs)
	}
	if !ControllerAlive(recs) {
		t.Error("this process recorded itself but is not seen alive")
	}
	if err := j.Finish(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(Path("0123456789ab")); !os.IsNotExist(err) {
		t.Errorf("journal still there after Finish: %v", err)
	}
}

func TestOpenRefusesAPathAsRunID(t *testing.T) {
	old := Dir
	Dir = t.TempDir()
	t.Cleanup(func() { Dir = old })
	for _, id := range []string{"", "../etc", "a/b", "x.y"} {
		if _, err := Open(id); err == nil {
			t.Errorf("Open(%q) accepted", id)
		}
	}
}

func TestRemoveLeavesForeignCgroupsAlone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "victim")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{dir, "/sys/fs/cgroup/freezer/user.slice", "/sys/fs/cgroup/freezer/faultbench/../x"} {
		_, err := Remove([]Record{{Kind: KindCgroup, Name: name}})
		if err == nil || !strings.Contains(err.Error(), "outside faultbench's") {
			t.Errorf("Remove(%s) = %v, want it refused", name, err)
		}
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("foreign directory touched: %v", err)
	}
}

func TestCleanupSkipsLiveRuns(t *testing.T) {
	old := Dir
	Dir = t.TempDir()
	t.Cleanup(func() { Dir = old })
	j, err := Open("aaaaaaaaaaaa") // recorded by this (live) process
	if err != nil {
		t.Fatal(err)
	}
	defer j.Finish()
	// A dead run: pid 0 is never a live controller.
	if err := os.WriteFile(Path("bbbbbbbbbbbb"), []byte(`{"kind":"controller","name":"0"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	removed, err := Cleanup()
	if err != nil || len(removed) != 1 || removed[0] != "run bbbbbbbbbbbb: journal "+Path("bbbbbbbbbbbb") {
		t.Fatalf("Cleanup = %v, %v; want the dead run's journal only", removed, err)
	}
	if _, err := CleanupRun("aaaaaaaaaaaa"); !errors.Is(err, ErrRunAlive) {
		t.Errorf("CleanupRun of a live run = %v, want ErrRunAlive", err)
	}
	if _, err := CleanupRun("../../etc"); err == nil {
		t.Error("CleanupRun accepted a path as run id")
	}
	if _, err := os.Stat(Path("aaaaaaaaaaaa")); err != nil {
		t.Error("a live run's journal was removed")
	}
	if _, err := os.Stat(Path("bbbbbbbbbbbb")); !os.IsNotExist(err) {
		t.Error("a dead run's emptied journal was kept")
	}
}
