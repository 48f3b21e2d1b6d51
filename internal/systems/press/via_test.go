package press

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

var viaModes = []Mode{Via0, Via3, Via5}

// breakConns tells every live node that its connections to id broke, as a
// VIA node learns at once when a peer process dies.
func (m *memNet) breakConns(id int, why string) {
	for _, o := range m.ids {
		if o != id && m.cores[o] != nil {
			m.cores[o].PeerDown(id, why)
			m.collect(o)
		}
	}
	m.settle()
}

func (m *memNet) hasEvent(sub string) bool {
	return slices.ContainsFunc(m.events, func(e string) bool { return strings.Contains(e, sub) })
}

func TestVIAConnectionBreakReconfiguresAtOnceAndRestartRejoins(t *testing.T) {
	for _, mode := range viaModes {
		t.Run(mode.String(), func(t *testing.T) {
			m := newMemNet(t, mode, 4, 8)
			for _, id := range m.ids {
				m.wantMembers(id, 1, 2, 3, 4)
			}
			m.serve(2, 11) // node 2 caches page 11
			_, _, req, fwd := m.cores[1].Serve(11)
			m.collect(1)
			if !fwd {
				t.Fatal("page cached at node 2 was not forwarded")
			}
			m.crash(2)
			m.settle()
			// No tick passes: the broken connection alone reconfigures, and
			// the forward waiting on node 2 ends on the page set.
			m.breakConns(2, "EOF")
			for _, id := range []int{1, 3, 4} {
				m.wantMembers(id, 1, 3, 4)
			}
			if i := slices.IndexFunc(m.done[1], func(c Completion) bool { return c.ReqID == req }); i < 0 || m.done[1][i].Source != FromDisk {
				t.Fatalf("forward to the crashed node not failed over at once: %+v", m.done[1])
			}
			if !m.hasEvent("1 disconnect 2") {
				t.Fatalf("node 1 did not close its connections to node 2: %v", m.events)
			}
			// The restarted node reconnects and is sent everyone's cache.
			m.start(2, 8)
			m.settle()
			for _, id := range m.ids {
				m.wantMembers(id, 1, 2, 3, 4)
			}
			if m.cores[2].dir[11] == 0 {
				t.Fatalf("restarted node 2 learnt nothing of page 11 (cached at node 1 by the failover)")
			}
		})
	}
}

func TestVIAHungPeerBreaksConnectionAfterCreditTimeout(t *testing.T) {
	m := newMemNet(t, Via0, 4, 8)
	m.hung[4] = true
	m.tick(viaCreditTicks)
	m.wantMembers(1, 1, 2, 3, 4) // within the credit timeout
	m.tick(1)
	for _, id := range []int{1, 2, 3} {
		m.wantMembers(id, 1, 2, 3)
	}
	// Resumed, node 4 finds its connections broken (closed at the other
	// ends) and carries on alone: the same incarnation is not let back in.
	m.resume(4)
	for _, id := range []int{1, 2, 3} {
		m.cores[4].PeerDown(id, "closed by peer")
	}
	m.collect(4)
	m.tick(3)
	m.wantMembers(4, 4)
	m.wantMembers(1, 1, 2, 3)
}

func TestVIAPartitionNeverMergesUntilRestart(t *testing.T) {
	m := newMemNet(t, Via3, 4, 8)
	m.partition([]int{1, 2, 3}, []int{4})
	m.tick(viaCreditTicks + 1)
	m.wantMembers(1, 1, 2, 3)
	m.wantMembers(4, 4)
	m.heal()
	m.tick(5)
	m.wantMembers(1, 1, 2, 3)
	m.wantMembers(4, 4)
	m.start(4, 8) // the operator restarts the singleton
	m.tick(1)
	for _, id := range m.ids {
		m.wantMembers(id, 1, 2, 3, 4)
	}
}

func TestVIABadParamFailsFast(t *testing.T) {
	for _, tc := range []struct {
		mode       Mode
		sender, rx bool
	}{
		{Perf, false, false}, {HA, false, false}, {Robust, false, false},
		{Via0, true, false}, {Via3, true, true}, {Via5, true, true},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			m := newMemNet(t, tc.mode, 3, 8)
			m.tick(1)
			m.cores[1].SendFailed(2, string(BadParamNull))
			r := m.cores[1].Ready()
			if got := r.Fatal != ""; got != tc.sender {
				t.Fatalf("sender fatal = %q, want fatal %v", r.Fatal, tc.sender)
			}
			for _, e := range r.Msgs {
				m.inbox = append(m.inbox, envelopeFrom{from: 1, Envelope: e})
			}
			m.settle()
			if got := m.cores[2].Failed() != ""; got != tc.rx {
				t.Fatalf("receiver failed = %q, want failed %v", m.cores[2].Failed(), tc.rx)
			}
			if m.cores[3].Failed() != "" {
				t.Fatalf("a node outside the remote write failed: %s", m.cores[3].Failed())
			}
		})
	}
}

func TestVIA5PinShortageDropsCachedFiles(t *testing.T) {
	for _, mode := range []Mode{Via3, Via5} {
		t.Run(mode.String(), func(t *testing.T) {
			m := newMemNet(t, mode, 3, 8)
			for f := uint32(1); f <= 8; f++ {
				m.serve(1, f)
			}
			m.cores[1].SetPinLimit(2)
			m.collect(1)
			m.settle()
			want := 8
			if mode == Via5 {
				want = 2
			}
			if got := m.cores[1].CacheLen(); got != want {
				t.Fatalf("cache after pin shortage = %d pages, want %d", got, want)
			}
			if mode != Via5 {
				return
			}
			// The peers learnt of the drop: page 1 is read from the page
			// set, not forwarded to node 1.
			if _, src, _ := m.serve(2, 1); src != FromDisk {
				t.Fatalf("dropped page served from %v, want disk", src)
			}
			m.serve(1, 20)
			if got := m.cores[1].CacheLen(); got > 2 {
				t.Fatalf("cache grew to %d pages during the shortage", got)
			}
			m.cores[1].SetPinLimit(0)
			for f := uint32(30); f < 40; f++ {
				m.serve(1, f)
			}
			if got := m.cores[1].CacheLen(); got != 8 {
				t.Fatalf("cache after the shortage = %d pages, want 8", got)
			}
		})
	}
}

// Communication buffers are allocated once, at start, in every VIA version
// (and in robust): mem-alloc-fail, which stalls perf's and ha's sends and
// receives, has nothing to act on there (TestClusterVIA shows it on running
// nodes of all three VIA modes).
func TestMemAllocFailActsOnlyWherePerMessageBuffers(t *testing.T) {
	for _, tc := range []struct {
		mode    Mode
		stalled bool
	}{{Perf, true}, {HA, true}, {Robust, false}, {Via0, false}, {Via3, false}, {Via5, false}} {
		if got := !tc.mode.Preallocated(); got != tc.stalled {
			t.Errorf("%s: mem-alloc-fail stalls messaging = %v, want %v", tc.mode, got, tc.stalled)
		}
	}
}

// TestClusterVIA runs real via nodes over faultnet: a crashed node is
// dropped as soon as its connections break, mem-alloc-fail changes nothing,
// and a bad parameter stops the sender (via0) or both ends (via3).
func TestClusterVIA(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets")
	}
	withControl := func(cfg *Config) {
		cfg.ControlAddr = freeAddr(t, fmt.Sprintf("127.0.0.%d", 20+cfg.Node))
		cfg.ControlToken = "tok"
		cfg.Heartbeat = time.Second // detection below must come from the broken connection, not the credit timeout
	}
	post := func(c *testCluster, id int, spec string) {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+c.cfgs[id].ControlAddr+"/faults", strings.NewReader(spec))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := c.client.Do(req)
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("inject %s: %v %v", spec, resp, err)
		}
		resp.Body.Close()
	}
	t.Run("crash/via0", func(t *testing.T) {
		c := newTestCluster(t, Via0, 3, withControl)
		c.waitMembers(1, []int{1, 2, 3}, 5*time.Second)
		c.crash(3)
		c.waitMembers(1, []int{1, 2}, 900*time.Millisecond) // less than one heartbeat
		c.start(3)
		c.waitHealthy(3)
		c.waitMembers(1, []int{1, 2, 3}, 5*time.Second)
		c.waitMembers(3, []int{1, 2, 3}, 5*time.Second)
	})
	for _, mode := range viaModes {
		t.Run("mem-alloc-fail/"+mode.String(), func(t *testing.T) {
			c := newTestCluster(t, mode, 3, withControl)
			c.waitMembers(1, []int{1, 2, 3}, 5*time.Second)
			post(c, 2, `{"type":"mem-alloc-fail","duration":"3s"}`)
			for p := 0; p < 30; p++ { // node 2 reads, caches and tells its peers; they forward to it
				c.wantOK(2, p)
				c.wantOK(1, p)
			}
			if got := c.members(1); !slices.Equal(got, []int{1, 2, 3}) {
				t.Fatalf("%s lost node 2 under mem-alloc-fail: %v", mode, got)
			}
		})
	}
	for _, tc := range []struct {
		mode Mode
		gone []int
	}{{Via0, []int{2}}, {Via3, []int{2, 1}}} {
		t.Run("bad-param-null/"+tc.mode.String(), func(t *testing.T) {
			c := newTestCluster(t, tc.mode, 2, withControl)
			c.waitMembers(1, []int{1, 2}, 5*time.Second)
			c.waitMembers(2, []int{1, 2}, 5*time.Second)
			post(c, 2, `{"type":"bad-param-null","duration":"5s"}`)
			c.get(2, 7) // node 2 reads page 7 and tells node 1: the faulted send
			deadline := time.Now().Add(5 * time.Second)
			for _, id := range tc.gone {
				for c.nodes[id].ctx.Err() == nil && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if c.nodes[id].ctx.Err() == nil {
					c.mu.Lock()
					defer c.mu.Unlock()
					t.Fatalf("node %d still running after the bad parameter; events:\n%s", id, strings.Join(c.events, "\n"))
				}
			}
			if len(tc.gone) == 1 && c.nodes[1].ctx.Err() != nil {
				t.Fatal("via0: node 1, the receiver, stopped too")
			}
		})
	}
}
