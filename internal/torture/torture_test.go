package torture

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/workload"
)

// scenarios are the runs the cuts interrupt, each lasting 10 s at
// timeScale (plus start-up).
//
// static: three independent static nodes, one fault of each process kind,
// and an operator that repairs the crash.
//
// press: a press ha cluster whose intra-cluster links run through the
// controller's faultnet proxies (backend local), with a link held down, a
// partition, and a communication fault through the nodes' control
// endpoint: a cut mid-fault leaves proxies and a fault entry in a node,
// which must all go with the run.
//
// raid: one RAID-5 node over emulated disks with a sticky disk fault
// injected through its control API: a cut while reads hang on the faulty
// disk.
var scenarios = map[string]string{
	"static": `name: torture
seed: 1
cluster: {system: static, nodes: 3, pages: 200, page_size: 2048}
workload:
  rate: 200
  arrivals: poisson
  clients: 2
  trace: "zipf:200:1.0"
  connect_timeout: 2s
  response_timeout: 3s
  window: 1s
phases:
  - {name: warmup, duration: 10s}
  - {name: fault, duration: 20s}
  - {name: recovery, duration: 10s}
faults:
  - {type: app-hang, node: 1, at: 11s, duration: 6s}
  - {type: node-freeze, node: 2, at: 14s, duration: 6s}
  - {type: app-crash, node: 3, at: 20s, mode: sticky}
operator: {detect_after: 4s, policy: restart-failed, action_time: 1s}
`,
	"press": `name: torture-press
seed: 1
cluster: {system: press, mode: ha, nodes: 3, pages: 300, page_size: 2048}
workload:
  rate: 200
  arrivals: poisson
  clients: 2
  trace: "zipf:300:1.0"
  connect_timeout: 2s
  response_timeout: 3s
  window: 1s
phases:
  - {name: warmup, duration: 10s}
  - {name: fault, duration: 20s}
  - {name: recovery, duration: 10s}
faults:
  - {type: link-down, node: 2, at: 11s, duration: 8s, params: {mode: hold}}
  - {type: partition, group: [[1], [2, 3]], at: 21s, duration: 8s}
  - {type: mem-alloc-fail, node: 3, at: 31s, duration: 6s}
operator: {policy: none}
`,
	"raid": `name: torture-raid
seed: 1
cluster:
  system: raid
  nodes: 1
  pages: 200
  page_size: 8192
  options: {disks: "4", spares: "1", chunk: 32KiB, disk_size: 4MiB, io_timeout: 2s,
            transient_policy: tolerant, reconstruction: high, reconstruction_auto: "true"}
workload:
  rate: 200
  arrivals: poisson
  clients: 2
  trace: "zipf:200:1.0"
  connect_timeout: 2s
  response_timeout: 3s
  window: 1s
phases:
  - {name: warmup, duration: 10s}
  - {name: fault, duration: 30s}
faults:
  - {type: disk-hang-read, node: 1, disk: 2, at: 11s, mode: sticky}
operator: {policy: none}
`,
}

const timeScale = 0.25

// A moment is when a cut comes: after the event named, or the file of the
// results directory named (neither: right after the process starts), and
// a random delay of up to spread.
type moment struct {
	name     string
	scenario string // key of scenarios; "" is static
	kind     string // event kind to wait for
	fault    string // for fault.inject: which fault
	file     string // results file to wait for
	spread   time.Duration
}

var moments = []moment{
	{name: "startup", spread: 400 * time.Millisecond},
	{name: "warmup", kind: "phase.start", spread: 2 * time.Second},
	{name: "app-hang", kind: "fault.inject", fault: "app-hang", spread: 1200 * time.Millisecond},
	{name: "node-freeze", kind: "fault.inject", fault: "node-freeze", spread: 1200 * time.Millisecond},
	{name: "app-crash", kind: "fault.inject", fault: "app-crash", spread: 1500 * time.Millisecond},
	{name: "closing", kind: record.EventRunEnd, spread: 100 * time.Millisecond},
	{name: "report", file: record.SummaryFile, spread: 200 * time.Millisecond},
	{name: "link-down", scenario: "press", kind: "fault.inject", fault: "link-down", spread: 1500 * time.Millisecond},
	{name: "partition", scenario: "press", kind: "fault.inject", fault: "partition", spread: 1500 * time.Millisecond},
	{name: "mem-alloc-fail", scenario: "press", kind: "fault.inject", fault: "mem-alloc-fail", spread: 1200 * time.Millisecond},
	{name: "disk-hang-read", scenario: "raid", kind: "fault.inject", fault: "disk-hang-read", spread: 2 * time.Second},
}

// scenarioOf is the scenario a cut at m interrupts.
func (m moment) scenarioOf() string {
	if m.scenario == "" {
		return "static"
	}
	return m.scenario
}

type cut struct {
	seed   int64
	moment moment
	sig    syscall.Signal
}

func (c cut) String() string {
	return fmt.Sprintf("seed%d-%s-%s", c.seed, c.moment.name, sigName(c.sig))
}

func sigName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "KILL"
	case syscall.SIGTERM:
		return "TERM"
	case syscall.SIGHUP:
		return "HUP"
	}
	return "INT"
}

// signals are the cuts: the three that must stop a run like Ctrl-C, and
// SIGKILL, which nothing can catch.
var signals = []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGKILL}

func momentNamed(name string) moment {
	for _, m := range moments {
		if m.name == name {
			return m
		}
	}
	panic(name)
}

func TestTorture(t *testing.T) {
	if testing.Short() {
		t.Skip("the torture test runs faultbench several times (~10 s each); skipped with -short")
	}
	if _, err := os.Stat("/proc/self/exe"); err != nil {
		t.Skip("needs /proc to find the run's processes")
	}
	bin := buildBinary(t)
	cuts := []cut{
		{1, momentNamed("app-hang"), syscall.SIGKILL},
		{2, momentNamed("node-freeze"), syscall.SIGINT},
		{3, momentNamed("startup"), syscall.SIGKILL},
		{4, momentNamed("closing"), syscall.SIGKILL},
		{5, momentNamed("report"), syscall.SIGINT},
		{6, momentNamed("app-crash"), syscall.SIGHUP},
		{7, momentNamed("warmup"), syscall.SIGTERM},
		{8, momentNamed("link-down"), syscall.SIGKILL},
		{9, momentNamed("disk-hang-read"), syscall.SIGINT},
	}
	if n, _ := strconv.Atoi(os.Getenv("FAULTBENCH_TORTURE")); n > 0 {
		cuts = cuts[:0]
		for seed := int64(1); seed <= int64(n); seed++ {
			rng := rand.New(rand.NewSource(seed))
			cuts = append(cuts, cut{seed, moments[rng.Intn(len(moments))], signals[rng.Intn(len(signals))]})
		}
	}
	for _, c := range cuts {
		t.Run(c.String(), func(t *testing.T) { torture(t, bin, c) })
	}
}

// TestMain removes the faultbench binary a test built (48 MB) from /tmp.
func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// buildBinary builds cmd/faultbench once into a temporary directory; the
// run's processes are found by that unique executable path.
func buildBinary(t *testing.T) string {
	buildOnce.Do(func() {
		gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(gobin); err != nil {
			if gobin, err = exec.LookPath("go"); err != nil {
				buildErr = errors.New("no go command to build faultbench with")
				return
			}
		}
		dir, err := os.MkdirTemp("", "faultbench-torture-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "faultbench")
		out, err := exec.Command(gobin, "build", "-o", builtBin, "github.com/faultbench/faultbench/cmd/faultbench").CombinedOutput()
		if err != nil {
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

func torture(t *testing.T, bin string, c cut) {
	work := t.TempDir()
	scPath := filepath.Join(work, "torture.yaml")
	if err := os.WriteFile(scPath, []byte(scenarios[c.moment.scenarioOf()]), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(work, "run")
	cmd := exec.Command(bin, "run", scPath, "--time-scale", strconv.FormatFloat(timeScale, 'g', -1, 64), "--seed", strconv.FormatInt(c.seed, 10), "-o", dir, "--quiet")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	rng := rand.New(rand.NewSource(c.seed))
	delay := time.Duration(rng.Int63n(int64(c.moment.spread)))
	// The run clock starts with the first phase.start event; seen within a
	// poll of it, so the cut's run time below is, if anything, early.
	var startSeen atomic.Int64
	stopWatch := make(chan struct{})
	go func() {
		for !hasEvent(dir, "phase.start", "") {
			select {
			case <-stopWatch:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		startSeen.Store(time.Now().UnixNano())
	}()
	defer close(stopWatch)
	cutS := math.NaN()
	noDirYet := false // the run had made no results directory when the signal went

	// Wait for the moment (bounded: each run itself ends in about 12 s).
	if c.moment.kind != "" || c.moment.file != "" {
		came := func() bool {
			if c.moment.file != "" {
				_, err := os.Stat(filepath.Join(dir, c.moment.file))
				return err == nil
			}
			return hasEvent(dir, c.moment.kind, c.moment.fault)
		}
		if !waitFor(20*time.Second, exited, came) {
			killAndReap(cmd, exited)
			t.Fatalf("moment %s never came (or the run ended first); output:\n%s", c.moment.name, out.String())
		}
	}
	select {
	case err := <-exited:
		t.Logf("the run ended before the cut (%v): checking a whole run", err)
		exited <- err
	case <-time.After(delay):
		_, statErr := os.Stat(dir)
		noDirYet = statErr != nil
		_ = cmd.Process.Signal(c.sig)
		if t0 := startSeen.Load(); t0 != 0 {
			cutS = float64(time.Now().UnixNano()-t0) / 1e9
		}
	}
	var waitErr error
	select {
	case waitErr = <-exited:
	case <-time.After(60 * time.Second):
		killAndReap(cmd, exited)
		t.Fatalf("faultbench did not exit within 60 s of %v; output:\n%s", c.sig, out.String())
	}
	t.Logf("cut %s %v after %s; faultbench said:\n%s", c.moment.name, delay, sigName(c.sig), out.String())

	// A caught signal ends the run through its own shutdown: exit status
	// 0, 1 (interrupted) or 3, never death by the signal.
	var ee *exec.ExitError
	if c.sig != syscall.SIGKILL && errors.As(waitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Errorf("faultbench died of %v instead of stopping the run", ws.Signal())
		}
	}

	checkNoProcessLeft(t, bin)
	if _, err := os.Stat(dir); err != nil && noDirYet && c.sig == syscall.SIGKILL {
		// Killed before it had recorded anything (a slow start on a busy
		// machine): there is nothing to keep, and nothing was left behind.
		t.Logf("killed before the run made %s: nothing to keep", dir)
		return
	}
	checkRecord(t, bin, dir, c, cutS)
}

// waitFor polls cond every 20 ms until it holds (true), the process exits
// or limit passes (false).
func waitFor(limit time.Duration, exited chan error, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		select {
		case err := <-exited:
			exited <- err
			return cond()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return false
}

func killAndReap(cmd *exec.Cmd, exited chan error) {
	_ = cmd.Process.Kill()
	<-exited
}

func hasEvent(dir, kind, fault string) bool {
	events, err := record.ReadEvents(filepath.Join(dir, record.EventsFile))
	if err != nil {
		return false
	}
	for _, e := range events {
		if e.Kind == kind && (fault == "" || e.Fault == fault) {
			return true
		}
	}
	return false
}

// runProcesses lists the live processes running bin, with their state.
func runProcesses(bin string) map[int]string {
	out := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || strings.TrimSuffix(exe, " (deleted)") != bin {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The state follows the command name, which is in parentheses.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) == 0 || fields[0] == "Z" || fields[0] == "X" {
			continue // dead, waiting to be reaped: not running, not stopped
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out[pid] = fields[0] + " " + strings.ReplaceAll(string(cmdline), "\x00", " ")
	}
	return out
}

// checkNoProcessLeft waits (bounded) for the run's processes to go: after
// a SIGKILL the reaper needs a moment to notice and kill the nodes.
func checkNoProcessLeft(t *testing.T, bin string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		left := runProcesses(bin)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL) // don't leave them to the next test
			}
			t.Fatalf("processes of the run left 15 s after faultbench exited (state, command): %v", left)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, with a deadline
	}
}

type summary struct {
	Complete         bool   `json:"complete"`
	IncompleteReason string `json:"incomplete_reason"`
	Run              struct {
		Attempts int64 `json:"attempts"`
	} `json:"run"`
}

// checkRecord checks what the cut left; cutS is when, on the run clock, the
// signal was sent (NaN when the run had not started its clock).
func checkRecord(t *testing.T, bin, dir string, c cut, cutS float64) {
	t.Helper()
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("no results directory after the cut: %v", err)
	}
	events, err := record.ReadEvents(filepath.Join(dir, record.EventsFile))
	if err != nil {
		t.Fatalf("events.jsonl unreadable after the cut: %v", err)
	}
	var ended bool
	interruptedS := math.NaN()
	for _, e := range events {
		switch e.Kind {
		case record.EventRunEnd:
			ended = true
		case record.EventRunInterrupted:
			interruptedS = e.TS
		}
	}

	an := exec.Command(bin, "analyze", dir, "--json")
	raw, err := an.Output()
	if err != nil {
		t.Fatalf("analyze of the cut run: %v\n%s", err, stderrOf(err))
	}
	var sum summary
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatalf("analyze --json printed no summary: %v\n%s", err, raw)
	}
	t.Logf("analyze: complete=%v (%s), %d attempts", sum.Complete, sum.IncompleteReason, sum.Run.Attempts)
	if !ended || !math.IsNaN(interruptedS) {
		if sum.Complete || sum.IncompleteReason == "" {
			t.Errorf("the run was cut before it ended, but the summary says complete=%v, reason %q", sum.Complete, sum.IncompleteReason)
		}
	}

	csv, err := exec.Command(bin, "export", dir, "--csv").Output()
	if err != nil {
		t.Fatalf("export --csv of the cut run: %v\n%s", err, stderrOf(err))
	}
	if rows := int64(bytes.Count(csv, []byte("\n"))) - 1; rows != sum.Run.Attempts {
		t.Errorf("export --csv wrote %d rows, analyze counted %d attempts", rows, sum.Run.Attempts)
	}
	if n := independentRowCount(t, dir); n != sum.Run.Attempts {
		t.Errorf("an independent Parquet reader finds %d rows, analyze counted %d attempts", n, sum.Run.Attempts)
	}
	if out, err := exec.Command(bin, "report", dir, "-o", filepath.Join(dir, "torture-report.html")).CombinedOutput(); err != nil {
		t.Fatalf("report of the cut run: %v\n%s", err, out)
	}

	sc, err := scenario.Load(filepath.Join(dir, record.ScenarioFile))
	if err != nil {
		t.Fatalf("scenario.yaml of the cut run: %v", err)
	}
	if !sum.Complete {
		checkPrefix(t, dir, sc, c, cutS)
	}
	switch {
	case sum.Complete:
		// Cut after the run ended and its record was closed: every
		// scheduled arrival must be there.
		planned := plannedArrivals(t, sc, sc.Length().Seconds())
		if sum.Run.Attempts != int64(planned) {
			t.Errorf("a complete record holds %d attempts, the schedule %d arrivals", sum.Run.Attempts, planned)
		}
	case c.sig != syscall.SIGKILL && !math.IsNaN(interruptedS):
		t.Run("attempts=arrivals", func(t *testing.T) {
			if files, _ := record.RequestFiles(dir); len(files) > 0 && !hasColumn(t, dir, "cut_short") {
				t.Fatal("the record has no cut_short column: attempts still in flight at the interrupt cannot have been recorded")
			}
			planned := plannedArrivals(t, sc, interruptedS)
			// An arrival due within a scheduler tick of the cut may fall
			// either side of it: allow one per client.
			if d := sum.Run.Attempts - int64(planned); d < -int64(sc.Workload.Clients) || d > int64(sc.Workload.Clients) {
				t.Errorf("after SIG%s at %.3f s: %d attempts recorded, %d arrivals scheduled up to the cut", sigName(c.sig), interruptedS, sum.Run.Attempts, planned)
			}
		})
	}
}

// checkPrefix checks that a cut run lost only its last seconds: every
// arrival scheduled well before the last recorded one is in the record (no
// gap), and, after SIGKILL, the last recorded one is no further before the
// cut than a segment, an attempt's longest life and some slack allow.
func checkPrefix(t *testing.T, dir string, sc *scenario.Scenario, c cut, cutS float64) {
	t.Helper()
	var starts []float64
	if err := record.ReadRequests(dir, func(r record.Request) error { starts = append(starts, r.StartS); return nil }); err != nil {
		t.Fatal(err)
	}
	horizon := sc.Workload.ConnectTimeout.Seconds() + sc.Workload.ResponseTimeout.Seconds()
	segment := record.DefaultSegmentEvery.Seconds()
	const slack = 1.5 // a loaded 2-core machine delays tickers and shutdown
	lastS := 0.0
	for _, s := range starts {
		lastS = max(lastS, s)
	}
	if c.sig == syscall.SIGKILL && !math.IsNaN(cutS) {
		if lost := min(cutS, sc.Length().Seconds()) - lastS; lost > segment+horizon+slack {
			t.Errorf("SIGKILL at %.2f s: the record ends at %.2f s, %.2f s lost (bound %.2f s)", cutS, lastS, lost, segment+horizon+slack)
		}
	}
	prefix := lastS - horizon - segment - 0.5
	t.Logf("record ends at %.2f s, cut at %.2f s (run clock)", lastS, cutS)
	if prefix <= 0 {
		return
	}
	n := 0
	for _, s := range starts {
		if s < prefix {
			n++
		}
	}
	if planned := plannedArrivals(t, sc, prefix); n != planned {
		t.Errorf("cut run: %d attempts scheduled before %.2f s recorded, %d planned: a gap well before the cut", n, prefix, planned)
	}
	t.Logf("every one of the %d arrivals before %.2f s recorded", n, prefix)
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

func hasColumn(t *testing.T, dir, name string) bool {
	files, err := record.RequestFiles(dir)
	if err != nil || len(files) == 0 {
		return false
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, _ := f.Stat()
	pf, err := parquet.OpenFile(f, info.Size())
	if err != nil {
		t.Fatal(err)
	}
	_, ok := pf.Schema().Lookup(name)
	return ok
}

// plannedArrivals counts the arrivals the scenario's (already scaled)
// workload schedules before endS seconds; the targets only need to exist.
func plannedArrivals(t *testing.T, sc *scenario.Scenario, endS float64) int {
	t.Helper()
	w := sc.Workload
	cfg := workload.Config{
		Driver: w.Driver, Rate: w.Rate, Arrivals: w.Arrivals, Clients: w.Clients,
		ConnectTimeout: w.ConnectTimeout.Duration, ResponseTimeout: w.ResponseTimeout.Duration,
		Trace: w.Trace, MaxInFlight: w.MaxInFlight, Seed: sc.Seed, Users: w.Users, Flow: w.Flow, BaseDir: sc.Dir(),
	}
	for i := 1; i <= sc.Cluster.Nodes; i++ {
		cfg.Targets = append(cfg.Targets, workload.Target{Node: i, Addr: fmt.Sprintf("127.0.0.%d:80", 10+i)})
	}
	n, err := workload.PlannedArrivals(cfg, time.Duration(endS*float64(time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
