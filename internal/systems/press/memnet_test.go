package press

import (
	"fmt"
	"slices"
	"testing"
)

// memNet runs Cores against each other in memory, like raft's rafttest
// network: messages are delivered only when the test says so, links can be
// cut (messages dropped) and nodes crashed, hung or restarted. Time passes
// only by tick.
type memNet struct {
	t       *testing.T
	mode    Mode
	ids     []int
	cores   map[int]*Core
	inc     map[int]uint32
	inbox   []envelopeFrom
	cut     map[[2]int]bool // from→to drops
	hung    map[int]bool    // receives nothing (held), ticks not
	held    []envelopeFrom
	done    map[int][]Completion
	events  []string
	dropped int
	beats   int
}

type envelopeFrom struct {
	from int
	Envelope
}

func testPage(f uint32) []byte { return []byte(fmt.Sprintf("page-%d", f)) }

func newMemNet(t *testing.T, mode Mode, n, cachePages int) *memNet {
	return newMemNetBeats(t, mode, n, cachePages, 3)
}

func newMemNetBeats(t *testing.T, mode Mode, n, cachePages, missedBeats int) *memNet {
	t.Helper()
	m := &memNet{t: t, mode: mode, beats: missedBeats, cores: map[int]*Core{}, inc: map[int]uint32{}, cut: map[[2]int]bool{},
		hung: map[int]bool{}, done: map[int][]Completion{}}
	for id := 1; id <= n; id++ {
		m.ids = append(m.ids, id)
	}
	for _, id := range m.ids {
		m.start(id, cachePages)
	}
	if mode == Perf {
		for _, id := range m.ids {
			for _, p := range m.ids {
				if p != id {
					m.cores[id].PeerUp(p)
				}
			}
			m.collect(id)
		}
	}
	m.settle()
	return m
}

func (m *memNet) start(id, cachePages int) {
	var peers []int
	for _, p := range m.ids {
		if p != id {
			peers = append(peers, p)
		}
	}
	m.inc[id]++
	c := NewCore(CoreConfig{Node: id, Mode: m.mode, Peers: peers, Incarnation: m.inc[id], CachePages: cachePages,
		MissedBeats: m.beats, BusyConns: 100, ReadPage: testPage})
	m.cores[id] = c
	c.Start()
	m.collect(id)
}

func (m *memNet) collect(id int) {
	r := m.cores[id].Ready()
	for _, e := range r.Msgs {
		m.inbox = append(m.inbox, envelopeFrom{from: id, Envelope: e})
	}
	m.done[id] = append(m.done[id], r.Done...)
	for _, ev := range r.Events {
		m.events = append(m.events, fmt.Sprintf("%d %s %s", id, ev.Kind, ev.Detail))
	}
	for _, p := range r.Disconnect {
		m.events = append(m.events, fmt.Sprintf("%d disconnect %d", id, p))
	}
}

// settle delivers messages until none are in flight (bounded).
func (m *memNet) settle() {
	for i := 0; len(m.inbox) > 0; i++ {
		if i > 100000 {
			m.t.Fatal("memNet: messages never settle")
		}
		e := m.inbox[0]
		m.inbox = m.inbox[1:]
		switch {
		case m.cut[[2]int{e.from, e.To}], m.cores[e.To] == nil:
			m.dropped++
		case m.hung[e.To]:
			m.held = append(m.held, e)
		default:
			m.cores[e.To].Step(e.Msg)
			m.collect(e.To)
		}
	}
}

// tick advances every live, running node by one heartbeat and settles.
func (m *memNet) tick(n int) {
	for range n {
		for _, id := range m.ids {
			if m.cores[id] != nil && !m.hung[id] {
				m.cores[id].Tick()
				m.collect(id)
			}
		}
		m.settle()
	}
}

func (m *memNet) crash(id int) { m.cores[id] = nil }

func (m *memNet) resume(id int) {
	delete(m.hung, id)
	m.inbox = append(m.held, m.inbox...)
	m.held = nil
	m.settle()
}

func (m *memNet) partition(groups ...[]int) {
	g := map[int]int{}
	for i, ids := range groups {
		for _, id := range ids {
			g[id] = i
		}
	}
	for _, a := range m.ids {
		for _, b := range m.ids {
			if g[a] != g[b] {
				m.cut[[2]int{a, b}] = true
			}
		}
	}
}

func (m *memNet) heal() { clear(m.cut) }

func (m *memNet) members(id int) []int { return m.cores[id].Members() }

func (m *memNet) wantMembers(id int, want ...int) {
	m.t.Helper()
	if got := m.members(id); !slices.Equal(got, want) {
		m.t.Fatalf("node %d members = %v, want %v\nevents:\n%v", id, got, want, m.events)
	}
}

// serve asks node id for file; a forward is settled and its completion taken.
func (m *memNet) serve(id int, file uint32) ([]byte, Source, bool) {
	m.t.Helper()
	data, src, req, fwd := m.cores[id].Serve(file)
	m.collect(id)
	if !fwd {
		m.settle()
		return data, src, true
	}
	m.settle()
	for i, c := range m.done[id] {
		if c.ReqID == req {
			m.done[id] = slices.Delete(m.done[id], i, i+1)
			return c.Data, c.Source, true
		}
	}
	return nil, 0, false
}
