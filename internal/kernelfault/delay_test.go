package kernelfault

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// needNetns skips without root, ip or iptables-nft; it returns a fresh
// namespace with lo up, deleted at the end of the test.
func needNetns(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces, NFQUEUE)")
	}
	for _, bin := range []string{"ip", "iptables-nft"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("needs %s: %v", bin, err)
		}
	}
	ns := fmt.Sprintf("fbkq-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	if out, err := exec.Command("ip", "-n", ns, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("lo up: %v: %s", err, out)
	}
	return ns
}

// inNS runs f on a thread in namespace ns; sockets f opens live there.
func inNS(t *testing.T, ns string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		fd, err := os.Open("/run/netns/" + ns)
		if err != nil {
			t.Error(err)
			return
		}
		defer fd.Close()
		if err := unix.Setns(int(fd.Fd()), unix.CLONE_NEWNET); err != nil {
			t.Error(err)
			return
		}
		f()
	}()
	<-done
}

// echo starts a UDP echo server on 127.0.0.1 in ns and returns a client
// socket in ns connected to it.
func echo(t *testing.T, ns string) *net.UDPConn {
	t.Helper()
	var srv, cli *net.UDPConn
	inNS(t, ns, func() {
		var err error
		if srv, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}); err != nil {
			t.Error(err)
			return
		}
		if cli, err = net.DialUDP("udp4", nil, srv.LocalAddr().(*net.UDPAddr)); err != nil {
			t.Error(err)
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	t.Cleanup(func() { srv.Close(); cli.Close() })
	// Released packets leave in bursts: room for a second's worth.
	_ = srv.SetReadBuffer(4 << 20)
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
	return cli
}

// rtts sends n datagrams at rate per second and returns the round trips
// of those that came back within 2 s of the last send.
func rtts(cli *net.UDPConn, n int, rate float64) []time.Duration {
	sent := make([]time.Time, n)
	got := make(chan []time.Duration, 1)
	go func() {
		var out []time.Duration
		buf := make([]byte, 64)
		for {
			_ = cli.SetReadDeadline(time.Now().Add(2 * time.Second))
			k, err := cli.Read(buf)
			if err != nil || k < 4 {
				got <- out
				return
			}
			i := binary.BigEndian.Uint32(buf)
			if int(i) < n {
				out = append(out, time.Since(sent[i]))
			}
		}
	}()
	t0 := time.Now()
	var msg [16]byte
	for i := range n {
		at := t0.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		time.Sleep(time.Until(at))
		sent[i] = time.Now()
		binary.BigEndian.PutUint32(msg[:], uint32(i))
		_, _ = cli.Write(msg[:])
	}
	return <-got
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// The delayer holds every queued packet for the delay: on lo, a request
// and its reply both leave through OUTPUT, so the round trip grows by
// twice the delay. Measured at 2000 datagrams/s (4000 packets/s through
// the queue); the revert removes the rule and the delay with it.
func TestDelayerAddsTheDelay(t *testing.T) {
	ns := needNetns(t)
	cli := echo(t, ns)
	before := median(rtts(cli, 200, 2000))
	const delay = 10 * time.Millisecond
	d, err := StartDelayer(QueueSpec{NS: ns, Queue: 7, Match: []string{"-o", "lo", "-p", "udp"}, Delay: delay})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Revert()
	got := rtts(cli, 2000, 2000)
	during := median(got)
	st := d.Stats()
	added := during - before
	t.Logf("median RTT %v before, %v with delay %v (added %v, want %v); %d of 2000 back; %+v", before, during, delay, added, 2*delay, len(got), st)
	// No packet is released early; how late is a measurement of the
	// machine (docs/benchmarks.md), bounded here only to catch a delayer
	// that does not release.
	if len(got) < 1900 {
		t.Errorf("only %d of 2000 datagrams came back", len(got))
	}
	if added < 2*delay || added > 2*delay+250*time.Millisecond {
		t.Errorf("added %v to the median RTT, want at least %v", added, 2*delay)
	}
	if err := d.Revert(); err != nil {
		t.Fatal(err)
	}
	if d.Installed() {
		t.Error("the rule's chain is still listed after the revert")
	}
	// A delayer still in the path would add twice the delay; the machine's
	// load adds milliseconds (2.3 ms seen under -race at load 14).
	after := median(rtts(cli, 200, 2000))
	if after >= before+delay {
		t.Errorf("median RTT %v after the revert, %v before: the delay of %v each way is still there", after, before, delay)
	}
	if st := d.Stats(); st.Held != 0 || st.Accepted != st.Seen-st.Dropped {
		t.Errorf("after revert: %+v, want nothing held and every packet accepted", st)
	}
}

// A flaky link drops the packets of its down periods and passes the
// others.
func TestDelayerFlakyDropsInDownPeriods(t *testing.T) {
	ns := needNetns(t)
	cli := echo(t, ns)
	d, err := StartDelayer(QueueSpec{NS: ns, Queue: 8, Match: []string{"-o", "lo", "-p", "udp"}, Up: 100 * time.Millisecond, Down: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Revert()
	got := rtts(cli, 1000, 1000) // 1 s: five up and five down periods
	st := d.Stats()
	t.Logf("%d of 1000 back; %+v", len(got), st)
	if st.Dropped == 0 || len(got) == 0 || len(got) > 800 {
		t.Errorf("%d of 1000 back, %d dropped: want about half through", len(got), st.Dropped)
	}
	if err := d.Revert(); err != nil {
		t.Fatal(err)
	}
	if back := rtts(cli, 100, 1000); len(back) != 100 {
		t.Errorf("%d of 100 back after the revert", len(back))
	}
}

func TestQueueSpecValidate(t *testing.T) {
	bad := []QueueSpec{
		{Match: []string{"-o", "eth0"}},
		{Delay: time.Millisecond},
		{Delay: -1, Match: []string{"x"}},
		{Down: time.Second, Match: []string{"x"}},
		{Delay: time.Millisecond, Match: []string{"x"}, MaxHeld: -1},
	}
	for _, s := range bad {
		if s.Validate() == nil {
			t.Errorf("%+v accepted", s)
		}
	}
}

func TestParsePackets(t *testing.T) {
	q := &nfq{queue: 3}
	var hdr [7]byte
	binary.BigEndian.PutUint32(hdr[:], 42)
	b := q.message(nil, nfqnlMsgPacket, 0, attr(attr(nil, 9, []byte{1, 2, 3}), nfqaPacketHdr, hdr[:]))
	binary.BigEndian.PutUint32(hdr[:], 43)
	b = q.message(b, nfqnlMsgPacket, 0, attr(nil, nfqaPacketHdr|0x4000, hdr[:]))
	ids, err := parsePackets(b, nil)
	if err != nil || !slices.Equal(ids, []uint32{42, 43}) {
		t.Errorf("ids %v, err %v", ids, err)
	}
	if _, err := parsePackets(b[:len(b)-3], nil); err == nil || !strings.Contains(err.Error(), "length") {
		t.Errorf("truncated: %v", err)
	}
}

// FuzzParsePackets: the decoder of what the kernel sends never panics,
// and never reports more ids than messages fit in the input.
func FuzzParsePackets(f *testing.F) {
	q := &nfq{queue: 1}
	var hdr [7]byte
	binary.BigEndian.PutUint32(hdr[:], 7)
	f.Add(q.message(nil, nfqnlMsgPacket, 0, attr(nil, nfqaPacketHdr, hdr[:])))
	f.Add(q.message(nil, nfqnlMsgVerdict, 0, nil))
	f.Add([]byte{})
	f.Add(make([]byte, 20))
	f.Fuzz(func(t *testing.T, b []byte) {
		ids, _ := parsePackets(b, nil)
		if len(ids) > len(b)/(nlmsgHdrLen+nfgenHdrLen+4+7) {
			t.Errorf("%d ids from %d bytes", len(ids), len(b))
		}
		_, _ = ackOf(b)
	})
}

// A full queue fails open: beyond MaxHeld held packets, the kernel lets
// packets pass undelayed instead of dropping them.
func TestDelayerFailsOpenWhenFull(t *testing.T) {
	ns := needNetns(t)
	cli := echo(t, ns)
	const delay = 300 * time.Millisecond
	d, err := StartDelayer(QueueSpec{NS: ns, Queue: 9, Match: []string{"-o", "lo", "-p", "udp"}, Delay: delay, MaxHeld: 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Revert()
	got := rtts(cli, 400, 4000) // 100 ms: far more than 20 packets due within the delay
	fast := 0
	for _, r := range got {
		if r < delay {
			fast++
		}
	}
	t.Logf("%d of 400 back, %d faster than the delay; %+v", len(got), fast, d.Stats())
	if len(got) != 400 {
		t.Errorf("%d of 400 back: a full queue must not drop", len(got))
	}
	if fast == 0 {
		t.Error("no packet passed undelayed: the full queue did not fail open")
	}
}
