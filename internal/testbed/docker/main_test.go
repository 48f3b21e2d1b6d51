package docker

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/faultbench/faultbench/internal/kernelfault"
	"github.com/faultbench/faultbench/internal/node"
	_ "github.com/faultbench/faultbench/internal/node/static"
	"github.com/faultbench/faultbench/internal/testbed"
	_ "github.com/faultbench/faultbench/internal/testbed/netns" // node kinds burner, balloon
	_ "github.com/faultbench/faultbench/internal/warden"
)

// The test binary doubles as `faultbench node KIND` (static, holder,
// warden, burner, balloon: in the image too, as /faultbench) and as a
// controller that holds a faulted cluster until it is killed (holderEnv).
// holderDirEnv names the holder's cluster directory: the test's own
// t.TempDir, so that it goes when the test ends although the holder is
// killed before it could remove it.
const holderDirEnv = "FAULTBENCH_DOCKER_HOLDER_DIR"

const holderEnv = "FAULTBENCH_DOCKER_HOLDER"

func TestMain(m *testing.M) {
	switch {
	case len(os.Args) > 2 && os.Args[1] == "node":
		os.Exit(runNode(os.Args[1:]))
	case os.Getenv(holderEnv) != "":
		os.Exit(runHolder(os.Getenv(holderEnv)))
	}
	os.Exit(m.Run())
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
		ReadyTimeout: 20 * time.Second, StopGrace: 500 * time.Millisecond, Boot: time.Second,
		Executable: os.Args[0], RunID: runID,
	}
}

// runHolder starts a 2-node cluster as run id, cuts node 2's client link
// with an nft rule, pauses node 1 and disconnects it from the network,
// prints "held", and waits to be killed.
func runHolder(runID string) int {
	dir := os.Getenv(holderDirEnv)
	if dir == "" {
		dir, _ = os.MkdirTemp("", "fb-docker-holder-")
	}
	b := &Backend{Connect: Connect}
	spec := testSpec(dir, runID, 2)
	plan, err := b.Plan(spec)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	tc, err := b.Start(context.Background(), spec, plan, nil)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	c := tc.(*Containers)
	if _, err := c.Filter(kernelfault.Label{Fault: "holder", ID: 1}, 2, kernelfault.Block{Peers: kernelfault.Peers{Client: true}}); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	if err := c.Pause(1); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	if _, err := c.Disconnect(kernelfault.Label{Fault: "disconnect", ID: 2}, 1); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("held")
	time.Sleep(60 * time.Second) // bounded: the test kills us long before
	_ = c.Stop()
	return 0
}
