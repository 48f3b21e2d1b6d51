package workload

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/benchcpu"
	"github.com/faultbench/faultbench/internal/record"
)

// sliceSink keeps every record, for tests.
type sliceSink struct {
	mu   sync.Mutex
	reqs []record.Request
}

func (s *sliceSink) Record(r record.Request) {
	s.mu.Lock()
	s.reqs = append(s.reqs, r)
	s.mu.Unlock()
}

func (s *sliceSink) sorted() []record.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.reqs)
	slices.SortFunc(out, func(a, b record.Request) int {
		if a.Client != b.Client {
			return a.Client - b.Client
		}
		switch {
		case a.StartS < b.StartS:
			return -1
		case a.StartS > b.StartS:
			return 1
		}
		return 0
	})
	return out
}

// Every arrival the schedule holds before the end is recorded exactly once,
// with its scheduled time, node, client and path; the same seed gives the
// same record, whatever the wall clock did.
func TestRunRecordsEveryArrival(t *testing.T) {
	s1 := newServer(t, respond(func(p string) string { return okReply(pageBody(p)) }))
	s2 := newServer(t, respond(func(string) string { return "HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n" }))
	cfg := Config{
		Rate: 400, Clients: 2, Trace: "zipf:20:1", Seed: 9, Verify: verifyPage,
		ConnectTimeout: testConnect, ResponseTimeout: testResponse,
		Targets: []Target{{1, s1.addr()}, {2, s2.addr()}},
	}
	const length = 250 * time.Millisecond
	var runs [2][]record.Request
	for i := range runs {
		sink := &sliceSink{}
		if err := Run(context.Background(), cfg, time.Now(), length, sink); err != nil {
			t.Fatal(err)
		}
		runs[i] = sink.sorted()
	}

	var want []arrival
	for c := range cfg.Clients {
		full := WithDefaults(cfg)
		for _, a := range walk(t, full, c, 1000) {
			if a.at >= length {
				break
			}
			want = append(want, a)
		}
	}
	got := runs[0]
	if len(got) != len(want) {
		t.Fatalf("%d records, want one for each of %d arrivals", len(got), len(want))
	}
	for i, r := range got {
		a := want[i]
		node := cfg.Targets[a.target].Node
		if r.StartS != a.at.Seconds() || r.Target != a.path || r.Node != node {
			t.Fatalf("record %d: %+v, want start %v node %d path %s", i, r, a.at.Seconds(), node, a.path)
		}
		wantOutcome := map[int]record.Outcome{1: record.OK, 2: record.HTTPError}[node]
		if r.Outcome != wantOutcome || r.LatencyS <= 0 {
			t.Errorf("record %d: outcome %v latency %v, want %v with positive latency", i, r.Outcome, r.LatencyS, wantOutcome)
		}
	}
	for i := range got {
		a, b := runs[0][i], runs[1][i]
		if a.StartS != b.StartS || a.Target != b.Target || a.Node != b.Node || a.Client != b.Client {
			t.Fatalf("run 2 record %d differs: %+v vs %+v", i, a, b)
		}
	}
}

// Beyond MaxInFlight an arrival is not sent, so a hung service cannot make
// the generator hold unbounded state; it is recorded as the generator's own
// refusal, never as a service outcome.
func TestRunMaxInFlight(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, func(c net.Conn) { <-release; c.Close() })
	defer close(release)
	sink := &sliceSink{}
	cfg := Config{
		Rate: 2000, Arrivals: "constant", Trace: "zipf:5:1", MaxInFlight: 3,
		ResponseTimeout: testResponse, // the default 2 s connect timeout keeps a slow machine from aborting the first three
		Targets:         []Target{{1, s.addr()}},
	}
	if err := Run(context.Background(), cfg, time.Now(), 20*time.Millisecond, sink); err != nil {
		t.Fatal(err)
	}
	var unsent, timedOut int
	for _, r := range sink.reqs {
		switch {
		case r.Refused == record.RefusedMaxInFlight:
			unsent++
			if r.Measured() {
				t.Errorf("refused attempt counts as measured: %+v", r)
			}
		case r.Outcome == record.Timeout:
			timedOut++
		}
	}
	if len(sink.reqs) != 40 || timedOut != 3 || unsent != 37 {
		t.Errorf("%d records: %d timeouts, %d unsent; want 40: 3 timeouts, 37 unsent", len(sink.reqs), timedOut, unsent)
	}
}

func TestRefusesRemoteTargets(t *testing.T) {
	cfg := Config{Rate: 1, Trace: "zipf:1:1", Targets: []Target{{1, "127.0.0.1:80"}, {2, "192.0.2.7:80"}, {3, "[::1]:80"}}}
	_, err := New(context.Background(), cfg, &sliceSink{})
	if !errors.Is(err, ErrRemote) || !strings.Contains(err.Error(), "node 2") || !strings.Contains(err.Error(), "192.0.2.7:80") {
		t.Fatalf("error %v, want ErrRemote naming node 2 and its address", err)
	}
	if strings.Contains(err.Error(), "node 1") || strings.Contains(err.Error(), "node 3") {
		t.Errorf("error %v blames a loopback node", err)
	}
	cfg.OwnHosts = []netip.Addr{netip.MustParseAddr("192.0.2.7")}
	if _, err := New(context.Background(), cfg, &sliceSink{}); err != nil {
		t.Errorf("a run's own host refused: %v", err)
	}
	cfg.OwnHosts = nil
	cfg.AllowRemote = true
	if _, err := New(context.Background(), cfg, &sliceSink{}); err != nil {
		t.Errorf("AllowRemote still refused: %v", err)
	}
	cfg.AllowRemote = false
	cfg.Targets = []Target{{1, "localhost:80"}}
	if _, err := New(context.Background(), cfg, &sliceSink{}); err != nil {
		t.Errorf("localhost refused: %v", err)
	}
}

func TestValidate(t *testing.T) {
	bad := Config{Driver: "ftp", Rate: -1, Arrivals: "bursty", Clients: -1, ConnectTimeout: -1, ResponseTimeout: -1, MaxInFlight: -1, Trace: "zipf:0:1",
		Targets: []Target{{1, "nohost"}}}
	err := Validate(bad)
	for _, want := range []string{"driver", "arrivals", "clients", "connect_timeout", "response_timeout", "max_in_flight", "zipf:0:1", "node 1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %s", err, want)
		}
	}
	if !errors.Is(err, ErrConfig) {
		t.Errorf("error %v does not wrap ErrConfig", err)
	}
	if err := Validate(WithDefaults(Config{Rate: 10, Arrivals: "trace", Trace: "zipf:3:1", Targets: []Target{{1, "127.0.0.1:1"}}})); err == nil {
		t.Error("arrivals: trace accepted without a clf trace")
	}
	if err := Validate(WithDefaults(Config{Rate: 10, Trace: "zipf:3:1", Targets: []Target{{1, "127.0.0.1:1"}}})); err != nil {
		t.Errorf("a minimal config: %v", err)
	}
}

// Stop may be called twice, before, during and after Run; once it is,
// nothing more is recorded after Run returns.
func TestStop(t *testing.T) {
	s := newServer(t, func(c net.Conn) { defer c.Close(); c.Read(make([]byte, 1)) })
	cfg := Config{Rate: 100, Trace: "zipf:5:1", Targets: []Target{{1, s.addr()}}}

	g, err := New(context.Background(), cfg, &sliceSink{})
	if err != nil {
		t.Fatal(err)
	}
	g.Stop()
	g.Stop()
	if err := g.Run(context.Background(), time.Now(), time.Hour); err != nil {
		t.Fatal(err)
	}

	sink := &sliceSink{}
	g, _ = New(context.Background(), cfg, sink)
	done := make(chan error)
	go func() { done <- g.Run(context.Background(), time.Now(), time.Hour) }()
	for range 2 {
		g.Stop()
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	n := len(sink.sorted())
	g.Stop()
	if err := g.Run(context.Background(), time.Now(), time.Hour); !errors.Is(err, ErrAlreadyRun) {
		t.Errorf("second Run: %v, want ErrAlreadyRun", err)
	}
	if len(sink.sorted()) != n {
		t.Error("records arrived after Run returned")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Run(ctx, cfg, time.Now(), time.Hour, &sliceSink{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a cancelled context: %v, want context.Canceled", err)
	}
}

// instantDriver answers every attempt at once, so that a benchmark of the
// generator measures its own work per arrival: the schedule, the hand-off
// to an attempt's goroutine and the record, not a network.
type instantDriver struct{}

func (instantDriver) Do(_ context.Context, a Attempt) Result {
	return Result{Outcome: record.OK, End: time.Now(), Status: 200, Bytes: 1}
}

// laneDriver is instantDriver with a connection cap, so the generator
// runs its attempts in lanes (attemptWorkers).
type laneDriver struct{ instantDriver }

func (laneDriver) connLimit() int { return 16 }

// BenchmarkGeneratorArrival is the run path's cost per arrival without a
// network: one client's schedule at 200,000 arrivals a second, each handed
// to an attempt goroutine (workers: a kept one; lanes: one of the target's
// 16 lane workers, as keep-alive with max_conns runs) and recorded into a
// counting sink. ns/op is the CPU a recorded arrival costs the generator
// (the clock it waits on aside); allocs/op should stay 0.
func BenchmarkGeneratorArrival(b *testing.B) {
	for _, d := range []struct {
		name   string
		driver Driver
	}{{"workers", instantDriver{}}, {"lanes", laneDriver{}}} {
		b.Run(d.name, func(b *testing.B) {
			drivers["instant"] = func(DriverConfig) Driver { return d.driver }
			b.Cleanup(func() { delete(drivers, "instant") })
			const rate = 200000
			var n atomic.Int64
			cfg := Config{Driver: "instant", Rate: rate, Arrivals: "constant", Clients: 1, Seed: 1,
				Trace: "zipf:100:1.0", Targets: []Target{{Node: 1, Addr: "127.0.0.1:9"}}}
			g, err := New(context.Background(), cfg, SinkFunc(func(record.Request) { n.Add(1) }))
			if err != nil {
				b.Fatal(err)
			}
			length := time.Duration(float64(b.N) / rate * float64(time.Second))
			b.ReportAllocs()
			before := benchcpu.Process()
			b.ResetTimer()
			if err := g.Run(context.Background(), time.Now(), length); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			got := n.Load()
			if got < int64(b.N)*9/10 {
				b.Fatalf("%d arrivals recorded of %d", got, b.N)
			}
			b.ReportMetric(float64(benchcpu.Process()-before)/float64(got), "cpu-ns/arrival")
		})
	}
}

// With keep-alive and max_conns, a client's arrivals wait for a connection
// in their target's lane: those to a node that holds every connection are
// refused as the generator's (no_conn) once their connect timeout passes,
// exactly at it, and the other node's arrivals do not wait behind them.
func TestLanesRefuseWithoutDelayingOtherNodes(t *testing.T) {
	good := newServer(t, respond(func(p string) string { return okReply(pageBody(p)) }))
	hung := newServer(t, respondThenHang(""))
	const connect, response, length = 100 * time.Millisecond, 400 * time.Millisecond, 250 * time.Millisecond
	cfg := Config{
		Rate: 200, Clients: 1, Trace: "zipf:20:1", Seed: 3, Verify: verifyPage,
		Keepalive: true, MaxConns: 2, ConnectTimeout: connect, ResponseTimeout: response,
		Targets: []Target{{1, good.addr()}, {2, hung.addr()}},
	}
	sink := &sliceSink{}
	if err := Run(context.Background(), cfg, time.Now(), length, sink); err != nil {
		t.Fatal(err)
	}
	var ok, timedOut, refused int
	for _, r := range sink.sorted() {
		switch {
		case r.Node == 1:
			if r.Outcome != record.OK || r.Refused != record.NotRefused {
				t.Errorf("node 1 at %.3fs: %v (refused %q), want ok", r.StartS, r.Outcome, r.Refused)
			}
			ok++
		case r.Outcome == record.Timeout:
			timedOut++
		case r.Refused == record.RefusedNoConn:
			if r.Outcome != record.ConnError || time.Duration(r.LatencyS*1e9+0.5) != connect {
				t.Errorf("node 2 at %.3fs refused: %v after %.6fs, want conn_error (refused) after %v", r.StartS, r.Outcome, r.LatencyS, connect)
			}
			refused++
		default:
			t.Errorf("node 2 at %.3fs: %v (refused %q), want timeout or refused no_conn", r.StartS, r.Outcome, r.Refused)
		}
	}
	if ok == 0 || timedOut != cfg.MaxConns || refused == 0 {
		t.Errorf("node 1 ok %d, node 2 timed out %d and refused %d: want some ok, %d timed out (the held connections), some refused", ok, timedOut, refused, cfg.MaxConns)
	}
	if got := hung.accepted.Load(); got != int64(cfg.MaxConns) {
		t.Errorf("node 2 accepted %d connections, want max_conns %d", got, cfg.MaxConns)
	}
}

// An arrival whose lane already has a queue is handed on by the runtime's
// timer instead of the timerfd (Generator.client): it must still never
// go out before its instant, even when the queue then drains faster than
// arrivals come, and one connection still serves the lane first come,
// first served. The server takes 1 ms for each of its first 20 requests
// and answers at once after that, so the lane queues, then empties.
func TestQueuedLaneNeverSendsEarly(t *testing.T) {
	var served atomic.Int64
	server := newServer(t, respond(func(p string) string {
		if served.Add(1) <= 20 {
			time.Sleep(time.Millisecond)
		}
		return okReply(pageBody(p))
	}))
	// 100 µs between arrivals, below coarseWaitMax, so queued ones take
	// the Go timer.
	cfg := Config{
		Rate: 10000, Arrivals: "constant", Clients: 1, Trace: "zipf:20:1", Seed: 5, Verify: verifyPage,
		Keepalive: true, MaxConns: 1, ConnectTimeout: 5 * time.Second, ResponseTimeout: 5 * time.Second,
		Targets: []Target{{1, server.addr()}},
	}
	sink := &sliceSink{}
	if err := Run(context.Background(), cfg, time.Now(), 100*time.Millisecond, sink); err != nil {
		t.Fatal(err)
	}
	rs := sink.sorted()
	if len(rs) < 900 {
		t.Fatalf("%d requests recorded, want 1000", len(rs))
	}
	lastSend, maxLag := -1.0, 0.0
	for _, r := range rs {
		if r.Outcome != record.OK {
			t.Errorf("at %.4fs: %v, want ok", r.StartS, r.Outcome)
		}
		if r.SendLagS < 0 {
			t.Errorf("at %.4fs: sent %.6fs before its instant", r.StartS, -r.SendLagS)
		}
		if send := r.StartS + r.SendLagS; send < lastSend {
			t.Errorf("at %.4fs: sent at %.6fs, before the arrival ahead of it (%.6fs)", r.StartS, send, lastSend)
		} else {
			lastSend = send
		}
		maxLag = max(maxLag, r.SendLagS)
	}
	// 20 ms of slow answers against 0.1 ms between arrivals: the lane
	// queued, so the coarse wait was taken.
	if maxLag < 0.01 {
		t.Errorf("no arrival waited 10 ms in its lane (longest %.4fs): the lane never queued", maxLag)
	}
}

// waiting counts a lane's arrivals that no worker has taken yet.
func TestLaneWaiting(t *testing.T) {
	release := make(chan struct{})
	taken := make(chan struct{}, 8)
	w := attemptWorkers{laneLimit: 1, lanes: make([]lane, 2), do: func(job) {
		taken <- struct{}{}
		<-release
	}}
	for range 4 {
		w.run(job{a: arrival{target: 1}})
	}
	<-taken // the lane's one worker holds the first
	if got := w.waiting(1); got != 3 {
		t.Errorf("lane 1: %d waiting, want 3", got)
	}
	if got := w.waiting(0); got != 0 {
		t.Errorf("lane 0: %d waiting, want 0", got)
	}
	if got := (&attemptWorkers{}).waiting(0); got != 0 {
		t.Errorf("without lanes: %d waiting, want 0", got)
	}
	close(release)
	w.close()
}
