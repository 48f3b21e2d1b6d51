package workload

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/record"
)

// hangServer accepts connections and answers none of them until released;
// then it answers each with 200 ok, as a stopped node does once continued.
type hangServer struct {
	*server
	mu      sync.Mutex
	release chan struct{}
}

func newHangServer(t *testing.T) *hangServer {
	h := &hangServer{release: make(chan struct{})}
	rel := h.release
	h.server = newServer(t, func(c net.Conn) {
		<-rel
		respond(func(p string) string { return okReply(pageBody(p)) })(c)
	})
	t.Cleanup(h.free)
	return h
}

func (h *hangServer) free() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.release:
	default:
		close(h.release)
	}
}

// waitFor polls cond until it holds, failing the test after a bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// interruptedRun runs a generator over a healthy node 1 and a hung node 2,
// cancels its context once node 2 holds hung attempts, then calls after
// (which releases the hang or abandons the run) and returns the records,
// in schedule order per client, and the configuration.
func interruptedRun(t *testing.T, after func(g *Generator, hung *hangServer)) ([]record.Request, Config) {
	ok := newServer(t, respond(func(p string) string { return okReply(pageBody(p)) }))
	hung := newHangServer(t)
	cfg := Config{
		Rate: 400, Arrivals: "constant", Clients: 2, Trace: "zipf:20:1", Seed: 3, Verify: verifyPage,
		ConnectTimeout: time.Minute, ResponseTimeout: time.Minute, // nothing ends on its own
		Targets: []Target{{1, ok.addr()}, {2, hung.addr()}},
	}
	sink := &sliceSink{}
	g, err := New(context.Background(), cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx, time.Now(), time.Hour) }()
	waitFor(t, "hung attempts on node 2", func() bool { return hung.accepted.Load() >= 10 })
	cancel()
	after(g, hung)
	if err := <-done; err != context.Canceled {
		t.Fatalf("Run after cancel: %v, want context.Canceled", err)
	}
	return sink.sorted(), cfg
}

// checkEveryArrival checks that the records are exactly the schedule's
// arrivals up to the last one recorded: none missing, none twice.
func checkEveryArrival(t *testing.T, got []record.Request, cfg Config) {
	t.Helper()
	full := WithDefaults(cfg)
	i := 0
	for c := range cfg.Clients {
		var mine []record.Request
		for ; i < len(got) && got[i].Client == c; i++ {
			mine = append(mine, got[i])
		}
		if len(mine) == 0 {
			t.Fatalf("client %d recorded nothing", c)
		}
		want := walk(t, full, c, len(mine)+1)
		for k, r := range mine {
			if r.StartS != want[k].at.Seconds() || r.Node != cfg.Targets[want[k].target].Node {
				t.Fatalf("client %d record %d: %+v, want arrival at %v on node %d (a record is missing or doubled)",
					c, k, r, want[k].at.Seconds(), cfg.Targets[want[k].target].Node)
			}
		}
	}
}

// Interrupted mid-hang, with the hang then lifted (the runner reverts the
// fault first): every attempt in flight is awaited and gets its real
// outcome, and every arrival up to the cut is in the record, the hung
// node's included.
func TestInterruptAwaitsAttemptsInFlight(t *testing.T) {
	got, cfg := interruptedRun(t, func(_ *Generator, hung *hangServer) { hung.free() })
	checkEveryArrival(t, got, cfg)
	var node2OK int
	for _, r := range got {
		if r.Refused != record.NotRefused {
			t.Errorf("refused: %+v", r)
		}
		if r.Node == 2 && r.Outcome == record.OK && !r.CutShort {
			node2OK++
		}
		if !r.CutShort && r.Outcome != record.OK {
			t.Errorf("attempt %+v: want ok once the hang was lifted", r)
		}
	}
	if node2OK < 10 {
		t.Errorf("%d ok records for the hung node, want its >= 10 held attempts", node2OK)
	}
}

// Interrupted mid-hang and abandoned (a second interrupt): the attempts
// still waiting on the hung node are recorded as cut short, with the time
// they had waited, never as timeouts, and none is missing.
func TestAbandonRecordsAttemptsCutShort(t *testing.T) {
	got, cfg := interruptedRun(t, func(g *Generator, _ *hangServer) { g.Abandon(); g.Abandon() })
	checkEveryArrival(t, got, cfg)
	var cut int
	for _, r := range got {
		switch {
		case r.CutShort:
			cut++
			if r.Node == 2 && r.LatencyS <= 0 {
				t.Errorf("cut-short attempt without its waiting time: %+v", r)
			}
			if r.Measured() {
				t.Errorf("cut-short attempt counts as measured: %+v", r)
			}
		case r.Node == 2:
			t.Errorf("an attempt on the hung node finished: %+v", r)
		case r.Outcome != record.OK:
			t.Errorf("attempt on the healthy node: %+v", r)
		}
		if r.Outcome == record.Timeout {
			t.Errorf("timeout recorded: %+v", r)
		}
	}
	if cut < 10 {
		t.Errorf("%d attempts cut short, want the >= 10 held by the hung node", cut)
	}
}

// Send lag is measured to the moment the attempt got its connection: an
// attempt that waited for the only keep-alive connection reports the wait.
func TestSendLagCountsTheWaitForAConnection(t *testing.T) {
	gate := make(chan struct{})
	s := newServer(t, respond(func(p string) string {
		<-gate
		return okReply(pageBody(p))
	}))
	d := NewHTTPDriver(DriverConfig{ConnectTimeout: time.Minute, ResponseTimeout: time.Minute, Keepalive: true, MaxConns: 1})
	defer d.Close()
	first := make(chan Result)
	go func() { first <- do(t, d, s.addr(), "/p/1") }()
	waitFor(t, "the first attempt's connection", func() bool { return s.accepted.Load() == 1 })
	scheduled := time.Now()
	second := make(chan Result)
	go func() {
		second <- d.Do(context.Background(), Attempt{Scheduled: scheduled, Addr: s.addr(), Host: s.addr(), Target: "/p/2"})
	}()
	// Whatever happens before the gate opens, the second attempt cannot
	// have its connection before the first attempt's answer.
	released := time.Now()
	close(gate)
	r1, r2 := <-first, <-second
	if r1.Outcome != record.OK || r2.Outcome != record.OK {
		t.Fatalf("outcomes %v, %v; want ok, ok", r1.Outcome, r2.Outcome)
	}
	if r2.Sent.Before(released) || r2.Sent.After(r2.End) {
		t.Errorf("second attempt sent at %v, want between the release %v and its end %v", r2.Sent, released, r2.End)
	}
}

// The generator records send lag for every attempt it sends, and a refusal
// with the time the arrival waited.
func TestRunRecordsSendLag(t *testing.T) {
	sink := &sliceSink{}
	cfg := Config{Driver: "null", Rate: 1000, Arrivals: "constant", Trace: "zipf:5:1", Targets: []Target{{1, "127.0.0.1:9"}}}
	if err := Run(context.Background(), cfg, time.Now(), 50*time.Millisecond, sink); err != nil {
		t.Fatal(err)
	}
	got := sink.sorted()
	if len(got) != 50 {
		t.Fatalf("%d records, want 50", len(got))
	}
	for _, r := range got {
		if r.SendLagS < 0 || r.SendLagS > r.LatencyS || !r.Measured() {
			t.Errorf("record %+v: want a measured attempt with 0 <= send lag <= latency", r)
		}
	}
}
