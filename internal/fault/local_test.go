package fault_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/node"
	_ "github.com/faultbench/faultbench/internal/node/static"
	"github.com/faultbench/faultbench/internal/pageset"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/testbed"
	"github.com/faultbench/faultbench/internal/testbed/local"
)

// TestMain lets the test binary act as `faultbench node KIND`, so the
// testbed can start real nodes from it.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "node" {
		var cfg node.Config
		fs := pflag.NewFlagSet("node", pflag.ExitOnError)
		node.BindFlags(fs, &cfg)
		_ = fs.Parse(os.Args[3:])
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		err := node.Run(ctx, os.Args[2], cfg)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type upEvents struct {
	mu sync.Mutex
	up map[int]int // node -> node.up count
}

func (u *upEvents) emit(e record.Event) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if e.Kind == "node.up" {
		u.up[e.Node]++
	}
}

func (u *upEvents) count(n int) int { u.mu.Lock(); defer u.mu.Unlock(); return u.up[n] }

// serves reports whether addr answers page 1 correctly within 300ms.
func serves(addr string) error {
	c := http.Client{Timeout: 300 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + pageset.Path(1))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && !pageset.Verify(pageset.Path(1), b) {
		err = errors.New("data error")
	}
	return err
}

// TestLocalInjectors injects each process fault into real static nodes,
// stepping the schedule by hand so the checks happen between steps.
func TestLocalInjectors(t *testing.T) {
	ups := &upEvents{up: map[int]int{}}
	cluster, err := local.Start(context.Background(), testbed.Spec{
		System: "static", Nodes: 2, Pages: 10, PageSize: 1000, Dir: t.TempDir(), Boot: 300 * time.Millisecond,
		ReadyTimeout: 5 * time.Second, StopGrace: 300 * time.Millisecond, Executable: os.Args[0],
	}, ups.emit)
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Stop()
	a, b := cluster.Nodes()[0].Addr, cluster.Nodes()[1].Addr

	sec := func(s float64) scenario.Duration { return scenario.D(time.Duration(s * 1e9)) }
	occ, err := fault.Expand([]scenario.Fault{
		{Type: "app-crash", Node: scenario.NodeRef{N: 1}, At: sec(1), Duration: sec(1)},
		{Type: "app-hang", Node: scenario.NodeRef{N: 2}, At: sec(1), Duration: sec(1)},
		{Type: "node-crash", Node: scenario.NodeRef{N: 1}, At: sec(3)},
		{Type: "node-freeze", Node: scenario.NodeRef{N: 2}, At: sec(3), Mode: "sticky"},
	}, fault.Plan{RunLength: 10 * time.Second, Nodes: 2, Boot: cluster.Boot()}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	sched, err := fault.NewScheduler(occ, cluster, fault.SchedulerConfig{Backend: "local", System: "static"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	waitUp := func(n, count int) {
		t.Helper()
		for i := 0; ups.count(n) < count; i++ {
			if i > 500 {
				t.Fatalf("node %d never came back", n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	down := func(addr, what string) {
		t.Helper()
		if err := serves(addr); err == nil {
			t.Fatalf("%s: %s still serves", what, addr)
		}
	}
	up := func(addr, what string) {
		t.Helper()
		if err := serves(addr); err != nil {
			t.Fatalf("%s: %s: %v", what, addr, err)
		}
	}

	sched.Step(ctx, time.Second) // app-crash 1, app-hang 2
	down(a, "app-crash")
	down(b, "app-hang")
	sched.Step(ctx, 2*time.Second) // both clear
	waitUp(1, 2)
	up(a, "app-crash cleared")
	up(b, "app-hang cleared")
	sched.Step(ctx, 3*time.Second) // node-crash 1, node-freeze 2 (sticky)
	down(a, "node-crash")
	down(b, "node-freeze")
	sched.Step(ctx, 3*time.Second+cluster.Boot()) // node 1 boots
	waitUp(1, 3)
	up(a, "node-crash over")
	down(b, "node-freeze is sticky")
	pgids := cluster.Pids()
	if err := sched.RevertAll(); err != nil {
		t.Fatal(err)
	}
	up(b, "node-freeze reverted")
	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pgids {
		for i := 0; syscall.Kill(pid, 0) == nil && !zombie(pid); i++ {
			if i > 300 {
				t.Fatalf("process %d left behind", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	for i := len(b) - 1; i > 0; i-- {
		if b[i] == ')' {
			return i+2 < len(b) && b[i+2] == 'Z'
		}
	}
	return false
}
