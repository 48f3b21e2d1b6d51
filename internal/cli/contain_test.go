package cli

import (
	"context"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mainEnv makes the test binary act as the faultbench command (checked in
// init, before TestMain), so a test can SIGKILL a whole `faultbench run`,
// or interrupt it as Ctrl-C does (the context ends on SIGINT and SIGTERM,
// as cmd/faultbench's).
const mainEnv = "FAULTBENCH_CLI_TEST_MAIN"

func init() {
	if os.Getenv(mainEnv) != "" && len(os.Args) > 1 && os.Args[1] != "node" {
		ctx, _ := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		os.Exit(ExitCode(Run(ctx, os.Args[1:], os.Stdout, os.Stderr)))
	}
}

// daemonScenario is a 2-node cluster of the user's own command whose nodes
// each start a daemon in a session of its own (`setsid sleep <marker><node>`)
// before exec'ing the server.
func daemonScenario(t *testing.T, marker, length string) string {
	port := freePort(t, "127.0.0.11", "127.0.0.12")
	return writeScenario(t, `
name: daemons
cluster:
  system: command
  nodes: 2
  port: `+port+`
  ready: /health
  command: ["sh", "-c", "setsid sleep `+marker+`{node} & exec `+os.Args[0]+` node static --listen {addr}:{port} --node {node} --pages 10 --page-size 100"]
workload: {rate: 20, trace: "zipf:10:1.0"}
phases: [{name: only, duration: `+length+`}]
`)
}

// freePort is a port free on every one of hosts right now.
func freePort(t *testing.T, hosts ...string) string {
	t.Helper()
	return strconv.Itoa(freePorts(t, 1, hosts...)[0])
}

// freePorts returns n distinct ports, each free on every one of hosts right
// now. Every candidate stays bound until all n are chosen, so the kernel
// cannot hand the same port out twice (it did: two ports of one etcd
// member came back equal, and its second listener could not bind).
func freePorts(t *testing.T, n int, hosts ...string) []int {
	t.Helper()
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	var ports []int
	for range 50 {
		if len(ports) == n {
			return ports
		}
		ln, err := net.Listen("tcp", hosts[0]+":0")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, ln)
		port := ln.Addr().(*net.TCPAddr).Port
		ok := true
		for _, h := range hosts[1:] {
			l, err := net.Listen("tcp", net.JoinHostPort(h, strconv.Itoa(port)))
			if err != nil {
				ok = false
				break
			}
			held = append(held, l)
		}
		if ok {
			ports = append(ports, port)
		}
	}
	if len(ports) < n {
		t.Fatalf("found %d of %d ports free on %v", len(ports), n, hosts)
	}
	return ports
}

// daemons lists the live processes whose command line holds marker.
func daemons(marker string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		st, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := strings.LastIndexByte(string(st), ')'); strings.Contains(string(b), marker) && i > 0 && i+2 < len(st) && st[i+2] != 'Z' {
			out = append(out, pid)
		}
	}
	return out
}

// awaitNone waits (bounded) until no process holds marker.
func awaitNone(t *testing.T, marker string) {
	t.Helper()
	for range 250 {
		if len(daemons(marker)) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("daemons %s survived: %v", marker, daemons(marker))
}

// TestSetsidDaemonsEndWithTheRun: daemons that left their node's process
// group and session are gone after a run, and after a `faultbench run`
// killed with SIGKILL mid-run.
func TestSetsidDaemonsEndWithTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid on this machine")
	}
	// A run that ends normally.
	if stdout, stderr, code := run(t, "run", daemonScenario(t, "1001.3", "1s"), "--quiet", "-o", filepath.Join(t.TempDir(), "out")); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	awaitNone(t, "1001.3")

	// A controller killed with SIGKILL while its daemons run.
	cmd := exec.Command(os.Args[0], "run", daemonScenario(t, "1001.4", "30s"), "--quiet", "-o", filepath.Join(t.TempDir(), "out"))
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for i := 0; len(daemons("1001.4")) < 2; i++ {
		if i > 500 {
			t.Fatalf("the run's daemons never started: %v", daemons("1001.4"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	awaitNone(t, "1001.4")
}
