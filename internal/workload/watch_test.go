package workload

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/record"
)

// pipeConn is an httpConn over one end of a net.Pipe; the other end is
// closed with the test.
func pipeConn(t *testing.T) *httpConn {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return &httpConn{Conn: a}
}

// blockedRead starts a read on c that nothing will answer and returns
// where its error arrives.
func blockedRead(c *httpConn) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := c.Conn.Read(make([]byte, 1))
		done <- err
	}()
	return done
}

func TestConnWatchCutsEveryConnectionOnce(t *testing.T) {
	var w connWatch
	ctx, cancel := context.WithCancel(context.Background())
	conns := []*httpConn{pipeConn(t), pipeConn(t), pipeConn(t)}
	var reads []<-chan error
	for _, c := range conns {
		c.watch(ctx, &w)
		c.watch(ctx, &w) // a second exchange under the same context adds nothing
		reads = append(reads, blockedRead(c))
	}
	if n := w.len(); n != 3 {
		t.Fatalf("%d connections on the list, want 3", n)
	}
	conns[1].stopWatching()
	if n := w.len(); n != 2 {
		t.Fatalf("%d connections on the list after one stopped watching, want 2", n)
	}
	cancel()
	for i, done := range reads {
		if i == 1 {
			continue
		}
		select {
		case err := <-done:
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("connection %d: read ended with %v, want a deadline in the past", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("connection %d: read still blocked 10s after the context ended", i)
		}
	}
	select {
	case err := <-reads[1]:
		t.Errorf("the connection taken off the list was cut too: %v", err)
	default:
	}
}

func TestConnWatchOtherContext(t *testing.T) {
	var w connWatch
	first, cancelFirst := context.WithCancel(context.Background())
	defer cancelFirst()
	second, cancelSecond := context.WithCancel(context.Background())
	a, b := pipeConn(t), pipeConn(t)
	a.watch(first, &w)
	b.watch(second, &w) // the list holds a, under first: b watches on its own
	if b.list != nil || b.unwatch == nil {
		t.Fatalf("b is on the list of another context (list %v, own watch %v)", b.list != nil, b.unwatch != nil)
	}
	done := blockedRead(b)
	cancelSecond()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("read ended with %v, want a deadline in the past", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("read still blocked 10s after its own context ended")
	}
	a.stopWatching()
	b.watch(second, &w) // same context as b already watches: nothing changes
	c := pipeConn(t)
	c.watch(second, &w) // the list is empty, so it now watches second
	if c.list != &w || w.ctx != second {
		t.Fatal("an empty list did not take the new context")
	}
}

// A closed watch lets go of its context once its last connection leaves,
// and not before: a connection still in use stays watched.
func TestConnWatchCloseReleasesTheContext(t *testing.T) {
	var w connWatch
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := pipeConn(t)
	c.watch(ctx, &w)
	w.close()
	if w.stop == nil || w.ctx != ctx {
		t.Fatal("the watch let go of its context while a connection was still on it")
	}
	done := blockedRead(c)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("read ended with %v, want a deadline in the past", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the connection of a closed watch was not cut when its context ended")
	}
	c.stopWatching()
	if w.stop != nil || w.ctx != nil {
		t.Error("the closed watch still holds its context after its last connection left")
	}

	var idle connWatch
	other, stop := context.WithCancel(context.Background())
	defer stop()
	c2 := pipeConn(t)
	c2.watch(other, &idle)
	c2.stopWatching()
	idle.close()
	if idle.stop != nil || idle.ctx != nil {
		t.Error("closing an empty watch did not let go of its context")
	}
}

// Ending the run's context cuts a driver's exchanges that wait for an
// answer, on new connections and kept-alive ones alike, long before their
// response timeout; and it leaves the watch list empty once they close.
func TestDriverCutWhenContextEnds(t *testing.T) {
	for _, keepalive := range []bool{false, true} {
		s := newServer(t, func(c net.Conn) { defer c.Close(); io.Copy(io.Discard, c) }) // never answers
		d := NewHTTPDriver(DriverConfig{ConnectTimeout: time.Hour, ResponseTimeout: time.Hour, Keepalive: keepalive})
		ctx, cancel := context.WithCancel(context.Background())
		const attempts = 3
		results := make(chan Result, attempts)
		for range attempts {
			go func() {
				results <- d.Do(ctx, Attempt{Scheduled: time.Now(), Addr: s.addr(), Host: s.addr(), Target: "/"})
			}()
		}
		deadline := time.Now().Add(10 * time.Second)
		for d.watch.len() < attempts {
			if time.Now().After(deadline) {
				t.Fatalf("keepalive %v: %d of %d exchanges watched after 10s", keepalive, d.watch.len(), attempts)
			}
			time.Sleep(time.Millisecond)
		}
		cancel()
		for range attempts {
			select {
			case r := <-results:
				if r.Outcome == record.OK {
					t.Errorf("keepalive %v: an exchange with a silent server ended ok", keepalive)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("keepalive %v: an exchange still waited 10s after its context ended", keepalive)
			}
		}
		if n := d.watch.len(); n != 0 {
			t.Errorf("keepalive %v: %d connections still on the watch list after their exchanges closed them", keepalive, n)
		}
		d.Close()
	}
}

// len is how many connections are on the list (for tests).
func (w *connWatch) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for c := w.head; c != nil; c = c.next {
		n++
	}
	return n
}
