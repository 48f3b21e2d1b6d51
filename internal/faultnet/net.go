package faultnet

import (
	"errors"
	"fmt"
	"sort"
	"sync"
)

// NetOptions configures NewNet.
type NetOptions struct {
	// Seed drives every link's randomness (link i→j gets a seed derived
	// from Seed, i and j).
	Seed int64
	// ListenAddr is where the proxy for link from→to listens (host:port;
	// port 0 for an ephemeral one). Required: the address comes from the
	// backend's plan (testbed.Plan.Proxy), never from this package.
	ListenAddr func(from, to int) string
}

// Net owns one Link per ordered pair of nodes: node i reaches node j through
// Link(i, j), at Addr(i, j). Nodes are named by the ids used as keys of the
// upstream map (faultbench numbers nodes from 1).
type Net struct {
	ids   []int
	links map[[2]int]*Link

	mu     sync.Mutex
	closed bool
}

// NewNet starts len(upstreams)·(len(upstreams)−1) proxies; upstreams maps a
// node id to the address its intra-cluster listener uses. On error every
// proxy already started is closed again.
func NewNet(upstreams map[int]string, opt NetOptions) (*Net, error) {
	if len(upstreams) < 2 {
		return nil, fmt.Errorf("faultnet: a net needs at least 2 nodes, got %d", len(upstreams))
	}
	listen := opt.ListenAddr
	if listen == nil {
		return nil, fmt.Errorf("faultnet: NetOptions.ListenAddr is required (pass the backend's planned proxy address, testbed.Plan.Proxy)")
	}
	n := &Net{links: map[[2]int]*Link{}}
	for id := range upstreams {
		n.ids = append(n.ids, id)
	}
	sort.Ints(n.ids)
	for _, from := range n.ids {
		for _, to := range n.ids {
			if from == to {
				continue
			}
			seed := opt.Seed*1_000_003 + int64(from)*1009 + int64(to)
			l, err := Listen(listen(from, to), upstreams[to], seed)
			if err != nil {
				n.Close()
				return nil, fmt.Errorf("faultnet: link %d→%d: %w", from, to, err)
			}
			n.links[[2]int{from, to}] = l
		}
	}
	return n, nil
}

// Nodes returns the node ids, ascending.
func (n *Net) Nodes() []int { return append([]int(nil), n.ids...) }

// Link returns the proxy that carries node from's connections to node to, or
// nil if there is none.
func (n *Net) Link(from, to int) *Link { return n.links[[2]int{from, to}] }

// Addr is the address node from dials to reach node to ("" if unknown).
func (n *Net) Addr(from, to int) string {
	if l := n.Link(from, to); l != nil {
		return l.Addr()
	}
	return ""
}

// PeersOf maps every other node's id to the address node from must dial to
// reach it: the value for a PRESS node's peer list.
func (n *Net) PeersOf(from int) map[int]string {
	out := map[int]string{}
	for _, to := range n.ids {
		if to != from {
			out[to] = n.Addr(from, to)
		}
	}
	return out
}

// SetLink applies s to the link between a and b in both directions.
func (n *Net) SetLink(a, b int, s State) (revert func(), err error) {
	ab, ba := n.Link(a, b), n.Link(b, a)
	if ab == nil || ba == nil {
		return nil, fmt.Errorf("faultnet: no link between nodes %d and %d (nodes are %v)", a, b, n.ids)
	}
	return n.setMany([]*Link{ab, ba}, s)
}

// SetNode applies s to every link into and out of node id (its NIC fails).
func (n *Net) SetNode(id int, s State) (revert func(), err error) {
	var ls []*Link
	for k, l := range n.links {
		if k[0] == id || k[1] == id {
			ls = append(ls, l)
		}
	}
	if ls == nil {
		return nil, fmt.Errorf("faultnet: node %d is not in the net (nodes are %v)", id, n.ids)
	}
	return n.setMany(ls, s)
}

// SetAll applies s to every link.
func (n *Net) SetAll(s State) (revert func(), err error) {
	var ls []*Link
	for _, l := range n.links {
		ls = append(ls, l)
	}
	return n.setMany(ls, s)
}

// SwitchDown takes every link down in mode (Hold or Cut): the switch died.
func (n *Net) SwitchDown(mode DownMode) (revert func(), err error) {
	return n.SetAll(State{Down: mode})
}

// Partition takes down every link between nodes of different groups. Nodes
// listed in no group form one more group together. A node in two groups is
// an error.
func (n *Net) Partition(groups [][]int, mode DownMode) (revert func(), err error) {
	group := map[int]int{}
	for g, members := range groups {
		for _, id := range members {
			if n.Link(id, n.other(id)) == nil {
				return nil, fmt.Errorf("faultnet: partition group %d names node %d, which is not in the net (nodes are %v)", g+1, id, n.ids)
			}
			if prev, dup := group[id]; dup {
				return nil, fmt.Errorf("faultnet: node %d is in partition groups %d and %d", id, prev+1, g+1)
			}
			group[id] = g
		}
	}
	rest := len(groups)
	var ls []*Link
	for k, l := range n.links {
		ga, ok := group[k[0]]
		if !ok {
			ga = rest
		}
		gb, ok := group[k[1]]
		if !ok {
			gb = rest
		}
		if ga != gb {
			ls = append(ls, l)
		}
	}
	return n.setMany(ls, State{Down: mode})
}

func (n *Net) other(id int) int {
	for _, o := range n.ids {
		if o != id {
			return o
		}
	}
	return id
}

func (n *Net) setMany(ls []*Link, s State) (func(), error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	n.mu.Lock()
	closed := n.closed
	n.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	var reverts []func()
	revertAll := func() {
		for _, r := range reverts {
			r()
		}
	}
	for _, l := range ls {
		r, err := l.Set(s)
		if err != nil {
			revertAll()
			return nil, err
		}
		reverts = append(reverts, r)
	}
	var once sync.Once
	return func() { once.Do(revertAll) }, nil
}

// Close reverts every fault and closes every link, waiting for their
// goroutines. Safe to call twice.
func (n *Net) Close() error {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	var errs []error
	for _, l := range n.links {
		if err := l.Close(); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
