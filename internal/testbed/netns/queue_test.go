package netns

import (
	"encoding/binary"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/kernelfault"
)

// rttTo is the median TCP connect time to addr from node from (0: the
// controller, i.e. the users' side).
func rttTo(t *testing.T, c *Namespaces, from int, addr string) time.Duration {
	t.Helper()
	host, _, _ := strings.Cut(addr, ":")
	if from == 0 {
		d, err := rttFrom("", host)
		if err != nil {
			t.Fatalf("round trip to %s: %v", host, err)
		}
		return d
	}
	d, err := rttFrom(c.net.ns(from), host)
	if err != nil {
		t.Fatalf("round trip from node %d to %s: %v", from, host, err)
	}
	return d
}

// delay with scope client acts on the users' side of node 2 only: the
// controller's round trip to it grows by the delay, node 1's does not;
// the revert takes the delay away.
func TestQueueDelayScopeClient(t *testing.T) {
	c, ev := startCluster(t, 2)
	n2 := c.Nodes()[1].Addr
	const delay = 30 * time.Millisecond
	base0, base1 := rttTo(t, c, 0, n2), rttTo(t, c, 1, n2)
	undo, err := c.Queue(kernelfault.Label{Fault: "delay", ID: 1}, 2, kernelfault.Peers{Client: true}, kernelfault.Disturbance{Delay: delay})
	if err != nil {
		t.Fatal(err)
	}
	users, peer := rttTo(t, c, 0, n2), rttTo(t, c, 1, n2)
	t.Logf("users' RTT %v -> %v, node 1's %v -> %v (delay %v)", base0, users, base1, peer, delay)
	if users-base0 < delay {
		t.Errorf("users' round trip grew by %v, want at least %v", users-base0, delay)
	}
	if peer-base1 >= delay/2 {
		t.Errorf("node 1's round trip grew by %v: scope client must leave intra-cluster links alone", peer-base1)
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	if after := rttTo(t, c, 0, n2); after-base0 >= delay/2 {
		t.Errorf("users' round trip %v after the revert (%v before)", after, base0)
	}
	if !ev.has("fault.effective", "delay") || !ev.has("fault.reverted", "delay") {
		t.Error("missing fault.effective or fault.reverted")
	}
}

// A delay on the link [1, 2] delays node 1's packets to node 2, not the
// users'.
func TestQueueDelayOnALink(t *testing.T) {
	c, _ := startCluster(t, 2)
	n2 := c.Nodes()[1].Addr
	const delay = 30 * time.Millisecond
	base1 := rttTo(t, c, 1, n2)
	undo, err := c.Queue(kernelfault.Label{Fault: "delay", ID: 1}, 1, kernelfault.Peers{Nodes: []int{2}}, kernelfault.Disturbance{Delay: delay})
	if err != nil {
		t.Fatal(err)
	}
	defer undo()
	if got := rttTo(t, c, 1, n2); got-base1 < delay {
		t.Errorf("node 1 to node 2: round trip %v -> %v, want at least +%v", base1, got, delay)
	}
	n1 := c.Nodes()[0].Addr
	if !dialFrom(c, 0, n1) {
		t.Error("the users lost node 1")
	}
}

// link-flaky drops in its down periods: a connection attempt during a
// long down period fails; after the revert it succeeds.
func TestQueueFlaky(t *testing.T) {
	c, ev := startCluster(t, 2)
	n2 := c.Nodes()[1].Addr
	// Up 1ms, then down for a minute: the link is down for the whole test.
	undo, err := c.Queue(kernelfault.Label{Fault: "link-flaky", ID: 1}, 2, kernelfault.Peers{Client: true}, kernelfault.Disturbance{Up: time.Millisecond, Down: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if dialFrom(c, 0, n2) {
		t.Error("node 2 reachable by the users in a down period")
	}
	if !dialFrom(c, 1, n2) {
		t.Error("node 1 lost node 2: scope client must leave intra-cluster links alone")
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	if !dialFrom(c, 0, n2) {
		t.Error("node 2 unreachable after the revert")
	}
	if !ev.has("fault.effective", "link-flaky") || !ev.has("fault.reverted", "link-flaky") {
		t.Error("missing evidence events")
	}
}

// scope: client for the other network faults: the users lose (or are
// slowed on) node 2, node 1 still reaches it.
func TestScopeClientSparesIntraClusterLinks(t *testing.T) {
	c, ev := startCluster(t, 2)
	n2 := c.Nodes()[1].Addr
	client := kernelfault.Peers{Client: true}
	steps := []struct {
		name string
		do   func() (kernelfault.Undo, error)
		cut  bool // the users lose node 2 entirely
	}{
		{"link-down", func() (kernelfault.Undo, error) {
			return c.Filter(kernelfault.Label{Fault: "link-down", ID: 1}, 2, kernelfault.Block{Peers: client})
		}, true},
		{"loss", func() (kernelfault.Undo, error) {
			return c.Filter(kernelfault.Label{Fault: "loss", ID: 2}, 2, kernelfault.Block{Peers: client, Loss: 0.5})
		}, false},
		{"bandwidth", func() (kernelfault.Undo, error) {
			return c.Shape(kernelfault.Label{Fault: "bandwidth", ID: 3}, 2, client, 64<<10)
		}, false},
	}
	for _, s := range steps {
		undo, err := s.do()
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if s.cut && dialFrom(c, 0, n2) {
			t.Errorf("%s: the users still reach node 2", s.name)
		}
		if !dialFrom(c, 1, n2) {
			t.Errorf("%s: node 1 lost node 2: scope client must leave intra-cluster links alone", s.name)
		}
		if err := undo(); err != nil {
			t.Fatalf("%s: revert: %v", s.name, err)
		}
		if !dialFrom(c, 0, n2) {
			t.Errorf("%s: the users cannot reach node 2 after the revert", s.name)
		}
		if !ev.has("fault.effective", s.name) || !ev.has("fault.reverted", s.name) {
			t.Errorf("%s: missing evidence events", s.name)
		}
	}
}

// udpRTTs sends n datagrams at rate per second over conn (each echoed
// back) and returns the round trips of those that came back.
func udpRTTs(conn *net.UDPConn, n int, rate float64) []time.Duration {
	sent := make([]atomic.Int64, n)
	got := make(chan []time.Duration, 1)
	go func() {
		var out []time.Duration
		buf := make([]byte, 64)
		for {
			_ = conn.SetReadDeadline(time.Now().Add(time.Second))
			k, err := conn.Read(buf)
			if err != nil || k < 4 {
				got <- out
				return
			}
			if i := binary.BigEndian.Uint32(buf); int(i) < n {
				out = append(out, time.Duration(time.Now().UnixNano()-sent[i].Load()))
			}
		}
	}()
	t0 := time.Now()
	var msg [16]byte
	for i := range n {
		time.Sleep(time.Until(t0.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
		sent[i].Store(time.Now().UnixNano())
		binary.BigEndian.PutUint32(msg[:], uint32(i))
		_, _ = conn.Write(msg[:])
	}
	return <-got
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

// How faithful the delayer is at the rates the examples use and above:
// node 1's datagrams to node 2 and node 2's echoes are each delayed by
// 10 ms (a delay acts in each direction), 1000 to 5000 packets a second
// through the queue; the added median and p99 round trip (requested:
// 20 ms) are logged (go test -v; docs/benchmarks.md quotes them). The
// test asserts only what the delayer guarantees — no packet early, none
// lost at these rates.
func TestDelayFaithfulness(t *testing.T) {
	c, _ := startCluster(t, 2)
	h2 := c.net.host(2)
	var srv, cli *net.UDPConn
	if err := inNetns(c.net.ns(2), func() (err error) {
		srv, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(h2)})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_ = srv.SetReadBuffer(4 << 20)
	if err := inNetns(c.net.ns(1), func() (err error) {
		cli, err = net.DialUDP("udp4", nil, srv.LocalAddr().(*net.UDPAddr))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	_ = cli.SetReadBuffer(4 << 20)
	go func() {
		buf := make([]byte, 64)
		for {
			n, a, err := srv.ReadFromUDP(buf)
			if err != nil {
				return
			}
			_, _ = srv.WriteToUDP(buf[:n], a)
		}
	}()
	const delay = 10 * time.Millisecond
	for _, pkts := range []float64{1000, 2500, 5000} {
		rate := pkts / 2 // datagrams a second: each one and its echo pass the queue
		n := int(rate)   // one second
		base := udpRTTs(cli, n, rate)
		undo, err := c.Queue(kernelfault.Label{Fault: "delay", ID: int(rate)}, 1, kernelfault.Peers{Nodes: []int{2}}, kernelfault.Disturbance{Delay: delay})
		if err != nil {
			t.Fatal(err)
		}
		got := udpRTTs(cli, n, rate)
		if err := undo(); err != nil {
			t.Fatal(err)
		}
		added50, added99 := quantile(got, 0.5)-quantile(base, 0.5), quantile(got, 0.99)-quantile(base, 0.99)
		t.Logf("%5.0f pkt/s through the queue: delay %v each way: median RTT %v -> %v (added %v), p99 %v -> %v (added %v); %d of %d back",
			pkts, delay, quantile(base, 0.5), quantile(got, 0.5), added50, quantile(base, 0.99), quantile(got, 0.99), added99, len(got), n)
		if quantile(got, 0.01) < 2*delay {
			t.Errorf("%.0f pkt/s: a round trip of %v with a delay of %v each way: released early", pkts, quantile(got, 0.01), delay)
		}
		if len(got) < n*95/100 {
			t.Errorf("%.0f pkt/s: %d of %d back", pkts, len(got), n)
		}
	}
}

// A delay on a link another fault cuts cannot show in a round trip: the
// queue's count is its evidence, and the inject still succeeds.
func TestQueueDelayBehindACutLink(t *testing.T) {
	c, ev := startCluster(t, 2)
	cut, err := c.Filter(kernelfault.Label{Fault: "link-down", ID: 1}, 1, kernelfault.Block{Peers: kernelfault.Peers{Nodes: []int{2}}})
	if err != nil {
		t.Fatal(err)
	}
	defer cut()
	undo, err := c.Queue(kernelfault.Label{Fault: "delay", ID: 2}, 2, kernelfault.Peers{Nodes: []int{1}}, kernelfault.Disturbance{Delay: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	for _, e := range ev.all {
		if e.Kind == "fault.effective" && e.Fault == "delay" && !strings.Contains(e.Detail, "not measurable") {
			t.Errorf("evidence %q, want the queue's count for an unmeasurable round trip", e.Detail)
		}
	}
}
