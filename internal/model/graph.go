package model

// sparse is a chain's generator as outgoing rates per state, with
// duplicate transitions merged. It is what every solver works on.
type sparse struct {
	n   int
	out [][]edge // out[i]: rates from i, to distinct states ≠ i
}

type edge struct {
	to   int
	rate float64
}

func newSparse(c *Chain) *sparse {
	s := &sparse{n: len(c.States), out: make([][]edge, len(c.States))}
	for _, t := range c.Transitions {
		merged := false
		for k := range s.out[t.From] {
			if s.out[t.From][k].to == t.To {
				s.out[t.From][k].rate += t.Rate
				merged = true
				break
			}
		}
		if !merged {
			s.out[t.From] = append(s.out[t.From], edge{t.To, t.Rate})
		}
	}
	return s
}

// exit is state i's total outgoing rate.
func (s *sparse) exit(i int) float64 {
	r := 0.0
	for _, e := range s.out[i] {
		r += e.rate
	}
	return r
}

// reach marks the states reachable from the marked ones, following edges
// forward, or backward when reverse is set.
func (s *sparse) reach(from []bool, reverse bool) []bool {
	adj := s.out
	if reverse {
		adj = make([][]edge, s.n)
		for i, es := range s.out {
			for _, e := range es {
				adj[e.to] = append(adj[e.to], edge{i, e.rate})
			}
		}
	}
	seen := append([]bool(nil), from...)
	var stack []int
	for i, f := range from {
		if f {
			stack = append(stack, i)
		}
	}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range adj[i] {
			if !seen[e.to] {
				seen[e.to] = true
				stack = append(stack, e.to)
			}
		}
	}
	return seen
}

// closedClasses returns the chain's closed communicating classes (the
// recurrent ones): strongly connected components with no edge leaving them.
// Tarjan's algorithm, iterative so that long chains do not grow the stack.
func (s *sparse) closedClasses() [][]int {
	index := make([]int, s.n)
	low := make([]int, s.n)
	onStack := make([]bool, s.n)
	comp := make([]int, s.n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	var classes [][]int
	next := 0
	type frame struct{ v, e int }
	for root := 0; root < s.n; root++ {
		if index[root] >= 0 {
			continue
		}
		call := []frame{{root, 0}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			if f.e < len(s.out[f.v]) {
				w := s.out[f.v][f.e].to
				f.e++
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{w, 0})
				} else if onStack[w] && index[w] < low[f.v] {
					low[f.v] = index[w]
				}
				continue
			}
			v := f.v
			call = call[:len(call)-1]
			if len(call) > 0 && low[v] < low[call[len(call)-1].v] {
				low[call[len(call)-1].v] = low[v]
			}
			if low[v] == index[v] {
				var members []int
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = len(classes)
					members = append(members, w)
					if w == v {
						break
					}
				}
				classes = append(classes, members)
			}
		}
	}
	var closed [][]int
	for ci, members := range classes {
		isClosed := true
		for _, v := range members {
			for _, e := range s.out[v] {
				if comp[e.to] != ci {
					isClosed = false
				}
			}
		}
		if isClosed {
			closed = append(closed, members)
		}
	}
	return closed
}
