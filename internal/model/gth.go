package model

import (
	"errors"
	"fmt"
	"sort"
)

// maxBandCells bounds the band storage of the direct solver (8 bytes a
// cell: 200 MB). A chain whose states cannot be ordered into a band this
// narrow is refused with ErrTooWide rather than swapping the machine.
var maxBandCells = 25_000_000

// ErrTooWide is returned when a chain's generator has no ordering with a
// band narrow enough for the direct solver.
var ErrTooWide = errors.New("chain too wide for the banded solver")

// band is a square matrix stored by diagonals within bw of the main one:
// the generator of a subset of states, in a solver's order.
type band struct {
	m, bw int
	a     []float64
}

func (b *band) at(i, j int) *float64 { return &b.a[i*(2*b.bw+1)+j-i+b.bw] }

// ordering returns the subset states in an order with a small bandwidth —
// as given, or reverse Cuthill–McKee when that is narrower — and the
// bandwidth. local maps a global state to its position, -1 outside subset.
func ordering(s *sparse, subset []int) (order []int, local []int, bw int) {
	local = make([]int, s.n)
	for i := range local {
		local[i] = -1
	}
	for k, v := range subset {
		local[v] = k
	}
	width := func(pos []int) int {
		w := 0
		for _, v := range subset {
			for _, e := range s.out[v] {
				if pos[e.to] < 0 {
					continue
				}
				d := pos[v] - pos[e.to]
				if d < 0 {
					d = -d
				}
				if d > w {
					w = d
				}
			}
		}
		return w
	}
	bw = width(local)
	if bw <= 2 {
		return subset, local, bw
	}
	rcm := reverseCuthillMcKee(s, subset, local)
	pos := make([]int, s.n)
	for i := range pos {
		pos[i] = -1
	}
	for k, v := range rcm {
		pos[v] = k
	}
	if w := width(pos); w < bw {
		return rcm, pos, w
	}
	return subset, local, bw
}

// reverseCuthillMcKee orders the subset's states breadth first from a
// low-degree state, over the undirected graph of the generator.
func reverseCuthillMcKee(s *sparse, subset []int, inSubset []int) []int {
	nb := make(map[int][]int, len(subset))
	for _, v := range subset {
		for _, e := range s.out[v] {
			if inSubset[e.to] >= 0 {
				nb[v] = append(nb[v], e.to)
				nb[e.to] = append(nb[e.to], v)
			}
		}
	}
	visited := make(map[int]bool, len(subset))
	byDegree := append([]int(nil), subset...)
	sort.SliceStable(byDegree, func(i, j int) bool { return len(nb[byDegree[i]]) < len(nb[byDegree[j]]) })
	var order []int
	for _, start := range byDegree {
		if visited[start] {
			continue
		}
		visited[start] = true
		queue := []int{start}
		for len(queue) > 0 {
			v := queue[0]
			queue = queue[1:]
			order = append(order, v)
			next := []int{}
			for _, w := range nb[v] {
				if !visited[w] {
					visited[w] = true
					next = append(next, w)
				}
			}
			sort.Slice(next, func(i, j int) bool { return len(nb[next[i]]) < len(nb[next[j]]) })
			queue = append(queue, next...)
		}
	}
	for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
		order[i], order[j] = order[j], order[i]
	}
	return order
}

// newBand fills the band with the off-diagonal rates among the subset, in
// the given order; rates to states outside the subset are added to toOutside.
func newBand(s *sparse, order, pos []int, bw int, toOutside []float64) (*band, error) {
	m := len(order)
	if cells := m * (2*bw + 1); cells > maxBandCells || cells < 0 {
		return nil, fmt.Errorf("%w: %d states with bandwidth %d after reordering need %d MB; split the model or make it sparser",
			ErrTooWide, m, bw, int64(m)*int64(2*bw+1)*8>>20)
	}
	b := &band{m: m, bw: bw, a: make([]float64, m*(2*bw+1))}
	for k, v := range order {
		for _, e := range s.out[v] {
			if j := pos[e.to]; j >= 0 {
				*b.at(k, j) += e.rate
			} else if toOutside != nil {
				toOutside[k] += e.rate
			}
		}
	}
	return b, nil
}

// gthSteady returns the stationary distribution of the irreducible chain in
// b by the Grassmann–Taksar–Heyman algorithm: Gaussian elimination in which
// every diagonal is recomputed as a sum of off-diagonal rates, so no
// subtraction happens and stiff chains (rates 1e-7 beside 1e3) keep full
// relative accuracy. b is overwritten. Cost m·bw², memory m·(2bw+1).
func gthSteady(b *band) []float64 {
	m, bw := b.m, b.bw
	sums := make([]float64, m)
	for k := m - 1; k > 0; k-- {
		lo := max(0, k-bw)
		s := 0.0
		for j := lo; j < k; j++ {
			s += *b.at(k, j)
		}
		sums[k] = s
		if s == 0 {
			continue // cannot happen for an irreducible chain
		}
		for i := lo; i < k; i++ {
			f := *b.at(i, k) / s
			if f == 0 {
				continue
			}
			for j := lo; j < k; j++ {
				if j != i {
					*b.at(i, j) += f * *b.at(k, j)
				}
			}
		}
	}
	pi := make([]float64, m)
	pi[0] = 1
	total := 1.0
	for k := 1; k < m; k++ {
		v := 0.0
		for i := max(0, k-bw); i < k; i++ {
			v += pi[i] * *b.at(i, k)
		}
		if sums[k] > 0 {
			v /= sums[k]
		}
		pi[k] = v
		total += v
		if total > 1e200 {
			// State 0 may be 10^-300 as likely as later ones (a k-of-n chain
			// ordered from "down"): rescale before the sum overflows.
			for i := 0; i <= k; i++ {
				pi[i] /= total
			}
			total = 1
		}
	}
	for k := range pi {
		pi[k] /= total
	}
	return pi
}

// gthAbsorb returns, for every state of b, the expected time until the
// chain leaves the subset, where exitRate[k] is state k's rate out of it.
// It is the same subtraction-free elimination as gthSteady, applied to
// (−Q_TT)·m = 1. Every state must be able to leave. b and exitRate are
// overwritten.
func gthAbsorb(b *band, exitRate []float64) []float64 {
	m, bw := b.m, b.bw
	rhs := make([]float64, m)
	for i := range rhs {
		rhs[i] = 1
	}
	sums := make([]float64, m)
	for k := m - 1; k >= 0; k-- {
		lo := max(0, k-bw)
		s := exitRate[k]
		for j := lo; j < k; j++ {
			s += *b.at(k, j)
		}
		sums[k] = s
		for i := lo; i < k; i++ {
			f := *b.at(i, k) / s
			if f == 0 {
				continue
			}
			for j := lo; j < k; j++ {
				if j != i {
					*b.at(i, j) += f * *b.at(k, j)
				}
			}
			exitRate[i] += f * exitRate[k]
			rhs[i] += f * rhs[k]
		}
	}
	t := make([]float64, m)
	for k := 0; k < m; k++ {
		v := rhs[k]
		for j := max(0, k-bw); j < k; j++ {
			if q := *b.at(k, j); q != 0 {
				v += q * t[j] // skipping zeros keeps an overflowed t[j] from making NaN
			}
		}
		t[k] = v / sums[k]
	}
	return t
}
