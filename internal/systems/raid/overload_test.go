package raid

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/faultbench/faultbench/internal/pageset"
	"github.com/faultbench/faultbench/internal/systems/raid/control"
)

func TestAdmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newAdmission(2, 1, time.Second)
		ctx := context.Background()
		r1, err := a.enter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := a.enter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Both slots taken: the next waits its budget, then is refused.
		start := time.Now()
		if _, err := a.enter(ctx); !errors.Is(err, ErrBusy) || time.Since(start) != time.Second {
			t.Fatalf("full, after %v: %v", time.Since(start), err)
		}
		// One waits; a second finds the queue full and is refused at once.
		got := make(chan error, 1)
		go func() {
			release, err := a.enter(ctx)
			if err == nil {
				release()
			}
			got <- err
		}()
		synctest.Wait()
		if a.queued.Load() != 1 {
			t.Fatalf("queued %d", a.queued.Load())
		}
		if _, err := a.enter(ctx); !errors.Is(err, ErrBusy) {
			t.Fatalf("queue full: %v", err)
		}
		r1()
		if err := <-got; err != nil {
			t.Fatalf("waiter after a release: %v", err)
		}
		// A waiter whose client leaves gets its context's error, not ErrBusy.
		r1, err = a.enter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			_, err := a.enter(cctx)
			got <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-got; !errors.Is(err, context.Canceled) {
			t.Fatalf("client left: %v", err)
		}
		r1()
		r2()
		if a.inFlight() != 0 || a.queued.Load() != 0 || a.refused.Load() != 2 {
			t.Fatalf("in flight %d, queued %d, refused %d", a.inFlight(), a.queued.Load(), a.refused.Load())
		}
	})
	// max_requests=0: no admission control.
	a := newAdmission(0, 0, 0)
	for range 1000 {
		if _, err := a.enter(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// openFDs counts this process's open file descriptors (-1 where /proc is
// not there).
func openFDs() int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(es)
}

// TestOverloadRecovers drives a live node (real sockets, loopback) far
// beyond what it can serve, with clients that give up, and checks that it
// kept its backlog bounded and afterwards serves everything again with
// the connections, fds and goroutines it had before. Deterministic: every
// member disk hangs on reads (io_timeout=0) while the overload arrives, so
// the slots fill and stay full; the counts, not the timing, are checked.
func TestOverloadRecovers(t *testing.T) {
	const (
		maxRequests = 8
		maxQueued   = 32
		burst       = 400 // requests arriving at once, each on its own connection
	)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	cfg := testNodeConfig(t, map[string]string{"io_timeout": "0", "io_overhead": "100us",
		"max_requests": fmt.Sprint(maxRequests), "max_queued": fmt.Sprint(maxQueued), "queue_wait": "1h"})
	c, stop := liveNode(t, ln, cfg)
	defer stop()
	ctx := context.Background()
	// status polls until ok holds (the node's goroutines and the kernel
	// finish closing connections on their own time), failing with the
	// last status after a generous number of tries.
	status := func(what string, ok func(control.Status) bool) control.Status {
		t.Helper()
		var st control.Status
		for range 1000 {
			if st, err = c.Status(ctx); err == nil && ok(st) {
				return st
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("%s: never; last status %+v (err %v)", what, st, err)
		return st
	}

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	fetch := func(ctx context.Context, i int) (int, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+pageset.Path(i%cfg.Pages), nil)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode == http.StatusOK && !pageset.Verify(pageset.Path(i%cfg.Pages), body) {
			err = fmt.Errorf("page %d: wrong bytes", i%cfg.Pages)
		}
		return resp.StatusCode, err
	}
	// serveAll fetches n pages, maxRequests at a time (the node's capacity
	// in requests): every one must be served, none refused.
	serveAll := func(what string, n int) {
		t.Helper()
		before := status(what, func(control.Status) bool { return true }).Refused
		var wg sync.WaitGroup
		errs := make(chan error, n)
		sem := make(chan struct{}, maxRequests)
		for i := range n {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				if code, err := fetch(ctx, i); err != nil || code != http.StatusOK {
					errs <- fmt.Errorf("page %d: %d %v", i, code, err)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("%s: %v", what, err)
		}
		if st := status(what, func(control.Status) bool { return true }); st.Refused != before {
			t.Errorf("%s: %d requests refused", what, st.Refused-before)
		}
	}
	serveAll("before the overload", 4*maxRequests)
	client.CloseIdleConnections()
	idle := status("idle", func(st control.Status) bool { return st.Conns == 1 && st.InFlight == 0 })
	runtime.GC()
	baseFDs, baseGoroutines := openFDs(), runtime.NumGoroutine()

	// Overload: the disks hang, and burst requests arrive at once.
	var faults []int
	for d := 1; d <= 4; d++ {
		id, err := c.InjectFault(ctx, control.FaultRequest{Type: "disk-hang-read", Disk: d, Mode: "sticky"})
		if err != nil {
			t.Fatal(err)
		}
		faults = append(faults, id)
	}
	impatient, giveUp := context.WithCancel(ctx)
	type outcome struct {
		code int
		err  error
	}
	outcomes := make(chan outcome, burst)
	for i := range burst {
		go func() {
			code, err := fetch(impatient, i)
			outcomes <- outcome{code, err}
		}()
	}
	// Everything beyond the slots and the queue is refused at once.
	for range burst - maxRequests - maxQueued {
		if o := <-outcomes; o.code != http.StatusServiceUnavailable || o.err != nil {
			t.Fatalf("beyond slots and queue: %d %v, want 503", o.code, o.err)
		}
	}
	// The refused connections close on the node's side a moment after
	// their clients have the 503: wait for the count, then check it.
	st := status("slots and queue full, nothing else open", func(st control.Status) bool {
		return st.InFlight == maxRequests && st.Queued == maxQueued && st.Conns == maxRequests+maxQueued+1
	})
	if want := int64(burst - maxRequests - maxQueued); st.Refused != want {
		t.Fatalf("during the overload: %d refused, want %d", st.Refused, want)
	}
	if fds := openFDs(); baseFDs >= 0 && fds > baseFDs+2*(maxRequests+maxQueued)+16 {
		t.Errorf("during the overload: %d fds, %d before (each held request is two: client and node)", fds, baseFDs)
	}
	// The clients give up: the queued requests leave the queue without
	// touching the volume; the ones at work finish when the disks do.
	giveUp()
	status("queue emptied by the clients leaving", func(st control.Status) bool {
		return st.Queued == 0 && st.Conns <= int64(maxRequests+1)
	})
	for _, id := range faults {
		if err := c.RevertFault(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for range maxRequests + maxQueued {
		if o := <-outcomes; o.err == nil {
			t.Errorf("a client that gave up got %d", o.code)
		}
	}
	st = status("overload over", func(st control.Status) bool {
		return st.InFlight == 0 && st.Queued == 0 && st.Conns == 1
	})
	if st.Refused != int64(burst-maxRequests-maxQueued) || st.State != "optimal" {
		t.Errorf("after the overload: %d refused, volume %s", st.Refused, st.State)
	}

	// Recovery: the node serves at its full capacity again, and holds no
	// more than it held before.
	serveAll("after the overload", 4*maxRequests)
	client.CloseIdleConnections()
	status("connections closed", func(st control.Status) bool { return st.Conns == idle.Conns && st.InFlight == 0 })
	var fds, goroutines int
	for range 1000 {
		runtime.GC()
		fds, goroutines = openFDs(), runtime.NumGoroutine()
		if fds <= baseFDs+4 && goroutines <= baseGoroutines+4 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("after the overload: %d fds (%d before), %d goroutines (%d before)", fds, baseFDs, goroutines, baseGoroutines)
}
