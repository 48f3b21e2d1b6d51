package docker

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/testbed"
	"github.com/faultbench/faultbench/internal/warden"
)

// events collects a cluster's events, safe for concurrent use.
type events struct {
	mu  sync.Mutex
	all []record.Event
}

func (e *events) emit(ev record.Event) { e.mu.Lock(); e.all = append(e.all, ev); e.mu.Unlock() }

// find returns the events whose "kind detail" contains every part.
func (e *events) find(parts ...string) []record.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []record.Event
	for _, ev := range e.all {
		line := ev.Kind + " " + ev.Detail
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
			out = append(out, ev)
		}
	}
	return out
}

// within polls cond until it holds, bounded by 5 s.
func within(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not within 5s", what)
}

// restartLog is a RestartObserver and an ExitObserver.
type restartLog struct {
	mu    sync.Mutex
	lines []string
}

func (r *restartLog) add(s string) { r.mu.Lock(); r.lines = append(r.lines, s); r.mu.Unlock() }
func (r *restartLog) Restarted(node int, who string) {
	r.add(fmt.Sprintf("restarted %d by %s", node, who))
}
func (r *restartLog) Exited(node int, cause string) { r.add(fmt.Sprintf("exited %d: %s", node, cause)) }
func (r *restartLog) Ready(int)                     {}
func (r *restartLog) has(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.lines, func(l string) bool { return strings.Contains(l, s) })
}

// attachShop attaches to the fake shop's web replicas, published on a
// listener of this test so that they answer; its warden is real (root).
func attachShop(t *testing.T, f *fakeEngine, every time.Duration) (*Attached, *events, *restartLog) {
	t.Helper()
	needRoot(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	for _, name := range []string{"shop_web_1", "shop_web_2"} {
		byName(f, name).Published = map[int][]netip.AddrPort{8000: {netip.MustParseAddrPort(ln.Addr().String())}}
	}
	byName(f, "shop_web_2").RestartPolicy = "no"
	removerEngine = func(context.Context) (Engine, error) { return f, nil }
	var rules []string
	var rulesMu sync.Mutex
	removeRules = func(ns, run string) (bool, error) {
		rulesMu.Lock()
		rules = append(rules, ns)
		rulesMu.Unlock()
		return false, nil
	}
	hostKill = f.crashPid
	watchEvery = every
	t.Cleanup(func() {
		removerEngine, removeRules = Connect, removeRunRules
		hostKill = func(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
		watchEvery = 100 * time.Millisecond
	})
	b := fakeBackend(f)
	spec := testbed.Spec{System: ContainerSystem, Dir: t.TempDir(), RunID: fmt.Sprintf("%012x", time.Now().UnixNano()&0xffffffffffff),
		ReadyTimeout: 5 * time.Second, Executable: os.Args[0],
		Attach: &scenario.Attach{Project: "shop", Services: []string{"web"}, Target: "lb:80"}}
	plan, err := b.Plan(spec)
	if err != nil {
		t.Fatal(err)
	}
	ev := &events{}
	c, err := b.Start(context.Background(), spec, plan, ev.emit)
	if err != nil {
		t.Fatal(err)
	}
	a := c.(*Attached)
	log := &restartLog{}
	a.WatchRestarts(log)
	a.WatchExits(log)
	t.Cleanup(func() { _ = a.Stop() })
	return a, ev, log
}

// A crash under restart policy always is undone by the engine: the record
// says the engine did it; under policy no the container stays down until
// started. At the end every container is as the run found it, whatever
// the faults left, and none was removed.
func TestAnAttachedStackIsRepairedByItsEngineAndRestoredAtTheEnd(t *testing.T) {
	f := shop()
	a, ev, log := attachShop(t, f, time.Millisecond)
	web1, web2 := byName(f, "shop_web_1").ID, byName(f, "shop_web_2").ID
	if got := strings.Join(a.Entry(), ","); got != "127.0.0.1:18080" {
		t.Errorf("entry %s", got)
	}
	if up := ev.find("node.up", "attached: container shop_web_1"); len(up) != 1 || up[0].Node != 1 {
		t.Errorf("node.up at attach: %v", ev.all)
	}
	if len(ev.find("system.docker", "attached to compose project shop, clients to 127.0.0.1:18080", "restart policy always")) != 1 {
		t.Errorf("no system.docker event describing the stack: %v", ev.all)
	}
	tb := a.Describe()
	if tb.Backend != "docker" || len(tb.Nodes) != 2 || tb.Nodes[1].Container != "shop_web_2" || tb.Nodes[1].RestartPolicy != "no" || tb.Nodes[0].Image == "" {
		t.Errorf("describe %+v", tb)
	}

	// Node 1 (restart: always): the engine restarts it.
	if err := a.KillApp(1); err != nil {
		t.Fatal(err)
	}
	if len(ev.find("fault.effective", "mechanism host-kill", "shop_web_1", "restart policy always: the engine restarts it by itself")) != 1 {
		t.Errorf("kill event: %v", ev.all)
	}
	f.restartByPolicy(web1)
	within(t, "the engine's restart recorded", func() bool {
		return log.has("restarted 1 by the engine (restart policy always)") && len(ev.find("node.up", "restarted by the engine (restart policy always)")) == 1
	})
	if len(ev.find("system.docker.restart", "the engine restarted container shop_web_1", "restart count 1")) != 1 {
		t.Errorf("no system.docker.restart: %v", ev.all)
	}
	if log.has("exited 1") {
		t.Error("the run's own kill was taken for an unplanned exit")
	}
	// StartApp (a fault's revert, the operator) finds it running.
	if err := a.StartApp(1); err != nil {
		t.Fatal(err)
	}

	// Node 2 (restart: no) crashes on its own: an unplanned exit.
	f.crash(web2)
	within(t, "the exit seen", func() bool { return log.has("exited 2: container shop_web_2 exited with code 137") })
	// The user starts it again.
	if err := f.ContainerStart(context.Background(), web2); err != nil {
		t.Fatal(err)
	}
	within(t, "the start seen", func() bool { return len(ev.find("system.docker.start", "shop_web_2")) == 1 })
	within(t, "node 2 up", func() bool { return len(ev.find("node.up", "started outside the run")) == 1 })

	// Left paused, and killed with no restart policy, at the end.
	if err := a.Pause(1); err != nil {
		t.Fatal(err)
	}
	if err := a.KillApp(2); err != nil {
		t.Fatal(err)
	}
	if len(ev.find("fault.effective", "shop_web_2", "restart policy no: it stays down until started")) != 1 {
		t.Errorf("kill event under policy no: %v", ev.all)
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{web1, web2} {
		if st := f.state(id); !st.Running || st.Paused {
			t.Errorf("%s after Stop: %s running=%v paused=%v", st.Name, st.Status, st.Running, st.Paused)
		}
	}
	if len(f.containers) != 5 {
		t.Errorf("%d containers left of 5: an attached container was removed", len(f.containers))
	}
	if _, err := os.Stat(warden.Path(a.spec.RunID)); !os.IsNotExist(err) {
		t.Errorf("journal left after Stop: %v", err)
	}
	if err := a.KillApp(1); err != testbed.ErrStopped && !strings.Contains(fmt.Sprint(err), "stopped") {
		t.Errorf("KillApp after Stop: %v", err)
	}
}

// A mistake found at Start leaves nothing: no journal, no warden.
func TestAnAttachThatFailsLeavesNothing(t *testing.T) {
	needRoot(t)
	f := shop()
	removerEngine = func(context.Context) (Engine, error) { return f, nil }
	t.Cleanup(func() { removerEngine = Connect })
	b := fakeBackend(f)
	// Published on a loopback port nothing listens on (never a fake
	// address: this machine's default route may answer anything).
	for _, name := range []string{"shop_web_1", "shop_web_2"} {
		byName(f, name).Published = map[int][]netip.AddrPort{8000: {netip.MustParseAddrPort("127.0.0.1:1")}}
	}
	spec := testbed.Spec{System: ContainerSystem, Dir: t.TempDir(), RunID: fmt.Sprintf("%012x", time.Now().UnixNano()&0xffffffffffff),
		ReadyTimeout: 200 * time.Millisecond, Executable: os.Args[0],
		Attach: &scenario.Attach{Project: "shop", Services: []string{"web"}}}
	plan, err := b.Plan(spec)
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.Start(context.Background(), spec, plan, nil)
	if err == nil || c != nil {
		t.Fatalf("Start = %v, %v: want an error and no cluster", c, err)
	}
	if !strings.Contains(err.Error(), "container shop_web_1 does not answer at 127.0.0.1:1") {
		t.Errorf("err = %v", err)
	}
	if _, err := os.Stat(warden.Path(spec.RunID)); !os.IsNotExist(err) {
		t.Errorf("journal left: %v", err)
	}
	if len(f.containers) != 5 || !byName(f, "shop_web_1").Running {
		t.Error("a failed attach touched the containers")
	}
	// The stack changed between the plan and the start.
	byName(f, "shop_web_2").RestartPolicy = "no"
	f.crash(byName(f, "shop_web_2").ID)
	if _, err := b.Start(context.Background(), spec, plan, nil); err == nil || !strings.Contains(err.Error(), "shop_web_2 (service web) is exited") {
		t.Errorf("Start after a container stopped: %v", err)
	}
}

// The operator's repair (StartApp) that finds the engine restarting the
// container waits for it and records the restart as the engine's, before
// the watch loop has looked: the repair is not the operator's.
func TestARepairThatFindsTheEngineRestartingRecordsTheEngines(t *testing.T) {
	f := shop()
	a, ev, log := attachShop(t, f, time.Hour)
	web1 := byName(f, "shop_web_1").ID
	if err := a.KillApp(1); err != nil {
		t.Fatal(err)
	}
	if st := f.state(web1); st.Status != "restarting" {
		t.Fatalf("fake: %s after the kill, want restarting", st.Status)
	}
	go f.restartByPolicy(web1) // while StartApp waits, or before it looks
	if err := a.StartApp(1); err != nil {
		t.Fatal(err)
	}
	if !log.has("restarted 1 by the engine (restart policy always)") {
		t.Errorf("the engine's restart not told: %v", log.lines)
	}
	if len(ev.find("system.docker.restart", "shop_web_1")) != 1 || len(ev.find("fault.reverted", "docker-start", "shop_web_1")) != 0 {
		t.Errorf("events: %v", ev.all)
	}
}
