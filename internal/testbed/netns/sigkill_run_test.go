package netns

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/warden"
)

// sigkillKinds are the fault kinds whose controller the SIGKILL test
// kills mid-fault, each with its scenario line.
var sigkillKinds = []struct{ kind, fault string }{
	{"link-down", `{type: link-down, link: [1, 2], at: 1s, duration: 60s}`},
	{"partition", `{type: partition, group: [[1], [2, 3]], at: 1s, duration: 60s}`},
	{"switch-down", `{type: switch-down, at: 1s, duration: 60s}`},
	{"loss", `{type: loss, node: 2, scope: client, at: 1s, duration: 60s, params: {loss: 0.3}}`},
	{"bandwidth", `{type: bandwidth, node: 3, scope: client, at: 1s, duration: 60s, params: {rate: 64K}}`},
	{"node-freeze", `{type: node-freeze, node: 2, at: 1s, duration: 60s}`},
	{"node-crash", `{type: node-crash, node: 2, at: 1s, duration: 60s}`},
	{"cpu-hog", `{type: cpu-hog, node: 1, at: 1s, duration: 60s, params: {cpus: 1}}`},
	{"mem-pressure", `{type: mem-pressure, node: 3, at: 1s, duration: 60s, params: {size: 32M}}`},
	{"delay", `{type: delay, node: 2, at: 1s, duration: 60s, params: {delay: 20ms}}`},
	{"link-flaky", `{type: link-flaky, link: [1, 2], at: 1s, duration: 60s, params: {up: 1s, down: 1s}}`},
}

const sigkillScenario = `name: sigkill-%s
seed: 1
cluster: {system: static, backend: netns, nodes: 3, pages: 50, page_size: 1024}
workload: {rate: 20, arrivals: poisson, clients: 2, trace: "zipf:50:1.0", connect_timeout: 1s, response_timeout: 2s, window: 1s}
phases:
  - {name: warmup, duration: 2s}
  - {name: fault, duration: 70s}
faults:
  - %s
`

// TestSIGKILLOfARealRunMidFaultLeavesNothing runs `faultbench run` on
// netns with one fault kind active, kills the controller with SIGKILL once
// events.jsonl shows the fault in effect, and requires within the lease
// plus 2 s: no namespace (so no rule, NFQUEUE chain, qdisc, veth end or
// bridge in one), no host link, no cgroup, no journal or socket, and no
// process of the binary (node, burner, balloon, warden with its delayer)
// left, stopped or not.
func TestSIGKILLOfARealRunMidFaultLeavesNothing(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("-short: builds faultbench and runs it once per fault kind")
	}
	bin := buildFaultbench(t)
	for _, k := range sigkillKinds {
		t.Run(k.kind, func(t *testing.T) { sigkillOne(t, bin, k.kind, k.fault) })
	}
}

func sigkillOne(t *testing.T, bin, kind, fault string) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scen, []byte(fmt.Sprintf(sigkillScenario, kind, fault)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command(bin, "run", scen, "-o", out)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	runID := ""
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if runID != "" {
			_, _ = warden.RemoveRun(runID) // whatever a failed test left
		}
	})
	err := waitFor(60*time.Second, func() (bool, error) {
		select {
		case <-exited:
			return false, errors.New("the run ended before its fault took effect")
		default:
		}
		b, _ := os.ReadFile(filepath.Join(out, "events.jsonl"))
		return bytes.Contains(b, []byte(`"fault.effective"`)), nil
	})
	if err != nil {
		t.Fatalf("%s: no fault.effective in events.jsonl: %v\n%s", kind, err, stderr.String())
	}
	runID = provenanceRunID(t, out)
	n := newNetwork(runID, 0, 3)
	if leftovers(runID, n) == "" {
		t.Fatal("the run has no kernel objects to leave")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	left := func() string {
		s := leftovers(runID, n)
		if p := processesOf(bin); p != "" {
			s += " processes " + p
		}
		return s
	}
	if err := waitFor(warden.DefaultLease+2*time.Second, func() (bool, error) { return left() == "", nil }); err != nil {
		t.Fatalf("%s: within lease+2s of SIGKILL the run still left %s", kind, left())
	}
}

// provenanceRunID reads the run id of the results in dir.
func provenanceRunID(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "provenance.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal(b, &p); err != nil || p.RunID == "" {
		t.Fatalf("provenance.json: no run_id (%v): %s", err, b)
	}
	return p.RunID
}

// processesOf lists the pids (with their state) whose executable is bin.
func processesOf(bin string) string {
	procs, _ := filepath.Glob("/proc/[0-9]*/exe")
	var out []string
	for _, p := range procs {
		if exe, err := os.Readlink(p); err == nil && exe == bin {
			stat, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "stat"))
			state := "?"
			if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
				state = string(stat[i+2])
			}
			out = append(out, filepath.Base(filepath.Dir(p))+":"+state)
		}
	}
	return strings.Join(out, " ")
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// buildFaultbench builds cmd/faultbench once into a temporary directory;
// the run's processes are found by that unique executable path.
func buildFaultbench(t *testing.T) string {
	buildOnce.Do(func() {
		gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(gobin); err != nil {
			if gobin, err = exec.LookPath("go"); err != nil {
				buildErr = errors.New("no go command to build faultbench with")
				return
			}
		}
		dir, err := os.MkdirTemp("", "faultbench-sigkill-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "faultbench")
		if out, err := exec.Command(gobin, "build", "-o", builtBin, "github.com/faultbench/faultbench/cmd/faultbench").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		if strings.HasPrefix(buildErr.Error(), "no go command") {
			t.Skip(buildErr)
		}
		t.Fatal(buildErr)
	}
	return builtBin
}
