package faultnet

import (
	"bufio"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// echoServer answers every line with the same line until closed.
func echoServer(t *testing.T) (addr string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String(), func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}
}

func roundTrip(c net.Conn, r *bufio.Reader, msg string, timeout time.Duration) (string, error) {
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, msg+"\n"); err != nil {
		return "", err
	}
	line, err := r.ReadString('\n')
	return strings.TrimSpace(line), err
}

func TestLinkPassHoldCut(t *testing.T) {
	before := runtime.NumGoroutine()
	addr, stop := echoServer(t)
	defer stop()
	l, err := Listen("127.0.0.1:0", addr, 1)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	if got, err := roundTrip(c, r, "one", 2*time.Second); err != nil || got != "one" {
		t.Fatalf("healthy link: got %q, %v", got, err)
	}

	// Hold: bytes wait, then flow after the revert.
	revert, err := l.Set(State{Down: Hold})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(c, r, "two", 150*time.Millisecond); err == nil {
		t.Fatal("held link delivered a reply")
	}
	revert()
	revert() // harmless twice
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if line, err := r.ReadString('\n'); err != nil || strings.TrimSpace(line) != "two" {
		t.Fatalf("after revert of hold: got %q, %v", line, err)
	}

	// Cut: the open connection is reset and new ones are refused.
	revert, _ = l.Set(State{Down: Cut})
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("cut link kept the connection open")
	}
	c.Close()
	c2, err := net.Dial("tcp", l.Addr())
	if err == nil {
		c2.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c2.Read(make([]byte, 1)); err == nil {
			t.Fatal("cut link forwarded a new connection")
		}
		c2.Close()
	}
	revert()
	c3, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := roundTrip(c3, bufio.NewReader(c3), "three", 2*time.Second); err != nil || got != "three" {
		t.Fatalf("after revert of cut: got %q, %v", got, err)
	}
	c3.Close()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	stop()
	waitGoroutines(t, before)
}

func TestLinkDelayLossComposeAndRevert(t *testing.T) {
	addr, stop := echoServer(t)
	defer stop()
	l, err := Listen("127.0.0.1:0", addr, 7)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r1, _ := l.Set(State{Delay: 30 * time.Millisecond})
	r2, _ := l.Set(State{Loss: 1, RTO: 40 * time.Millisecond})
	if st := l.State(); st.Delay != 30*time.Millisecond || st.Loss != 1 {
		t.Fatalf("merged state = %+v", st)
	}
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if got, err := roundTrip(c, bufio.NewReader(c), "x", 3*time.Second); err != nil || got != "x" {
		t.Fatalf("got %q, %v", got, err)
	}
	// Two chunks (there and back), each delayed by 30ms + 40ms.
	if el := time.Since(start); el < 140*time.Millisecond {
		t.Fatalf("round trip took %v, want at least 140ms", el)
	}
	r2()
	if st := l.State(); st.Loss != 0 || st.Delay != 30*time.Millisecond {
		t.Fatalf("after reverting loss: %+v", st)
	}
	r1()
	if st := l.State(); st != (State{}) {
		t.Fatalf("after reverting all: %+v", st)
	}
	if _, err := l.Set(State{Loss: 2}); err == nil {
		t.Fatal("loss 2 accepted")
	}
}

func TestNetPartitionAndClose(t *testing.T) {
	before := runtime.NumGoroutine()
	ups := map[int]string{1: "127.0.0.1:1", 2: "127.0.0.1:2", 3: "127.0.0.1:3", 4: "127.0.0.1:4"}
	n, err := NewNet(ups, NetOptions{Seed: 1, ListenAddr: func(int, int) string { return "127.0.0.1:0" }})
	if err != nil {
		t.Fatal(err)
	}
	if p := n.PeersOf(2); len(p) != 3 || p[1] != n.Addr(2, 1) {
		t.Fatalf("PeersOf(2) = %v", p)
	}
	revert, err := n.Partition([][]int{{1, 2}}, Hold)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range [][2]int{{1, 3}, {3, 1}, {2, 4}, {4, 2}} {
		if n.Link(k[0], k[1]).State().Down != Hold {
			t.Errorf("link %v not down in partition", k)
		}
	}
	for _, k := range [][2]int{{1, 2}, {3, 4}, {4, 3}} {
		if n.Link(k[0], k[1]).State().Down != Up {
			t.Errorf("link %v down inside a group", k)
		}
	}
	revert()
	if _, err := n.Partition([][]int{{1, 2}, {2, 3}}, Hold); err == nil {
		t.Fatal("overlapping groups accepted")
	}
	if _, err := n.SetLink(1, 9, State{Down: Cut}); err == nil {
		t.Fatal("link to unknown node accepted")
	}
	swRevert, _ := n.SwitchDown(Cut)
	if n.Link(4, 1).State().Down != Cut {
		t.Fatal("switch-down left a link up")
	}
	_ = swRevert
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.SetAll(State{}); err == nil {
		t.Fatal("set after close accepted")
	}
	if _, err := NewNet(map[int]string{1: "x"}, NetOptions{}); err == nil {
		t.Fatal("1-node net accepted")
	}
	waitGoroutines(t, before)
}

func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	for i := 0; i < 100; i++ {
		if runtime.NumGoroutine() <= before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("goroutines: %d before, %d after", before, runtime.NumGoroutine())
}

func TestFlakyAlternates(t *testing.T) {
	s := State{Flaky: &Flaky{Up: 100 * time.Millisecond, Down: 50 * time.Millisecond}}
	t0 := time.Unix(0, 0)
	for _, c := range []struct {
		at   time.Duration
		want DownMode
	}{{0, Up}, {99 * time.Millisecond, Up}, {100 * time.Millisecond, Hold}, {149 * time.Millisecond, Hold}, {150 * time.Millisecond, Up}, {260 * time.Millisecond, Hold}} {
		if got := s.downAt(t0, t0.Add(c.at)); got != c.want {
			t.Errorf("at %v: %v, want %v", c.at, got, c.want)
		}
	}
	s.Flaky.Mode = Cut
	if s.downAt(t0, t0.Add(120*time.Millisecond)) != Cut {
		t.Error("flaky cut mode ignored")
	}
	if (State{Down: Cut, Flaky: s.Flaky}).downAt(t0, t0) != Cut {
		t.Error("a down link is down even while flaky says up")
	}
}
