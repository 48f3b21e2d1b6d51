// Command processfault measures inject-to-effect and revert-to-effect
// latency of the process faults, local backend vs netns, in one run: a
// 1-node static cluster on each backend, the two alternating (the order
// flipping each repetition) so that the machine's drift hits both alike.
//
//	sudo go run ./bench/processfault              # 15 repetitions
//	sudo go run ./bench/processfault -reps 5
//
// It pulls the levers the fault injectors pull (internal/fault: app-hang
// and node-freeze call ProcessLever.Pause and Resume, app-crash
// AppLever.KillApp and StartApp): SIGSTOP/SIGCONT of the node's process
// group on local, the cgroup freezer on netns (through the warden); a
// SIGKILL and a new process on both. Each latency is measured twice: how
// long the lever call takes to return, and when an observer polling every
// 100 µs sees the effect:
//
//   - inject (app-hang, node-freeze): every process of the node is stopped
//     or frozen (state T or D in /proc/PID/stat);
//   - inject (app-crash): no process of the node is left (gone or a
//     zombie);
//   - revert (all three): the node answers GET /health with 200 on a new
//     connection, as a user would see it.
//
// Figures are medians over -reps, in milliseconds; ratio = netns / local.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/node"
	_ "github.com/faultbench/faultbench/internal/node/static"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/testbed"
	"github.com/faultbench/faultbench/internal/testbed/local"
	"github.com/faultbench/faultbench/internal/testbed/netns"
	_ "github.com/faultbench/faultbench/internal/warden"
)

// cluster is one backend's running 1-node cluster.
type cluster struct {
	name string
	c    testbed.Cluster
	addr string // node 1's address
}

// mechanism is one process fault: its lever calls and what its inject's
// effect looks like from outside.
type mechanism struct {
	name    string
	inject  func(c testbed.Cluster) error
	revert  func(c testbed.Cluster) error
	stopped bool // inject's effect: processes stopped (else: gone)
}

var mechanisms = []mechanism{
	{"app-hang", pause, resume, true},
	{"node-freeze", pause, resume, true},
	{"app-crash", func(c testbed.Cluster) error { return c.(fault.AppLever).KillApp(1) },
		func(c testbed.Cluster) error { return c.(fault.AppLever).StartApp(1) }, false},
}

func pause(c testbed.Cluster) error  { return c.(fault.ProcessLever).Pause(1) }
func resume(c testbed.Cluster) error { return c.(fault.ProcessLever).Resume(1) }

func main() {
	if len(os.Args) > 2 && os.Args[1] == "node" {
		os.Exit(runNode(os.Args[1:]))
	}
	reps := flag.Int("reps", 15, "repetitions of each fault on each backend")
	flag.Parse()
	if err := run(*reps); err != nil {
		fmt.Fprintln(os.Stderr, "processfault:", err)
		os.Exit(1)
	}
}

// runNode serves `BIN node KIND` (the static node, the warden) as
// faultbench does.
func runNode(args []string) int {
	var cfg node.Config
	fs := pflag.NewFlagSet("node", pflag.ContinueOnError)
	node.BindFlags(fs, &cfg)
	if err := fs.Parse(args[2:]); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := node.Run(ctx, args[1], cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// sample is one repetition's four figures, in ms.
type sample struct{ injectCall, injectEffect, revertCall, revertEffect float64 }

func run(reps int) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root (the netns backend: namespaces, cgroups): run with sudo")
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var clusters []*cluster
	defer func() {
		for _, c := range clusters {
			if err := c.c.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "processfault: stop %s: %v\n", c.name, err)
			}
		}
	}()
	for _, b := range []struct {
		name    string
		backend testbed.Backend
		port    int
	}{{"local", local.Backend{}, 0}, {"netns", netns.Backend{}, 8080}} {
		c, err := start(b.name, b.backend, b.port)
		if err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
		clusters = append(clusters, c)
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("processfault: %d repetitions, %s, load average %s", reps, time.Now().UTC().Format(time.RFC3339), load)
	fmt.Println("one 1-node static cluster per backend; per repetition: inject call, inject observed, revert call, revert observed (ms)")
	got := map[string]map[string][]sample{}
	for _, m := range mechanisms {
		got[m.name] = map[string][]sample{}
		for rep := range reps {
			order := slices.Clone(clusters)
			if rep%2 == 1 {
				slices.Reverse(order)
			}
			for _, c := range order {
				s, err := measure(exe, c, m)
				if err != nil {
					return fmt.Errorf("%s on %s: %w", m.name, c.name, err)
				}
				got[m.name][c.name] = append(got[m.name][c.name], s)
				fmt.Printf("raw %s %s rep %d: %.2f %.2f %.2f %.2f\n", m.name, c.name, rep+1, s.injectCall, s.injectEffect, s.revertCall, s.revertEffect)
			}
		}
	}
	fmt.Printf("\nmedians of %d, ms; ratio netns / local\n\n", reps)
	fmt.Println("| fault | mechanism local / netns | inject -> effect local | netns | ratio | revert -> effect local | netns | ratio | (lever call returns: inject local / netns, revert local / netns) |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, m := range mechanisms {
		l, n := got[m.name]["local"], got[m.name]["netns"]
		med := func(ss []sample, f func(sample) float64) float64 {
			xs := make([]float64, len(ss))
			for i, s := range ss {
				xs[i] = f(s)
			}
			return median(xs)
		}
		ie := func(s sample) float64 { return s.injectEffect }
		re := func(s sample) float64 { return s.revertEffect }
		ic := func(s sample) float64 { return s.injectCall }
		rc := func(s sample) float64 { return s.revertCall }
		how := "SIGSTOP / cgroup freezer (warden)"
		if !m.stopped {
			how = "SIGKILL, new process / same, in the node's cgroup and namespace"
		}
		fmt.Printf("| %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f / %.2f, %.2f / %.2f |\n", m.name, how,
			med(l, ie), med(n, ie), med(n, ie)/med(l, ie), med(l, re), med(n, re), med(n, re)/med(l, re),
			med(l, ic), med(n, ic), med(l, rc), med(n, rc))
	}
	return nil
}

func start(name string, b testbed.Backend, port int) (*cluster, error) {
	id := make([]byte, 6)
	_, _ = rand.Read(id)
	dir, err := os.MkdirTemp("", "fb-processfault-"+name+"-")
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	spec := testbed.Spec{System: "static", Nodes: 1, Pages: 20, PageSize: 2048, Dir: dir, Port: port,
		ReadyTimeout: 10 * time.Second, StopGrace: 500 * time.Millisecond, Boot: time.Second,
		Executable: os.Args[0], RunID: hex.EncodeToString(id),
		Clock: testbed.ClockFunc(func() time.Duration { return time.Since(t0) })}
	plan, err := b.Plan(spec)
	if err != nil {
		return nil, err
	}
	c, err := b.Start(context.Background(), spec, plan, func(record.Event) {})
	if err != nil {
		return nil, err
	}
	return &cluster{name: name, c: c, addr: c.Nodes()[0].Addr}, nil
}

// measure injects and reverts m once on c, with the node healthy before.
func measure(exe string, c *cluster, m mechanism) (sample, error) {
	var s sample
	if _, err := observe(10*time.Second, func() bool { return healthy(c.addr) }); err != nil {
		return s, fmt.Errorf("node not healthy before the inject: %w", err)
	}
	pids := nodePids(exe, c.addr)
	if len(pids) == 0 {
		return s, fmt.Errorf("no process listens as %s", c.addr)
	}
	effect := func() bool {
		for _, p := range pids {
			st := state(p)
			if m.stopped && st != 'T' && st != 't' && st != 'D' {
				return false
			}
			if !m.stopped && st != 0 && st != 'Z' {
				return false
			}
		}
		return true
	}
	var err error
	s.injectCall, s.injectEffect, err = timed(func() error { return m.inject(c.c) }, effect)
	if err != nil {
		return s, fmt.Errorf("inject: %w", err)
	}
	s.revertCall, s.revertEffect, err = timed(func() error { return m.revert(c.c) }, func() bool { return healthy(c.addr) })
	if err != nil {
		return s, fmt.Errorf("revert: %w", err)
	}
	return s, nil
}

// timed runs call while an observer polls effect; it returns how long the
// call took and when the effect was first seen, both from the call's start.
func timed(call func() error, effect func() bool) (callMs, effectMs float64, err error) {
	seen := make(chan time.Time, 1)
	t0 := time.Now()
	go func() {
		at, err := observe(10*time.Second, effect)
		if err != nil {
			at = time.Time{}
		}
		seen <- at
	}()
	err = call()
	callMs = msSince(t0)
	at := <-seen
	if err != nil {
		return 0, 0, err
	}
	if at.IsZero() {
		return 0, 0, fmt.Errorf("no effect observed within 10s")
	}
	return callMs, float64(at.Sub(t0).Microseconds()) / 1000, nil
}

// observe polls cond every 100 µs until it holds (returning when) or
// limit passes.
func observe(limit time.Duration, cond func() bool) (time.Time, error) {
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("not within %v", limit)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

var client = &http.Client{Timeout: 200 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}

// healthy reports whether the node answers GET /health with 200.
func healthy(addr string) bool {
	resp, err := client.Get("http://" + addr + "/health")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// nodePids lists the processes of exe that serve addr (`node static
// --listen addr`), on either backend.
func nodePids(exe, addr string) []int {
	var out []int
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range cmdlines {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte("--listen\x00"+addr+"\x00")) {
			continue
		}
		if e, _ := os.Readlink(filepath.Join(filepath.Dir(p), "exe")); e != exe {
			continue
		}
		var pid int
		fmt.Sscan(filepath.Base(filepath.Dir(p)), &pid)
		out = append(out, pid)
	}
	return out
}

// state is pid's state letter (/proc/PID/stat), 0 when it is gone.
func state(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
