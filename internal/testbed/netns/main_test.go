package netns

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/faultbench/faultbench/internal/kernelfault"
	"github.com/faultbench/faultbench/internal/node"
	_ "github.com/faultbench/faultbench/internal/node/static"
	"github.com/faultbench/faultbench/internal/testbed"
	_ "github.com/faultbench/faultbench/internal/warden"
)

// The test binary doubles as `faultbench node KIND` (static, warden,
// burner, balloon) and as a controller that holds a faulted cluster until
// it is killed (env holderEnv).
// holderDirEnv names the holder's cluster directory: the test's own
// t.TempDir, so that it goes when the test ends although the holder is
// killed before it could remove it.
const holderDirEnv = "FAULTBENCH_NETNS_HOLDER_DIR"

const holderEnv = "FAULTBENCH_NETNS_HOLDER"

func TestMain(m *testing.M) {
	switch {
	case len(os.Args) > 2 && os.Args[1] == "node":
		os.Exit(runNode(os.Args[1:]))
	case os.Getenv(holderEnv) != "":
		os.Exit(runHolder(os.Getenv(holderEnv)))
	}
	code := m.Run()
	if builtBin != "" { // faultbenchBinary's build, 48 MB: not left in /tmp
		os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

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

// testSpec is a static cluster of the test binary.
func testSpec(dir, runID string, nodes int) testbed.Spec {
	return testbed.Spec{
		System: "static", Nodes: nodes, Pages: 20, PageSize: 2048, Dir: dir, Port: 8080,
		ReadyTimeout: 10 * time.Second, StopGrace: 500 * time.Millisecond, Boot: time.Second,
		Executable: os.Args[0], RunID: runID,
	}
}

// holderNodes is the size of the holder's cluster.
const holderNodes = 3

// runHolder starts a 3-node cluster as run id, puts a fault of every
// mechanism on it (nft rule, tbf, balloon, burner, NFQUEUE delay and
// flaky link, a crashed host's black hole, a frozen cgroup), prints
// "held", and waits to be killed.
func runHolder(runID string) int {
	dir := os.Getenv(holderDirEnv)
	if dir == "" {
		dir, _ = os.MkdirTemp("", "fb-netns-holder-")
	}
	spec := testSpec(dir, runID, holderNodes)
	plan, err := Backend{}.Plan(spec)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	tc, err := Backend{}.Start(context.Background(), spec, plan, nil)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	c := tc.(*Namespaces)
	l := kernelfault.Label{Fault: "holder", ID: 1}
	steps := []func() error{
		func() error {
			_, err := c.Filter(l, 1, kernelfault.Block{Peers: kernelfault.Peers{Nodes: []int{2}}})
			return err
		},
		func() error { _, err := c.Shape(l, 2, kernelfault.Peers{Client: true}, 1<<20); return err },
		func() error { _, err := c.Balloon(l, 2, 16<<20); return err },
		func() error { _, err := c.Burn(l, 2, 1); return err },
		func() error {
			_, err := c.Queue(l, 2, kernelfault.Peers{Client: true}, kernelfault.Disturbance{Delay: 5 * time.Millisecond})
			return err
		},
		func() error {
			_, err := c.Queue(l, 1, kernelfault.Peers{Nodes: []int{3}}, kernelfault.Disturbance{Up: time.Second, Down: time.Second})
			return err
		},
		func() error { return c.HostDown(3, false) },
		func() error { return c.Pause(1) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			fmt.Println("error:", err)
			return 1
		}
	}
	fmt.Println("held")
	time.Sleep(60 * time.Second) // bounded: the test kills us long before
	_ = c.Stop()
	return 0
}
