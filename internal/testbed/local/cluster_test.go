package local

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/pageset"
	"github.com/faultbench/faultbench/internal/record"
)

// events collects emitted events for assertions.
type events struct {
	mu  sync.Mutex
	all []record.Event
}

func (e *events) emit(ev record.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

// waitFor polls until a kind event for node appears after index from.
func (e *events) waitFor(t *testing.T, from int, kind string, node int) int {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		e.mu.Lock()
		for i := from; i < len(e.all); i++ {
			if e.all[i].Kind == kind && e.all[i].Node == node {
				e.mu.Unlock()
				return i + 1
			}
		}
		e.mu.Unlock()
	}
	t.Fatalf("no %s event for node %d", kind, node)
	return 0
}

func (e *events) len() int { e.mu.Lock(); defer e.mu.Unlock(); return len(e.all) }

// fetch GETs page 3 from addr: nil if it is served correctly.
func fetch(addr string) error {
	client := http.Client{Timeout: 400 * time.Millisecond}
	resp, err := client.Get("http://" + addr + pageset.Path(3))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if !pageset.Verify(pageset.Path(3), b) {
		return errors.New("data error")
	}
	return nil
}

func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

func TestLocalFaults(t *testing.T) {
	var ev events
	c, err := Start(context.Background(), testSpec(t.TempDir()), ev.emit)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	nodes := c.Nodes()
	for _, n := range nodes {
		if !strings.HasPrefix(n.Addr, fmt.Sprintf("127.0.0.%d:", 10+n.ID)) {
			t.Fatalf("node %d at %s", n.ID, n.Addr)
		}
		if err := fetch(n.Addr); err != nil {
			t.Fatalf("node %d: %v", n.ID, err)
		}
	}
	a, b := nodes[0].Addr, nodes[1].Addr

	// app-crash: refused until started again; the other node is untouched.
	mark := ev.len()
	must(t, c.KillApp(1))
	if err := fetch(a); !isRefused(err) {
		t.Fatalf("killed node 1: %v, want connection refused", err)
	}
	must(t, fetch(b))
	must(t, c.StartApp(1))
	mark = ev.waitFor(t, mark, "node.up", 1)
	must(t, fetch(a))

	// app-hang / node-freeze: connects, then no answer; continued, it serves.
	must(t, c.Pause(2))
	if err := fetch(b); err == nil || isRefused(err) {
		t.Fatalf("stopped node 2: %v, want a timeout", err)
	}
	must(t, c.Resume(2))
	must(t, fetch(b))

	// node-crash: the host does not answer at all until it boots.
	must(t, c.HostDown(1, false))
	for range 2 { // the first connect may still land in the zero backlog
		if err := fetch(a); err == nil || isRefused(err) {
			t.Fatalf("downed host 1: %v, want a timeout", err)
		}
	}
	must(t, c.StartApp(1))
	ev.waitFor(t, mark, "node.up", 1)
	must(t, fetch(a))

	// A reboot: down at once, back by itself after the boot time.
	mark = ev.len()
	must(t, c.Reboot(2, 200*time.Millisecond))
	if err := fetch(b); err == nil || isRefused(err) {
		t.Fatalf("rebooting node 2: %v, want a timeout", err)
	}
	ev.waitFor(t, mark, "node.up", 2)
	must(t, fetch(b))

	// A stopped node is still ended by Stop, and Stop is safe twice.
	must(t, c.Pause(2))
	pgids := c.Pids()
	must(t, c.Stop())
	must(t, c.Stop())
	assertGone(t, pgids)
	if err := c.KillApp(1); !errors.Is(err, ErrStopped) {
		t.Fatalf("after Stop: %v", err)
	}
}

func TestStartErrors(t *testing.T) {
	// A port someone else holds.
	ln, err := net.Listen("tcp", "127.0.0.11:0")
	must(t, err)
	defer ln.Close()
	spec := testSpec(t.TempDir())
	spec.Port = ln.Addr().(*net.TCPAddr).Port
	if _, err := Start(context.Background(), spec, nil); err == nil || !strings.Contains(err.Error(), "node 1: 127.0.0.11") || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), "another cluster.port") {
		t.Fatalf("port in use: %v", err)
	}

	// A command that exits at once: its last words are in the error.
	spec = Spec{System: CommandSystem, Nodes: 2, Command: []string{"sh", "-c", "echo cannot bind {addr}:{port} >&2; exit 3"},
		Dir: t.TempDir(), ReadyTimeout: 5 * time.Second, StopGrace: 200 * time.Millisecond, Executable: os.Args[0]}
	if _, err := Start(context.Background(), spec, nil); err == nil || !strings.Contains(err.Error(), "node 2:") || !strings.Contains(err.Error(), "cannot bind 127.0.0.12:") {
		t.Fatalf("exits at once: %v", err)
	}

	// A ready check that never passes; the sleeping commands must not survive.
	spec = Spec{System: CommandSystem, Nodes: 1, Port: 0, Command: []string{"sleep", "31.4159"},
		Ready: "/health", Dir: t.TempDir(), ReadyTimeout: 300 * time.Millisecond, StopGrace: 200 * time.Millisecond, Executable: os.Args[0]}
	if _, err := Start(context.Background(), spec, nil); err == nil || !strings.Contains(err.Error(), "node 1: not ready") {
		t.Fatalf("never ready: %v", err)
	}
	if pids := findCmdline("31.4159"); len(pids) > 0 {
		t.Fatalf("processes left behind: %v", pids)
	}
}

func TestCommandPlaceholders(t *testing.T) {
	dir := t.TempDir()
	// The test binary's static node stands in for the user's service.
	spec := Spec{System: CommandSystem, Nodes: 2, Dir: dir, ReadyTimeout: 5 * time.Second, StopGrace: 500 * time.Millisecond,
		Command: []string{os.Args[0], "node", "static", "--listen", "{addr}:{port}", "--node", "{node}", "--dir", "{dir}"},
		Ready:   "/health", Executable: os.Args[0]}
	c, err := Start(context.Background(), spec, nil)
	must(t, err)
	defer c.Stop()
	for _, n := range c.Nodes() {
		must(t, fetch(n.Addr))
	}
}

// TestNoOrphansAfterSIGKILL kills a controller holding a cluster (one node
// stopped, every node with a grandchild) with SIGKILL and checks that every
// node process, every grandchild and the reaper go.
func TestNoOrphansAfterSIGKILL(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), holderEnv+"="+t.TempDir())
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "pids ") {
		t.Fatalf("holder said %q, %v", line, err)
	}
	var pids []int
	for _, f := range strings.FieldsFunc(strings.TrimPrefix(line, "pids "), func(r rune) bool { return r == ' ' || r == '[' || r == ']' || r == '\n' }) {
		p, err := strconv.Atoi(f)
		must(t, err)
		pids = append(pids, p)
	}
	if len(pids) != 3 {
		t.Fatalf("want 2 node groups and a reaper, got %v", pids)
	}
	if len(findCmdline(orphanMarker)) != 2 {
		t.Fatalf("want one grandchild per node, found %v", findCmdline(orphanMarker))
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	assertGone(t, append(pids, findCmdline(orphanMarker)...))
}

// assertGone waits (bounded) until none of pids is alive; zombies count as gone.
func assertGone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d still alive", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func findCmdline(marker string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if strings.Contains(string(b), marker) && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestListeningOn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.13:0")
	must(t, err)
	defer ln.Close()
	other, err := net.Listen("tcp", "127.0.0.14:0")
	must(t, err)
	defer other.Close()
	got := listeningOn("127.0.0.13:1", syscall.Getpgrp())
	if len(got) != 2 || got[0] != "127.0.0.13:1" || got[1] != ln.Addr().String() {
		t.Fatalf("listeningOn = %v, want [127.0.0.13:1 %s]", got, ln.Addr())
	}
}

// TestHostDownSilencesEveryPort checks that a downed host stops answering on
// all of its ports, not only the service port.
func TestHostDownSilencesEveryPort(t *testing.T) {
	probe, err := net.Listen("tcp", "127.0.0.11:0")
	must(t, err)
	port := strconv.Itoa(probe.Addr().(*net.TCPAddr).Port)
	probe.Close()
	spec := testSpec(t.TempDir())
	spec.System, spec.Nodes, spec.Options = "twoport", 1, map[string]string{"second": port}
	c, err := Start(context.Background(), spec, nil)
	must(t, err)
	defer c.Stop()
	second := "127.0.0.11:" + port
	dial := func() error {
		conn, err := net.DialTimeout("tcp", second, 300*time.Millisecond)
		if err == nil {
			conn.Close()
		}
		return err
	}
	must(t, dial())
	must(t, c.HostDown(1, false))
	_ = dial() // the first connect may land in the zero backlog
	for range 2 {
		if err := dial(); err == nil || isRefused(err) {
			t.Fatalf("second port of a downed host: %v, want a timeout", err)
		}
	}
	must(t, c.StartApp(1))
	for i := 0; dial() != nil; i++ {
		if i > 100 {
			t.Fatal("second port never came back")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
