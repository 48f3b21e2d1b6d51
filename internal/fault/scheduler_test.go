package fault

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
)

// fakeCluster records lever calls and tracks what a real cluster would be.
type fakeCluster struct {
	n     int
	calls []string
}

func (f *fakeCluster) Size() int { return f.n }
func (f *fakeCluster) call(s string, node int) error {
	f.calls = append(f.calls, fmt.Sprintf("%s %d", s, node))
	return nil
}
func (f *fakeCluster) KillApp(n int) error    { return f.call("kill", n) }
func (f *fakeCluster) StartApp(n int) error   { return f.call("start", n) }
func (f *fakeCluster) RestartApp(n int) error { return f.call("restart", n) }
func (f *fakeCluster) Pause(n int) error      { return f.call("pause", n) }
func (f *fakeCluster) Resume(n int) error     { return f.call("resume", n) }
func (f *fakeCluster) HostDown(n int, graceful bool) error {
	return f.call(fmt.Sprint("down graceful=", graceful), n)
}

type simClock struct{ now time.Duration }

func (c *simClock) Now() time.Duration { return c.now }

// log renders events compactly: "t kind fault node id detail".
type log struct{ lines []string }

func (l *log) emit(e record.Event) {
	l.lines = append(l.lines, fmt.Sprintf("%g %s %s %d #%d %s", e.TS, e.Kind, e.Fault, e.Node, e.ID, e.Detail))
}

// drive steps the scheduler through simulated time until nothing is due.
func drive(t *testing.T, s *Scheduler, clock *simClock) {
	t.Helper()
	next, ok := s.Step(context.Background(), clock.now)
	for i := 0; ok; i++ {
		if i > 1000 {
			t.Fatal("schedule does not end")
		}
		clock.now = next
		next, ok = s.Step(context.Background(), clock.now)
	}
}

func newTestScheduler(t *testing.T, faults []scenario.Fault, run time.Duration) (*Scheduler, *fakeCluster, *simClock, *log) {
	t.Helper()
	occ, err := Expand(faults, Plan{RunLength: run, Nodes: 3, Boot: 4 * time.Second}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	fc, clock, l := &fakeCluster{n: 3}, &simClock{}, &log{}
	s, err := NewScheduler(occ, fc, SchedulerConfig{Clock: clock, Emit: l.emit})
	if err != nil {
		t.Fatal(err)
	}
	return s, fc, clock, l
}

func TestSchedulerTransientAndRecurring(t *testing.T) {
	s, fc, _, l := newTestScheduler(t, []scenario.Fault{
		{Type: "app-hang", Node: scenario.NodeRef{N: 1}, At: sec(10), Duration: sec(30)},
		{Type: "app-crash", Node: scenario.NodeRef{N: 2}, At: sec(20), Duration: sec(5), Every: "fixed(10s)"},
		{Type: "node-crash", Node: scenario.NodeRef{N: 3}, At: sec(15)},
		{Type: "restart-node", Node: scenario.NodeRef{N: 1}, At: sec(50)},
	}, 60*time.Second)
	drive(t, s, &simClock{})
	wantCalls := []string{"pause 1", "down graceful=false 3", "start 3", "kill 2", "start 2", "kill 2",
		"resume 1", "start 2", "kill 2", "restart 1", "start 2"}
	if !reflect.DeepEqual(fc.calls, wantCalls) {
		t.Errorf("calls\n got %v\nwant %v", fc.calls, wantCalls)
	}
	want := []string{
		"10 fault.inject app-hang 1 #1 for 30s",
		"15 fault.inject node-crash 3 #2 for 4s",
		"19 fault.clear node-crash 3 #2 duration over",
		"20 fault.inject app-crash 2 #3 for 5s",
		"25 fault.clear app-crash 2 #3 duration over",
		"35 fault.inject app-crash 2 #4 for 5s",
		"40 fault.clear app-hang 1 #1 duration over",
		"40 fault.clear app-crash 2 #4 duration over",
		"50 fault.inject app-crash 2 #5 for 5s", // same time: scenario order
		"50 fault.inject restart-node 1 #6 maintenance event",
		"55 fault.clear app-crash 2 #5 duration over",
	}
	if !reflect.DeepEqual(l.lines, want) {
		t.Errorf("events\n got %s\nwant %s", strings.Join(l.lines, "\n     "), strings.Join(want, "\n     "))
	}
}

// recorder is an Observer.
type recorder struct{ seen []string }

func (r *recorder) Injected(now time.Duration, o Occurrence) {
	r.seen = append(r.seen, fmt.Sprintf("inject #%d@%v", o.ID, now))
}
func (r *recorder) Cleared(now time.Duration, o Occurrence) {
	r.seen = append(r.seen, fmt.Sprintf("clear #%d@%v", o.ID, now))
}

func TestSchedulerSkipRepairRevertAll(t *testing.T) {
	s, fc, clock, l := newTestScheduler(t, []scenario.Fault{
		{Type: "app-hang", Node: scenario.NodeRef{N: 1}, At: sec(1), Mode: "sticky"},
		{Type: "app-hang", Node: scenario.NodeRef{N: 1}, At: sec(2), Duration: sec(1)}, // skipped: already hung
		{Type: "app-crash", Node: scenario.NodeRef{N: 2}, At: sec(3), Mode: "sticky"},
		{Type: "node-freeze", Node: scenario.NodeRef{N: 3}, At: sec(4), Mode: "sticky"},
	}, 10*time.Second)
	obs := &recorder{}
	s.SetObserver(obs)
	drive(t, s, clock)
	if got := len(s.Active()); got != 3 {
		t.Fatalf("%d active, want 3", got)
	}
	clock.now = 5 * time.Second
	if got := s.Repaired(clock.now, []int{3}, "restart-failed"); len(got) != 1 || got[0].Type != "node-freeze" {
		t.Fatalf("repaired %v", got)
	}
	fc.calls = nil
	clock.now = 6 * time.Second
	if err := s.RevertAll(); err != nil {
		t.Fatal(err)
	}
	if err := s.RevertAll(); err != nil {
		t.Fatal(err)
	}
	// The hang is continued; the crashed application is left down.
	if !reflect.DeepEqual(fc.calls, []string{"resume 1"}) {
		t.Errorf("RevertAll calls %v", fc.calls)
	}
	want := []string{
		"1 fault.inject app-hang 1 #1 until repaired",
		"2 fault.skip app-hang 1 #2 still in effect as fault 1",
		"3 fault.inject app-crash 2 #3 until repaired",
		"4 fault.inject node-freeze 3 #4 until repaired",
		"5 fault.clear node-freeze 3 #4 repaired by restart-failed",
		"6 fault.clear app-hang 1 #1 reverted at end of run",
		"6 fault.clear app-crash 2 #3 run ended; left as it is",
	}
	if !reflect.DeepEqual(l.lines, want) {
		t.Errorf("events\n got %s\nwant %s", strings.Join(l.lines, "\n     "), strings.Join(want, "\n     "))
	}
	wantSeen := []string{"inject #1@1s", "inject #3@3s", "inject #4@4s", "clear #4@5s", "clear #1@6s", "clear #3@6s"}
	if !reflect.DeepEqual(obs.seen, wantSeen) {
		t.Errorf("observer saw %v", obs.seen)
	}
	if _, ok := s.Step(context.Background(), time.Hour); ok {
		t.Error("schedule goes on after RevertAll")
	}
}

func TestSchedulerRunRealTime(t *testing.T) {
	start := time.Now()
	fc, l := &fakeCluster{n: 1}, &log{}
	occ := []Occurrence{{ID: 1, Type: "app-hang", Node: 1, At: 20 * time.Millisecond, Duration: 30 * time.Millisecond}}
	s, err := NewScheduler(occ, fc, SchedulerConfig{Clock: clockFunc(func() time.Duration { return time.Since(start) }), Emit: l.emit})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fc.calls, []string{"pause 1", "resume 1"}) {
		t.Fatalf("calls %v", fc.calls)
	}
}

type clockFunc func() time.Duration

func (f clockFunc) Now() time.Duration { return f() }

// failingCluster refuses to kill anything.
type failingCluster struct{ fakeCluster }

func (f *failingCluster) KillApp(n int) error { return fmt.Errorf("no such process") }

func TestSchedulerInjectFailure(t *testing.T) {
	fc, l := &failingCluster{fakeCluster{n: 2}}, &log{}
	occ := []Occurrence{{ID: 1, Type: "app-crash", Node: 2, At: time.Second}}
	s, err := NewScheduler(occ, fc, SchedulerConfig{Clock: &simClock{}, Emit: l.emit})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Step(context.Background(), time.Second); ok {
		t.Fatal("a failed fault left something scheduled")
	}
	want := []string{
		"1 fault.inject app-crash 2 #1 until repaired",
		"1 fault.error app-crash 2 #1 inject app-crash on node 2: no such process",
	}
	if !reflect.DeepEqual(l.lines, want) {
		t.Errorf("events %q", l.lines)
	}
	if s.Err() == nil || len(s.Active()) != 0 {
		t.Errorf("Err %v, active %v", s.Err(), s.Active())
	}
}

// A restart nobody in the run made (a container engine's restart policy)
// ends the faults that only ended the application, and only those: a hang
// on the same node stays until its own clear.
func TestSchedulerHealedClearsOnlyWhatTheRestartHealed(t *testing.T) {
	s, fc, clock, l := newTestScheduler(t, []scenario.Fault{
		{Type: "app-crash", Node: scenario.NodeRef{N: 2}, At: sec(1), Duration: sec(30)},
		{Type: "app-hang", Node: scenario.NodeRef{N: 2}, At: sec(2), Duration: sec(3)},
		{Type: "app-crash", Node: scenario.NodeRef{N: 3}, At: sec(3), Mode: "sticky"},
	}, 40*time.Second)
	obs := &recorder{}
	s.SetObserver(obs)
	next, _ := s.Step(context.Background(), sec(1).Duration)
	clock.now = next
	next, _ = s.Step(context.Background(), clock.now)
	clock.now = next
	s.Step(context.Background(), clock.now)
	clock.now = 3500 * time.Millisecond
	got := s.Healed(clock.now, 2, "the engine (restart policy always)")
	if len(got) != 1 || got[0].ID != 1 {
		t.Fatalf("healed %v, want the app-crash #1 alone", got)
	}
	fc.calls = nil
	drive(t, s, clock)
	// The healed crash's scheduled clear (at 31 s) is dropped: no start.
	if !reflect.DeepEqual(fc.calls, []string{"resume 2"}) {
		t.Errorf("calls after the engine's restart: %v", fc.calls)
	}
	want := []string{
		"1 fault.inject app-crash 2 #1 for 30s",
		"2 fault.inject app-hang 2 #2 for 3s",
		"3 fault.inject app-crash 3 #3 until repaired",
		"3.5 fault.clear app-crash 2 #1 repaired by the engine (restart policy always)",
		"5 fault.clear app-hang 2 #2 duration over",
	}
	if !reflect.DeepEqual(l.lines, want) {
		t.Errorf("events\n got %s\nwant %s", strings.Join(l.lines, "\n     "), strings.Join(want, "\n     "))
	}
	if len(s.Active()) != 1 || s.Active()[0].ID != 3 {
		t.Errorf("active %v, want node 3's crash", s.Active())
	}
}

// A fault of the same type on another disk (or link) of the same node is a
// fault of its own; only the same component is "still in effect".
func TestSameTarget(t *testing.T) {
	d2, d5, d2b := 2, 5, 2
	base := Occurrence{Type: "disk-power-fail", Node: 1, Disk: &d2}
	for _, c := range []struct {
		other Occurrence
		want  bool
	}{
		{Occurrence{Node: 1, Disk: &d2b}, true},
		{Occurrence{Node: 1, Disk: &d5}, false},
		{Occurrence{Node: 1}, false},
		{Occurrence{Node: 2, Disk: &d2b}, false},
	} {
		if got := base.sameTarget(c.other); got != c.want {
			t.Errorf("disk 2 of node 1 vs node %d disk %v: same = %v, want %v", c.other.Node, c.other.Disk, got, c.want)
		}
	}
	a, b := Occurrence{Node: 0, Link: []int{1, 2}}, Occurrence{Node: 0, Link: []int{1, 3}}
	if a.sameTarget(b) || !a.sameTarget(a) || !(Occurrence{Node: 1}).sameTarget(Occurrence{Node: 1}) {
		t.Error("links: [1 2] vs [1 3] must differ, and an occurrence is its own target")
	}
}
