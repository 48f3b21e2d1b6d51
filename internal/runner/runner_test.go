package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/testbed"
	"github.com/faultbench/faultbench/internal/testbed/fake"
)

// The fake backend and a system with a logging rig, registered once for
// this package's tests. Each test resets the shared log.
var (
	fakeLog     = &fake.Log{}
	fakeBackend = &fake.Backend{Log: fakeLog}
	// bareBackend offers no lever at all.
	bareBackend = &fake.Backend{Offered: []string{}, Log: fakeLog}
)

func init() {
	testbed.RegisterBackend("fake", fakeBackend)
	testbed.RegisterBackend("fake-bare", bareBackend)
	testbed.RegisterSystem(fake.System("fake-rig", fakeLog))
}

func parse(t *testing.T, y string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Parse([]byte(y), "runner.yaml")
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, y)
	}
	return sc
}

// A whole run on the fake backend, without a process: the fault reaches
// the backend's levers through the rig's wrapper, the operator-free clear
// restarts the application, teardown stops the cluster once and then
// closes the rig once, and every event carries the run's id.
func TestRunOnFakeBackend(t *testing.T) {
	*fakeLog = fake.Log{}
	sc := parse(t, `name: fake-run
seed: 3
cluster: {system: fake-rig, backend: fake, nodes: 2}
workload: {driver: "null", rate: 50, window: 200ms, trace: "zipf:10:1.0"}
phases: [{name: warmup, duration: 300ms}, {name: fault, duration: 700ms}]
faults: [{type: app-crash, node: 2, at: 350ms, duration: 50ms}]
`)
	dir := t.TempDir()
	res, err := Run(context.Background(), Options{Scenario: sc, OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RunID) != 12 {
		t.Errorf("run id %q: want 12 hex digits", res.RunID)
	}
	want := []string{"prepare", "start", "kill 2", "start 2", "stop", "rig.close"}
	if got := fakeLog.Entries(); !slices.Equal(got, want) {
		t.Errorf("cluster log %q, want %q", got, want)
	}
	events := readEvents(t, filepath.Join(dir, record.EventsFile))
	kinds := map[string]int{}
	for _, e := range events {
		kinds[e.Kind]++
		if e.RunID != res.RunID {
			t.Errorf("event %s carries run_id %q, want %q", e.Kind, e.RunID, res.RunID)
		}
	}
	if events[0].Kind != "run.start" || !strings.Contains(events[0].Detail, res.RunID) {
		t.Errorf("first event %+v: want run.start naming the run id", events[0])
	}
	for _, k := range []string{"node.up", "phase.start", "fault.inject", "fault.clear", "run.end"} {
		if kinds[k] == 0 {
			t.Errorf("no %s event in %v", k, kinds)
		}
	}
	if res.Summary == nil || res.Summary.Overall.Attempts == 0 {
		t.Error("the run recorded no attempt")
	}
}

// A cluster that does not start leaves nothing behind: the rig prepared
// for it is closed once, and the error is ErrStart.
func TestStartFailureClosesRigOnce(t *testing.T) {
	*fakeLog = fake.Log{}
	fakeBackend.StartErr = fake.ErrStartFailed
	defer func() { fakeBackend.StartErr = nil }()
	sc := parse(t, `cluster: {system: fake-rig, backend: fake, nodes: 1}
workload: {driver: "null", rate: 10, trace: "zipf:10:1.0"}
phases: [{name: warmup, duration: 1s}]
`)
	_, err := Run(context.Background(), Options{Scenario: sc, OutDir: t.TempDir()})
	if !errors.Is(err, ErrStart) || !strings.Contains(err.Error(), fake.ErrStartFailed.Error()) {
		t.Errorf("error %v: want ErrStart naming the backend's failure", err)
	}
	if got, want := fakeLog.Entries(), []string{"prepare", "start", "rig.close"}; !slices.Equal(got, want) {
		t.Errorf("log %q, want %q", got, want)
	}
}

// A fault whose levers neither the backend nor the system offers stops
// the run before anything starts, naming the fault, the lever, the
// backend and the system.
func TestRunRefusesFaultWithoutLevers(t *testing.T) {
	*fakeLog = fake.Log{}
	sc := parse(t, `cluster: {system: static, backend: fake-bare, nodes: 2}
workload: {driver: "null", rate: 10, trace: "zipf:10:1.0"}
phases: [{name: warmup, duration: 1s}]
faults: [{type: node-crash, node: 1, at: 100ms}]
`)
	_, err := Run(context.Background(), Options{Scenario: sc, OutDir: t.TempDir()})
	var fe *fault.FieldError
	if !errors.As(err, &fe) || fe.Index != 0 || fe.Key != "type" {
		t.Fatalf("error %v: want a FieldError on faults[0].type", err)
	}
	for _, want := range []string{"node-crash", "host and app lever", "backend fake-bare (offers none)", "system static (offers none)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if got := fakeLog.Entries(); len(got) != 0 {
		t.Errorf("something started: %q", got)
	}
}

func readEvents(t *testing.T, path string) []record.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []record.Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e record.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		t.Fatal("no events")
	}
	return out
}

// After an early return (here: prepare done, nothing driven) teardown does
// every step once, in order — nodes and rig, then recorder, event log and
// kv history — however often it is called; and after teardown the steps
// report done, so a later finish-like call cannot close anything twice.
func TestTeardownOwnsEachStepOnce(t *testing.T) {
	*fakeLog = fake.Log{}
	sc := parse(t, `cluster: {system: fake-rig, backend: fake, nodes: 2}
workload: {driver: "null", rate: 10, trace: "zipf:10:1.0"}
phases: [{name: warmup, duration: 1s}]
`)
	dir := t.TempDir()
	r := &run{opt: Options{Scenario: sc, OutDir: dir}, sc: sc}
	if err := r.prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.teardown()
	r.teardown()
	if err := r.stopNodes(); err != nil {
		t.Fatal(err)
	}
	if got, want := fakeLog.Entries(), []string{"prepare", "start", "stop", "rig.close"}; !slices.Equal(got, want) {
		t.Errorf("log %q, want %q", got, want)
	}
	for name, s := range map[string]step{"nodes": r.nodesDown, "record": r.recordClosed, "events": r.eventsClosed, "kv": r.kvClosed} {
		if !s.done {
			t.Errorf("teardown left step %s undone", name)
		}
	}
	if events := readEvents(t, filepath.Join(dir, record.EventsFile)); len(events) == 0 || events[0].Kind != "run.start" {
		t.Errorf("event log after teardown: %+v", events)
	}
}
