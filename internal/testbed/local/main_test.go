package local

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/node"
	_ "github.com/faultbench/faultbench/internal/node/static"
	"github.com/spf13/pflag"
)

// The test binary doubles as `faultbench node KIND` (when its first argument
// is "node": every process the testbed starts, the reaper included, must
// never run the tests again, or they would multiply) and as a controller
// that holds a cluster until it is killed (env holderEnv).
const (
	holderEnv = "FAULTBENCH_TESTBED_HOLDER"
)

// twoPort is a test node kind listening on --listen and on a second port
// (--option second=PORT) of the same address, like press's intra port.
func twoPort(ctx context.Context, cfg node.Config) error {
	host, _, _ := net.SplitHostPort(cfg.Listen)
	second, err := net.Listen("tcp", net.JoinHostPort(host, cfg.Options["second"]))
	if err != nil {
		return err
	}
	defer second.Close()
	go func() {
		for {
			c, err := second.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return node.Run(ctx, "static", cfg)
}

func init() { node.Register("twoport", twoPort) }

func TestMain(m *testing.M) {
	switch {
	case len(os.Args) > 1 && os.Args[1] == "node":
		os.Exit(runNode(os.Args[1:]))
	case os.Getenv(holderEnv) != "":
		os.Exit(runHolder(os.Getenv(holderEnv)))
	}
	os.Exit(m.Run())
}

func runNode(args []string) int {
	if len(args) < 2 || args[0] != "node" {
		fmt.Fprintln(os.Stderr, "usage: node KIND [flags]")
		return 2
	}
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

// testSpec is a 2-node static cluster of the test binary on free ports.
func testSpec(dir string) Spec {
	return Spec{
		System: "static", Nodes: 2, Pages: 20, PageSize: 2048, Dir: dir,
		ReadyTimeout: 5 * time.Second, StopGrace: 500 * time.Millisecond,
		Executable: os.Args[0],
	}
}

// orphanMarker names the grandchild every holder node forks, so the test can
// find it: only the reaper can end it, since Pdeathsig reaches only the
// controller's direct children.
const orphanMarker = "33.3"

// runHolder starts a cluster whose nodes each fork a grandchild, freezes
// node 2, prints the process groups and the reaper's pid, and waits to be
// killed.
func runHolder(dir string) int {
	spec := testSpec(dir)
	spec.System = CommandSystem
	spec.Ready = "/health"
	spec.Command = []string{"sh", "-c", "sleep " + orphanMarker + " & exec " + os.Args[0] + " node static --listen {addr}:{port} --node {node}"}
	c, err := Start(context.Background(), spec, nil)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	if err := c.Pause(2); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("pids", c.Pids(), c.ReaperPid())
	time.Sleep(30 * time.Second) // bounded: the test kills us long before
	_ = c.Stop()
	return 0
}
