package workload

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/systems/ssm/app"
)

// frontEnd is a real ssm-app handler (memory backend) on loopback whose
// backend can be replaced, as if the front end had restarted.
type frontEnd struct {
	srv     *httptest.Server
	handler atomic.Pointer[http.Handler]
	wrap    func(http.Handler) http.Handler // optional: tamper with answers

	mu    sync.Mutex
	users map[string]int // requests per user name
}

func newFrontEnd(t *testing.T) *frontEnd {
	t.Helper()
	f := &frontEnd{users: map[string]int{}}
	f.restart()
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.users[strings.TrimPrefix(r.URL.Path, "/session/")]++
		f.mu.Unlock()
		h := *f.handler.Load()
		if f.wrap != nil {
			h = f.wrap(h)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// restart gives the front end an empty memory backend: every session is lost.
func (f *frontEnd) restart() {
	h := app.Handler(app.NewMemory(), app.DefaultConfig())
	f.handler.Store(&h)
}

func (f *frontEnd) attempt() Attempt {
	addr := f.srv.Listener.Addr().String()
	return Attempt{Scheduled: time.Now(), Addr: addr, Host: addr, Target: "/"}
}

func sessionTestDriver(keepalive bool, users, flow int) *sessionDriver {
	return newSessionDriver(DriverConfig{ConnectTimeout: time.Second, ResponseTimeout: 2 * time.Second,
		Keepalive: keepalive, Users: users}, flow)
}

func TestSSMDriverAlternatesAndVerifies(t *testing.T) {
	for _, keepalive := range []bool{false, true} {
		f := newFrontEnd(t)
		d := sessionTestDriver(keepalive, 1, 0)
		defer d.Close()
		for i := range 6 {
			r := d.Do(context.Background(), f.attempt())
			want := TargetWrite
			if i%2 == 1 {
				want = TargetRead
			}
			if r.Outcome != record.OK || r.Target != want || r.Status != 200 || r.Bytes < 8<<10 {
				t.Fatalf("keepalive=%v attempt %d: %+v, want ok %s with an 8 KB session", keepalive, i, r, want)
			}
		}
	}
}

func TestSSMDriverLostSessionIsDataError(t *testing.T) {
	f := newFrontEnd(t)
	d := sessionTestDriver(false, 1, 0)
	defer d.Close()
	if r := d.Do(context.Background(), f.attempt()); r.Outcome != record.OK || r.Target != TargetWrite {
		t.Fatalf("first write: %+v", r)
	}
	f.restart() // the memory front end lost every session
	if r := d.Do(context.Background(), f.attempt()); r.Outcome != record.DataError || r.Target != TargetRead || r.Status != http.StatusGone {
		t.Fatalf("read of a lost session: %+v, want data_error 410", r)
	}
	// The user starts over with a new session, which works.
	for _, want := range []string{TargetWrite, TargetRead} {
		if r := d.Do(context.Background(), f.attempt()); r.Outcome != record.OK || r.Target != want {
			t.Fatalf("after starting over, %s: %+v", want, r)
		}
	}
}

func TestSSMDriverStaleBodyIsDataError(t *testing.T) {
	f := newFrontEnd(t)
	d := sessionTestDriver(false, 1, 0)
	defer d.Close()
	d.Do(context.Background(), f.attempt()) // write seq 1
	d.Do(context.Background(), f.attempt()) // read seq 1
	// The front end answers the next write with the old session (seq 1, not 2).
	stale := app.NewSession("c0-u0", 1, 8<<10)
	f.wrap = func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(app.HeaderCookie, "whatever")
			w.Header().Set(app.HeaderSeq, "2")
			w.Write(stale)
		})
	}
	if r := d.Do(context.Background(), f.attempt()); r.Outcome != record.DataError || r.Status != 200 {
		t.Fatalf("stale 200: %+v, want data_error", r)
	}
	// A corrupt body (one flipped bit) is a data_error too.
	f.wrap = func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			b := rec.Body.Bytes()
			b[len(b)-1] ^= 1
			w.Write(b)
		})
	}
	if r := d.Do(context.Background(), f.attempt()); r.Outcome != record.DataError || r.Target != TargetWrite {
		t.Fatalf("corrupt 200: %+v, want data_error", r)
	}
}

func TestSSMDriverServiceErrors(t *testing.T) {
	f := newFrontEnd(t)
	d := sessionTestDriver(false, 1, 0)
	defer d.Close()
	f.wrap = func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		})
	}
	if r := d.Do(context.Background(), f.attempt()); r.Outcome != record.HTTPError || r.Status != 503 || r.Target != TargetWrite {
		t.Fatalf("503: %+v, want http_error", r)
	}
	// A refused connection: conn_error, and the user is free again.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	a := Attempt{Scheduled: time.Now(), Addr: addr, Host: addr}
	if r := d.Do(context.Background(), a); r.Outcome != record.ConnError || r.Target != TargetWrite {
		t.Fatalf("refused: %+v, want conn_error", r)
	}
	f.wrap = nil
	if r := d.Do(context.Background(), f.attempt()); r.Outcome != record.OK || r.Target != TargetWrite {
		t.Fatalf("after errors: %+v", r)
	}
	// A refused read never reached the server: the user keeps its session
	// and reads it next.
	if r := d.Do(context.Background(), a); r.Outcome != record.ConnError || r.Target != TargetRead {
		t.Fatalf("refused read: %+v, want conn_error", r)
	}
	if r := d.Do(context.Background(), f.attempt()); r.Outcome != record.OK || r.Target != TargetRead {
		t.Fatalf("read after a refused read: %+v, want ok read", r)
	}
	// A refused write did not change the session either: the next write
	// continues it (sequence 2), rather than starting over.
	if r := d.Do(context.Background(), a); r.Outcome != record.ConnError || r.Target != TargetWrite {
		t.Fatalf("refused write: %+v, want conn_error", r)
	}
	u := <-d.free
	seq := u.Seq()
	d.free <- u
	if r := d.Do(context.Background(), f.attempt()); r.Outcome != record.OK || r.Target != TargetWrite || seq != 1 {
		t.Fatalf("write after a refused write: %+v (seq before %d), want ok continuing seq 1", r, seq)
	}
}

func TestSSMDriverNoFreeUser(t *testing.T) {
	f := newFrontEnd(t)
	release := make(chan struct{})
	f.wrap = func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-release
			h.ServeHTTP(w, r)
		})
	}
	d := sessionTestDriver(false, 1, 0)
	defer d.Close()
	done := make(chan Result)
	go func() { done <- d.Do(context.Background(), f.attempt()) }()
	// Wait until the only user's request is at the server.
	for deadline := time.Now().Add(2 * time.Second); ; {
		f.mu.Lock()
		n := len(f.users)
		f.mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if r := d.Do(context.Background(), f.attempt()); r.Refused != record.RefusedNoUser || r.Target != TargetNoUser {
		t.Fatalf("arrival with every user busy: %+v, want refused no_user, target no-user", r)
	}
	close(release)
	if r := <-done; r.Outcome != record.OK {
		t.Fatalf("the busy user's request: %+v", r)
	}
}

func TestSessionDriverFlows(t *testing.T) {
	f := newFrontEnd(t)
	d := sessionTestDriver(true, 2, 4)
	defer d.Close()
	for i := range 16 {
		if r := d.Do(context.Background(), f.attempt()); r.Outcome != record.OK {
			t.Fatalf("attempt %d: %+v", i, r)
		}
	}
	// 16 requests over 2 users with flows of 4: each user had 2 sessions
	// (FIFO pool: the users take turns), each of 4 requests.
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.users) != 4 {
		t.Fatalf("sessions seen: %v, want 4 of 4 requests", f.users)
	}
	for name, n := range f.users {
		if n != 4 {
			t.Errorf("session %s: %d requests, want 4", name, n)
		}
	}
}

func TestGeneratorRecordsOperations(t *testing.T) {
	f := newFrontEnd(t)
	addr := f.srv.Listener.Addr().String()
	cfg := Config{Driver: "ssm", Rate: 200, Clients: 2, Users: 8, Keepalive: true, Trace: "zipf:1:1.0",
		Targets: []Target{{Node: 1, Addr: addr}}}
	sink := &sliceSink{}
	if err := Run(context.Background(), cfg, time.Now(), time.Second, sink); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, r := range sink.reqs {
		counts[r.Target]++
		// A busy machine may leave a client without a free user now and
		// then: that arrival is recorded, not sent. Every other is ok.
		if r.Target == TargetNoUser {
			if r.Refused != record.RefusedNoUser {
				t.Fatalf("record %+v: a no-user arrival must be the generator's refusal", r)
			}
			continue
		}
		if r.Outcome != record.OK {
			t.Fatalf("record %+v: want every attempt sent to be ok", r)
		}
	}
	// How many arrivals find every user busy depends on the machine's
	// load, so only their accounting is checked above, not their number.
	if counts[TargetWrite] == 0 || counts[TargetRead] == 0 {
		t.Fatalf("targets %v: want writes and reads", counts)
	}
}
