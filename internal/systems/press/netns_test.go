package press_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	_ "github.com/faultbench/faultbench/internal/kernelfault" // kernel faults (netns)
	"github.com/faultbench/faultbench/internal/node"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/scenario"
	_ "github.com/faultbench/faultbench/internal/systems/press"
	_ "github.com/faultbench/faultbench/internal/testbed/netns" // backend netns
	_ "github.com/faultbench/faultbench/internal/warden"        // node kind warden
)

// The test binary doubles as `faultbench node KIND` (press, warden) for
// the netns run below; every other test runs as usual.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "node" {
		var cfg node.Config
		fs := pflag.NewFlagSet("node", pflag.ContinueOnError)
		node.BindFlags(fs, &cfg)
		if err := fs.Parse(os.Args[3:]); err != nil {
			os.Exit(2)
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
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

// A press ha cluster on backend netns: its nodes dial each other directly,
// so link-down of node 2 is served by the kernel (an nftables table in
// node 2's namespace naming its peers), proves itself with
// fault.effective and fault.reverted, and the cluster sees the partition:
// node 1 removes node 2, and forwards to node 2 fail while it is cut off.
// The users' traffic to node 2 is not cut (only intra-cluster links are).
const netnsScenario = `
name: press-netns-link-down
seed: 3
cluster: {system: press, backend: netns, mode: ha, nodes: 3, pages: 600, page_size: 2048}
workload: {rate: 200, clients: 2, trace: "zipf:600:1.0", connect_timeout: 1s, response_timeout: 500ms, window: 500ms}
phases:
  - {name: warmup, duration: 4s}
  - {name: fault, duration: 7s}
  - {name: post, duration: 2s}
faults:
  - {type: link-down, node: 2, at: 4s, duration: 7s, params: {mode: hold}}
operator: {policy: none}
`

func TestLinkDownOnNetnsGoesThroughTheKernel(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("backend netns needs root")
	}
	for _, tool := range []string{"ip", "nft", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("backend netns needs %s: %v", tool, err)
		}
	}
	if testing.Short() {
		t.Skip("a 13 s run on netns; skipped with -short")
	}
	sc, err := scenario.Parse([]byte(netnsScenario), "press-netns-link-down.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Options{Scenario: sc, OutDir: out, Executable: os.Args[0]})
	if err != nil {
		t.Fatal(err)
	}
	events, err := os.ReadFile(filepath.Join(res.Dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var effective, reverted string
	for _, l := range strings.Split(string(events), "\n") {
		switch {
		case strings.Contains(l, `"fault.effective"`) && strings.Contains(l, `"link-down"`):
			effective = l
		case strings.Contains(l, `"fault.reverted"`) && strings.Contains(l, `"link-down"`):
			reverted = l
		case strings.Contains(l, `"fault.error"`):
			t.Errorf("fault failed: %s", l)
		}
	}
	// The evidence names the kernel mechanism and the three-node peers
	// of node 2 (a proxy would have left no nft table).
	if !strings.Contains(effective, "nft table") || !strings.Contains(effective, "-n2 dropping packets") || !strings.Contains(effective, "rule counter") {
		t.Errorf("no kernel fault.effective for link-down on node 2; got %q", effective)
	}
	if !strings.Contains(reverted, "deleted") {
		t.Errorf("no kernel fault.reverted for link-down; got %q", reverted)
	}
	// press itself saw the partition.
	log1, err := os.ReadFile(filepath.Join(res.Dir, "node-1.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log1), "node 2 removed") {
		t.Errorf("node 1 never removed node 2: no partition seen by press")
	}
	// The windows of the fault phase hold the requests the cut links
	// failed (forwards between node 2 and its peers) before the split.
	failed := failedInWindows(t, filepath.Join(res.Dir, "windows.csv"), 4, 11)
	if failed == 0 {
		t.Errorf("no request failed in the windows of the fault phase: the partition is not visible")
	}
}

// failedInWindows sums the non-ok requests of the windows starting in
// [from, to) seconds.
func failedInWindows(t *testing.T, path string, from, to float64) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	sum := 0
	for _, r := range rows[1:] {
		start, _ := strconv.ParseFloat(r[col["t_start_s"]], 64)
		if start < from || start >= to {
			continue
		}
		offered, _ := strconv.Atoi(r[col["offered"]])
		ok, _ := strconv.Atoi(r[col["ok"]])
		sum += offered - ok
	}
	return sum
}
