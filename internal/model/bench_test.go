package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// gridChain is two independent pools of size-1 units each, with per-unit
// failure λ and repair μ: a 2-D chain of size² states, bandwidth size under
// the natural order. Its steady state is a product of binomials.
func gridChain(size int, lambda, mu float64, absorbing bool) *Chain {
	n := size * size
	c := &Chain{States: make([]string, n), Initial: make([]float64, n), Rewards: make([]float64, n)}
	units := size - 1
	if absorbing {
		c.Absorbing = make([]bool, n)
	}
	for i := 0; i < size; i++ {
		for j := 0; j < size; j++ {
			k := i*size + j
			c.States[k] = fmt.Sprintf("a%d-b%d", i, j)
			c.Rewards[k] = float64(2*units - i - j)
			if absorbing && i == units {
				c.Absorbing[k] = true
				continue
			}
			if i < units {
				c.Transitions = append(c.Transitions, Transition{k, k + size, float64(units-i) * lambda})
			}
			if j < units {
				c.Transitions = append(c.Transitions, Transition{k, k + 1, float64(units-j) * lambda})
			}
			if i > 0 {
				c.Transitions = append(c.Transitions, Transition{k, k - size, float64(i) * mu})
			}
			if j > 0 {
				c.Transitions = append(c.Transitions, Transition{k, k - 1, float64(j) * mu})
			}
		}
	}
	c.Initial[0] = 1
	return c
}

func binom(n, k int, p float64) float64 {
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x + 1)); return v }
	return math.Exp(lg(n) - lg(k) - lg(n-k) + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
}

// A 10,000-state stiff chain (rates 1e-4 beside 10) against its closed form.
func TestGrid10kSteadyState(t *testing.T) {
	if testing.Short() {
		t.Skip("10k states")
	}
	const size, lambda, mu = 100, 1e-4, 10.0
	res, err := Solve(gridChain(size, lambda, mu, false))
	if err != nil {
		t.Fatal(err)
	}
	p := lambda / (lambda + mu)
	for _, ij := range [][2]int{{0, 0}, {1, 0}, {2, 3}, {5, 5}} {
		want := binom(size-1, ij[0], p) * binom(size-1, ij[1], p)
		relClose(t, fmt.Sprint(ij), res.SteadyState[fmt.Sprintf("a%d-b%d", ij[0], ij[1])], want, 1e-9)
	}
	relClose(t, "reward", *res.SteadyStateReward, 2*(size-1)*(1-p), 1e-12)
}

// The iterative fallback agrees with the direct solver on chains whose
// rates span two decades (it is slow on stiff ones, which the direct
// solver handles).
func TestIterativeMatchesDirect(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	saved := maxBandCells
	defer func() { maxBandCells = saved }()
	for trial := 0; trial < 10; trial++ {
		c := randomChainSpan(r, 5+r.IntN(40), 2)
		maxBandCells = saved
		direct, err := Solve(c)
		if err != nil {
			t.Fatal(err)
		}
		maxBandCells = 0
		iter, err := Solve(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range c.States {
			relClose(t, s, iter.SteadyState[s], direct.SteadyState[s], 1e-9)
		}
	}
	maxBandCells = 0
	res, err := KofN{N: 3, K: 1, MTTF: 1, MTTR: 0.1}.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	relClose(t, "MTTF", float64(res.MTTF), MTTF3ReplicasRestart(1, 10), 1e-10)
}

// randomSparse is a 10k-state chain with no narrow ordering: a ring plus
// two random edges a state.
func randomSparse(n int) *Chain {
	r := rand.New(rand.NewPCG(9, 9))
	c := &Chain{States: make([]string, n), Initial: make([]float64, n), Rewards: make([]float64, n)}
	for i := 0; i < n; i++ {
		c.States[i] = fmt.Sprint("s", i)
		c.Rewards[i] = float64(i % 7)
		c.Transitions = append(c.Transitions, Transition{i, (i + 1) % n, 1 + r.Float64()})
		for k := 0; k < 2; k++ {
			if j := r.IntN(n); j != i {
				c.Transitions = append(c.Transitions, Transition{i, j, 0.1 + r.Float64()})
			}
		}
	}
	c.Initial[0] = 1
	return c
}

// BenchmarkSteadyState10kGrid: banded GTH on 100×100 states (bandwidth 100).
func BenchmarkSteadyState10kGrid(b *testing.B) {
	c := gridChain(100, 1e-4, 10, false)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Solve(c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMTTA10kGrid: mean time to absorption, pool A exhausted.
func BenchmarkMTTA10kGrid(b *testing.B) {
	c := gridChain(100, 1, 0.1, true)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Solve(c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkKofN10k: a 10,001-state birth–death chain (k-of-n, n=10,000,
// k=1), steady state and MTTF.
func BenchmarkKofN10k(b *testing.B) {
	m := KofN{N: 10000, K: 1, MTTF: 1, MTTR: 1e-3}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Evaluate(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSteadyState10kRandom: no narrow ordering exists, so Gauss–Seidel.
func BenchmarkSteadyState10kRandom(b *testing.B) {
	c := randomSparse(10000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Solve(c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDenseLU2000 is what the banded solver avoids: a dense LU of a
// 2,000-state generator (a 10,000-state one is 125× the work and 800 MB).
func BenchmarkDenseLU2000(b *testing.B) {
	const n = 2000
	c := gridChain(45, 1e-4, 10, false) // 2025 states; only the pattern matters
	q := mat.NewDense(n, n, nil)
	for _, t := range c.Transitions {
		if t.From < n && t.To < n {
			q.Set(t.From, t.To, t.Rate)
			q.Set(t.From, t.From, q.At(t.From, t.From)-t.Rate)
		}
	}
	for j := 0; j < n; j++ {
		q.Set(j, n-1, 1) // normalisation replaces one equation
	}
	b.ReportAllocs()
	for b.Loop() {
		var lu mat.LU
		lu.Factorize(q.T())
	}
}
