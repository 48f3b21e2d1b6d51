// Command wardenfault measures what routing kernel faults through the
// warden costs: inject-to-effect and revert-to-effect latency per
// mechanism, the warden's way (the controller sends a typed request over
// the run's Unix socket; the warden applies and proves the fault) against
// the direct way (the controller applies and proves it itself), side by
// side on one 3-node netns cluster of static nodes, alternating the two
// so that the machine's drift hits both alike.
//
//	sudo go run ./bench/wardenfault             # 15 repetitions
//	sudo go run ./bench/wardenfault -reps 5
//
// Every latency includes the proof (probe datagrams and a counter read
// for nftables, the tbf's statistics, the freezer's state); it is the
// time the lever call takes to return, as fault.effective reports it.
// Figures are medians over -reps; the ratio is warden/direct.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/faultbench/faultbench/internal/kernelfault"
	"github.com/faultbench/faultbench/internal/node"
	_ "github.com/faultbench/faultbench/internal/node/static"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/testbed"
	"github.com/faultbench/faultbench/internal/testbed/netns"
	_ "github.com/faultbench/faultbench/internal/warden"
)

// mechanism is one kernel fault: apply returns its revert.
type mechanism struct {
	name  string
	apply func(c *netns.Namespaces, id int) (func() error, error)
}

var mechanisms = []mechanism{
	{"nft drop (link-down)", func(c *netns.Namespaces, id int) (func() error, error) {
		u, err := c.Filter(kernelfault.Label{Fault: "link-down", ID: id}, 1, kernelfault.Block{Peers: kernelfault.Peers{Nodes: []int{2}}})
		return u, err
	}},
	{"nft drop x3 (partition)", func(c *netns.Namespaces, id int) (func() error, error) {
		var us []kernelfault.Undo
		for n, peers := range map[int][]int{1: {2, 3}, 2: {1}, 3: {1}} {
			u, err := c.Filter(kernelfault.Label{Fault: "partition", ID: id}, n, kernelfault.Block{Peers: kernelfault.Peers{Nodes: peers}})
			if err != nil {
				return nil, err
			}
			us = append(us, u)
		}
		return func() error {
			for _, u := range us {
				if err := u(); err != nil {
					return err
				}
			}
			return nil
		}, nil
	}},
	{"nft loss 0.3 (loss)", func(c *netns.Namespaces, id int) (func() error, error) {
		u, err := c.Filter(kernelfault.Label{Fault: "loss", ID: id}, 2, kernelfault.Block{Peers: kernelfault.Peers{Client: true}, Loss: 0.3})
		return u, err
	}},
	{"tbf (bandwidth)", func(c *netns.Namespaces, id int) (func() error, error) {
		u, err := c.Shape(kernelfault.Label{Fault: "bandwidth", ID: id}, 3, kernelfault.Peers{Client: true}, 64<<10)
		return u, err
	}},
	{"freezer (node-freeze)", func(c *netns.Namespaces, id int) (func() error, error) {
		if err := c.Pause(2); err != nil {
			return nil, err
		}
		return func() error { return c.Resume(2) }, nil
	}},
}

func main() {
	if len(os.Args) > 2 && os.Args[1] == "node" {
		os.Exit(runNode(os.Args[1:]))
	}
	reps := flag.Int("reps", 15, "repetitions of each mechanism in each mode")
	flag.Parse()
	if err := run(*reps); err != nil {
		fmt.Fprintln(os.Stderr, "wardenfault:", err)
		os.Exit(1)
	}
}

// runNode serves `BIN node KIND` (static nodes, the warden) as faultbench does.
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

func run(reps int) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root (network namespaces, nft, cgroups): run with sudo")
	}
	c, err := start()
	if err != nil {
		return err
	}
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "wardenfault: stop:", err)
		}
	}()
	fmt.Printf("%d repetitions of each, alternating warden and direct; medians in ms (inject -> effect, revert -> reverted)\n\n", reps)
	fmt.Println("| mechanism | inject warden | inject direct | ratio | revert warden | revert direct | ratio |")
	fmt.Println("|---|---|---|---|---|---|---|")
	id := 0
	for _, m := range mechanisms {
		var inj, rev [2][]float64 // 0: warden, 1: direct
		for range reps {
			for mode := range 2 {
				c.SetDirect(mode == 1)
				id++
				t0 := time.Now()
				undo, err := m.apply(c, id)
				if err != nil {
					return fmt.Errorf("%s: %w", m.name, err)
				}
				inj[mode] = append(inj[mode], msSince(t0))
				t1 := time.Now()
				if err := undo(); err != nil {
					return fmt.Errorf("%s: revert: %w", m.name, err)
				}
				rev[mode] = append(rev[mode], msSince(t1))
			}
		}
		iw, id0, rw, rd := median(inj[0]), median(inj[1]), median(rev[0]), median(rev[1])
		fmt.Printf("| %s | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f |\n", m.name, iw, id0, iw/id0, rw, rd, rw/rd)
	}
	return nil
}

func start() (*netns.Namespaces, error) {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	dir, err := os.MkdirTemp("", "fb-wardenfault-")
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	spec := testbed.Spec{System: "static", Nodes: 3, Pages: 20, PageSize: 2048, Dir: dir, Port: 8080,
		ReadyTimeout: 10 * time.Second, StopGrace: 500 * time.Millisecond, Boot: time.Second,
		Executable: os.Args[0], RunID: hex.EncodeToString(b),
		Clock: testbed.ClockFunc(func() time.Duration { return time.Since(t0) })}
	plan, err := netns.Backend{}.Plan(spec)
	if err != nil {
		return nil, err
	}
	tc, err := netns.Backend{}.Start(context.Background(), spec, plan, func(record.Event) {})
	if err != nil {
		return nil, err
	}
	return tc.(*netns.Namespaces), nil
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
