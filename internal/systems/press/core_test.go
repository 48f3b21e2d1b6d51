package press

import (
	"slices"
	"strings"
	"testing"
)

func TestServeFromCacheRemoteAndDisk(t *testing.T) {
	for _, mode := range []Mode{Perf, HA, Robust} {
		t.Run(mode.String(), func(t *testing.T) {
			m := newMemNet(t, mode, 3, 2)
			m.tick(1)
			m.wantMembers(1, 1, 2, 3)
			if d, src, _ := m.serve(1, 7); src != FromDisk || string(d) != "page-7" {
				t.Fatalf("first read: %q from %v", d, src)
			}
			if d, src, ok := m.serve(2, 7); !ok || src != FromRemote || string(d) != "page-7" {
				t.Fatalf("second node: %q from %v (completed %v)", d, src, ok)
			}
			if _, src, _ := m.serve(2, 7); src != FromCache {
				t.Fatalf("third read: from %v, want hit", src)
			}
			// Cache of 2 pages: reading 8 and 9 at node 1 evicts 7 there,
			// and everyone learns it.
			m.serve(1, 8)
			m.serve(1, 9)
			if m.cores[3].dir[7] != bit(2) {
				t.Fatalf("node 3's directory for page 7 = %b, want only node 2", m.cores[3].dir[7])
			}
		})
	}
}

func TestForwardIsLoadAware(t *testing.T) {
	m := newMemNet(t, Robust, 3, 8)
	m.tick(1)
	m.serve(1, 5)
	m.serve(2, 5)
	m.cores[1].SetLoad(50) // node 1 is busy; every message it sends says so
	m.cores[1].Tick()
	m.collect(1)
	m.settle()
	before := m.cores[1].Stats().ForwardsServed
	_, src, ok := m.serve(3, 5)
	if !ok || src != FromRemote {
		t.Fatalf("forward: source %v, completed %v", src, ok)
	}
	if m.cores[2].Stats().ForwardsServed != 1 || m.cores[1].Stats().ForwardsServed != before {
		t.Fatalf("forward went to the busy node: node 1 served %d, node 2 served %d",
			m.cores[1].Stats().ForwardsServed, m.cores[2].Stats().ForwardsServed)
	}
	m.cores[2].SetLoad(500) // above BusyConns: nobody is asked, the page set is read
	m.cores[2].Tick()
	m.collect(2)
	m.settle()
	if _, src, _ := m.serve(3, 5); src != FromCache {
		t.Fatalf("after the forward the page should be cached; got %v", src)
	}
	m.serve(1, 6)
	m.cores[1].SetLoad(500)
	m.cores[1].Tick()
	m.collect(1)
	m.settle()
	if _, src, _ := m.serve(3, 6); src != FromDisk {
		t.Fatalf("busy holder: source %v, want disk", src)
	}
}

func TestHACrashDetectedAfterMissedBeatsAndRestartRejoins(t *testing.T) {
	m := newMemNet(t, HA, 4, 8)
	m.tick(1)
	m.serve(2, 11) // node 2 caches page 11
	m.crash(2)
	// A forward to the dead node waits until the failure is detected.
	_, _, req, fwd := m.cores[1].Serve(11)
	m.collect(1)
	if !fwd {
		t.Fatal("page cached at node 2 was not forwarded")
	}
	m.settle()
	m.tick(2)
	m.wantMembers(1, 1, 2, 3, 4)
	if len(m.done[1]) != 0 {
		t.Fatal("forward completed before the failure was detected")
	}
	m.tick(2)
	m.wantMembers(1, 1, 3, 4)
	m.wantMembers(3, 1, 3, 4)
	m.wantMembers(4, 1, 3, 4)
	if len(m.done[1]) != 1 || m.done[1][0].ReqID != req || m.done[1][0].Source != FromDisk {
		t.Fatalf("pending forward after detection: %+v", m.done[1])
	}
	m.start(2, 8) // restart: Join → the coordinator (node 1) lets it back in
	m.settle()
	m.tick(1)
	for _, id := range []int{1, 2, 3, 4} {
		m.wantMembers(id, 1, 2, 3, 4)
	}
	// The rejoined node learns the others' caches.
	if _, src, _ := m.serve(2, 11); src != FromRemote {
		t.Fatalf("rejoined node: page 11 from %v, want remote (node 1 cached it on fallback)", src)
	}
}

func TestHAPartitionNeverMerges(t *testing.T) {
	m := newMemNet(t, HA, 4, 8)
	m.tick(1)
	m.partition([]int{1, 2}, []int{3, 4})
	m.tick(12)
	m.wantMembers(1, 1, 2)
	m.wantMembers(3, 3, 4)
	m.heal()
	m.tick(20)
	m.wantMembers(1, 1, 2) // Nagaraja et al. (2002) §5.2: no merge once the link is back
	m.wantMembers(4, 3, 4)
}

func TestRobustPartitionMerges(t *testing.T) {
	m := newMemNet(t, Robust, 4, 8)
	m.tick(1)
	m.wantMembers(2, 1, 2, 3, 4)
	m.partition([]int{1, 2}, []int{3, 4})
	m.tick(5)
	m.wantMembers(1, 1, 2)
	m.wantMembers(3, 3, 4)
	m.heal()
	m.tick(1)
	for _, id := range m.ids {
		m.wantMembers(id, 1, 2, 3, 4)
	}
}

func TestHASequenceGapDropsAndForgets(t *testing.T) {
	m := newMemNet(t, HA, 3, 8)
	m.tick(1)
	m.serve(1, 3)
	m.serve(1, 4)
	// A message from 1 to 2 is lost (a full queue while 2 was hung), then
	// traffic resumes: 2 drops the next message and forgets 1's cache.
	m.cut[[2]int{1, 2}] = true
	m.serve(1, 5)
	delete(m.cut, [2]int{1, 2})
	m.serve(1, 6)
	c2 := m.cores[2]
	if c2.Stats().OutOfSequence != 1 {
		t.Fatalf("out-of-sequence drops = %d, want 1", c2.Stats().OutOfSequence)
	}
	if c2.dir[3]&bit(1) != 0 || c2.dir[6]&bit(1) != 0 {
		t.Fatalf("node 2 still trusts node 1's directory after a gap: %v", c2.dir)
	}
	m.tick(1)
	if !slices.ContainsFunc(m.events, func(s string) bool { return s[:2] == "2 " && strings.Contains(s, "system.out_of_sequence") }) {
		t.Fatalf("no out_of_sequence event: %v", m.events)
	}
	// robust has no such trouble: the lost update is just one stale entry.
	r := newMemNet(t, Robust, 3, 8)
	r.tick(1)
	r.cut[[2]int{1, 2}] = true
	r.serve(1, 5)
	delete(r.cut, [2]int{1, 2})
	r.serve(1, 6)
	if r.cores[2].Stats().OutOfSequence != 0 || r.cores[2].dir[6]&bit(1) == 0 {
		t.Fatal("robust dropped a message after a gap")
	}
}

func TestHAHangBeyondBeatsSplintersWithoutMerge(t *testing.T) {
	m := newMemNet(t, HA, 3, 8)
	m.tick(1)
	m.hung[3] = true
	m.tick(5)
	m.wantMembers(1, 1, 2)
	m.resume(3)
	m.tick(10)
	m.wantMembers(1, 1, 2)
	m.wantMembers(3, 3) // the resumed node never learns it was failed; it ends alone
}

func TestPerfConnectionDetectionAndNoRejoin(t *testing.T) {
	m := newMemNet(t, Perf, 3, 8)
	if !m.cores[1].Serving() {
		t.Fatal("perf cluster did not form")
	}
	m.serve(3, 9)
	_, _, _, fwd := m.cores[1].Serve(9)
	m.collect(1)
	if !fwd {
		t.Fatal("not forwarded")
	}
	m.hung[3] = true
	m.settle()
	m.tick(50) // perf has no timers: a hung peer keeps the forward waiting
	if len(m.done[1]) != 0 {
		t.Fatal("perf completed a forward to a hung peer without a timeout")
	}
	m.cores[1].PeerDown(3, "connection reset")
	m.collect(1)
	m.wantMembers(1, 1, 2)
	if len(m.done[1]) != 1 || m.done[1][0].Source != FromDisk {
		t.Fatalf("broken connection did not fail the forward over: %+v", m.done[1])
	}
	if m.cores[1].Welcome(3) || m.cores[1].PeerUp(3) {
		t.Fatal("perf let a removed node back in")
	}
	m.wantMembers(1, 1, 2)
}

func TestRobustTimeoutAndUnreachableFallBack(t *testing.T) {
	m := newMemNet(t, Robust, 3, 8)
	m.tick(1)
	m.serve(3, 9)
	m.hung[3] = true
	_, _, req, fwd := m.cores[1].Serve(9)
	m.collect(1)
	m.settle()
	if !fwd {
		t.Fatal("not forwarded")
	}
	m.cores[1].Timeout(req)
	m.collect(1)
	m.settle()
	if len(m.done[1]) != 1 || m.done[1][0].Source != FromDisk || string(m.done[1][0].Data) != "page-9" {
		t.Fatalf("timeout fallback: %+v", m.done[1])
	}
	m.cores[2].PeerDown(3, "dial refused")
	m.collect(2)
	if _, src, _ := m.serve(2, 9); src != FromRemote {
		t.Fatalf("page 9 now at node 1 too: want remote from 1, got %v", src)
	}
	if m.cores[2].Stats().ForwardsServed != 0 && m.cores[3].Stats().ForwardsServed != 0 {
		t.Fatal("forwarded to an unreachable node")
	}
}

func TestCoreIsDeterministic(t *testing.T) {
	run := func() []string {
		m := newMemNet(t, HA, 4, 3)
		m.tick(1)
		for i := range 40 {
			m.serve(1+i%4, uint32(i*7%11))
		}
		m.crash(3)
		m.tick(6)
		return m.events
	}
	a, b := run(), run()
	if !slices.Equal(a, b) {
		t.Fatalf("two identical runs differ:\n%v\n%v", a, b)
	}
}

// Broadwell (2004) §4.3: a hang shorter than failure detection (here 5 beats) leaves
// the resumed node rounds behind; its heartbeats still count, but its cache
// updates and forwards are dropped as out of sequence, and the others forget
// what it caches — until a join installs a new view.
func TestHAShortHangLeavesNodeOutOfSequence(t *testing.T) {
	m := newMemNetBeats(t, HA, 3, 8, 5)
	m.tick(1)
	m.hung[3] = true
	m.tick(3)
	m.resume(3)
	m.tick(2)
	m.wantMembers(1, 1, 2, 3)
	before := m.cores[1].Stats().OutOfSequence
	m.serve(3, 21) // node 3 reads page 21 and tells everyone; nobody listens
	if m.cores[1].Stats().OutOfSequence == before || m.cores[1].dir[21]&bit(3) != 0 {
		t.Fatalf("node 1 accepted a cache update from a node rounds behind (dir %b)", m.cores[1].dir[21])
	}
	m.tick(10)
	m.wantMembers(1, 1, 2, 3) // not failed: its beats count
	m.serve(3, 22)
	if m.cores[2].dir[22]&bit(3) != 0 {
		t.Fatal("the trouble healed by itself; PRESS-HB needs a restart")
	}
	// Restarting another node (a join) installs a view and resynchronises.
	m.start(2, 8)
	m.settle()
	m.tick(1)
	m.serve(3, 23)
	if m.cores[1].dir[23]&bit(3) == 0 {
		t.Fatal("a new view did not resynchronise the rounds")
	}
}
