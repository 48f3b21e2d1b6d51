package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

func relClose(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*math.Abs(want) {
		t.Errorf("%s = %.12g, want %.12g (rel err %.2g)", what, got, want, math.Abs(got-want)/math.Abs(want))
	}
}

// Dumitras and Narasimhan (2005) §3.2: MTTF of 3 replicas with restart, against the solver.
func TestKofNMatchesDumitrasNarasimhanFormula(t *testing.T) {
	for _, tc := range []struct{ mttf, mttr float64 }{{1, 0.001}, {1, 1}, {60, 0.05}, {8760, 0.1}, {1, 100}} {
		m := KofN{N: 3, K: 1, MTTF: tc.mttf, MTTR: tc.mttr}
		r, err := m.Evaluate()
		if err != nil {
			t.Fatal(err)
		}
		relClose(t, "MTTF", float64(r.MTTF), MTTF3ReplicasRestart(1/tc.mttf, 1/tc.mttr), 1e-10)
	}
	// The paper's example: 1 fault a minute, 3 active replicas without
	// recovery "add only 50 seconds" to a single replica's MTTF of 60 s.
	r, _ := KofN{N: 3, K: 1, MTTF: 60}.Evaluate()
	relClose(t, "MTTF no repair", float64(r.MTTF), 110, 1e-12)
}

// The paper's 7313 hours at 1 fault per minute: the recovery time that the
// formula needs for it, solved back, must give 7313 h through the chain.
func TestDumitrasNarasimhanExample7313Hours(t *testing.T) {
	lambda := 1.0 / 60 // per second
	want := 7313 * 3600.0
	// 2μ² + 7λμ + 11λ² − 6λ³·want = 0
	a, b, c := 2.0, 7*lambda, 11*lambda*lambda-6*lambda*lambda*lambda*want
	mu := (-b + math.Sqrt(b*b-4*a*c)) / (2 * a)
	r, err := KofN{N: 3, K: 1, MTTF: 60, MTTR: 1 / mu}.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	relClose(t, "MTTF", float64(r.MTTF), want, 1e-9)
	// About 52 ms: the order of the recovery times of the paper's Fig. 4(a).
	if rt := 1 / mu; rt < 0.04 || rt > 0.06 {
		t.Errorf("implied recovery time %.4f s, want about 0.052 s", rt)
	}
}

// Broadwell (2004) Fig. 2: RAID-5 mean time to data loss ((2n−1)λ+μ)/(n(n−1)λ²).
func TestRAID5MTTDL(t *testing.T) {
	for _, disks := range []int{3, 5, 8} {
		r := RAID5{Disks: disks, MTTF: 500000, MTTR: 24, Normal: 400, Degraded: 250}
		c, err := r.KofN().Chain(true)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Solve(c)
		if err != nil {
			t.Fatal(err)
		}
		n, l, mu := float64(disks), 1/500000.0, 1/24.0
		relClose(t, "MTTDL", float64(*res.MeanTimeToAbsorption), ((2*n-1)*l+mu)/(n*(n-1)*l*l), 1e-10)
	}
}

// birthDeath builds a chain 0..n-1 with birth rate b(i) and death rate d(i).
func birthDeath(n int, b, d func(int) float64) *Chain {
	c := &Chain{Initial: make([]float64, n), Rewards: make([]float64, n)}
	for i := 0; i < n; i++ {
		c.States = append(c.States, "s"+itoa(i))
		c.Rewards[i] = float64(i)
		if i+1 < n {
			c.Transitions = append(c.Transitions, Transition{i, i + 1, b(i)}, Transition{i + 1, i, d(i + 1)})
		}
	}
	c.Initial[0] = 1
	return c
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	s := ""
	for ; i > 0; i /= 10 {
		s = string(rune('0'+i%10)) + s
	}
	return s
}

// Birth–death steady state π_i ∝ Π_{j<i} b(j)/d(j+1), including a stiff
// chain whose rates span ten orders of magnitude.
func TestBirthDeathSteadyState(t *testing.T) {
	for name, tc := range map[string]struct {
		n    int
		b, d func(int) float64
	}{
		"mm1":   {50, func(int) float64 { return 0.7 }, func(int) float64 { return 1 }},
		"stiff": {6, func(int) float64 { return 1e-7 }, func(int) float64 { return 1e3 }},
		"mixed": {8, func(i int) float64 { return math.Pow(10, float64(i%5)-3) }, func(i int) float64 { return math.Pow(10, 3-float64(i%7)) }},
	} {
		t.Run(name, func(t *testing.T) {
			c := birthDeath(tc.n, tc.b, tc.d)
			res, err := Solve(c)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]float64, tc.n)
			want[0] = 1
			sum := 1.0
			for i := 1; i < tc.n; i++ {
				want[i] = want[i-1] * tc.b(i-1) / tc.d(i)
				sum += want[i]
			}
			for i := range want {
				// Relative accuracy even for probabilities of 1e-60.
				relClose(t, c.States[i], res.SteadyState[c.States[i]], want[i]/sum, 1e-12)
			}
		})
	}
}

// Two-state transient: p_down(t) = λ/(λ+μ)·(1 − e^{−(λ+μ)t}); accumulated
// reward with w_up = 1 is ∫ p_up.
func TestTwoStateTransient(t *testing.T) {
	l, mu := 0.3, 2.0
	c := &Chain{States: []string{"up", "down"}, Initial: []float64{1, 0},
		Transitions: []Transition{{0, 1, l}, {1, 0, mu}}, Rewards: []float64{1, 0}}
	s := newSparse(c)
	for _, tt := range []float64{0, 0.1, 1, 10} {
		down := l / (l + mu) * (1 - math.Exp(-(l+mu)*tt))
		acc := mu/(l+mu)*tt + l/((l+mu)*(l+mu))*(1-math.Exp(-(l+mu)*tt))
		pd, ad := transientDense(s, c.Initial, c.Rewards, tt)
		pu, au, err := transientUniform(s, c.Initial, c.Rewards, tt)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(pd[1]-down) > 1e-12 || math.Abs(pu[1]-down) > 1e-10 {
			t.Errorf("t=%v: p_down dense %v uniform %v, want %v", tt, pd[1], pu[1], down)
		}
		if math.Abs(ad-acc) > 1e-10 || math.Abs(au-acc) > 1e-9 {
			t.Errorf("t=%v: accumulated dense %v uniform %v, want %v", tt, ad, au, acc)
		}
	}
}

// randomChain draws an irreducible chain: a ring plus random extra edges,
// with rates over several orders of magnitude.
func randomChain(r *rand.Rand, n int) *Chain { return randomChainSpan(r, n, 6) }

// randomChainSpan draws rates over the given number of decades.
func randomChainSpan(r *rand.Rand, n int, decades float64) *Chain {
	c := &Chain{Initial: make([]float64, n), Rewards: make([]float64, n)}
	rate := func() float64 { return math.Pow(10, (r.Float64()-0.5)*decades) }
	for i := 0; i < n; i++ {
		c.States = append(c.States, "s"+itoa(i))
		c.Rewards[i] = r.Float64()*200 - 50
		c.Transitions = append(c.Transitions, Transition{i, (i + 1) % n, rate()})
	}
	for k := 0; k < n; k++ {
		a, b := r.IntN(n), r.IntN(n)
		if a != b {
			c.Transitions = append(c.Transitions, Transition{a, b, rate()})
		}
	}
	c.Initial[r.IntN(n)] = 1
	return c
}

// Properties: probabilities sum to 1 and lie in [0,1]; rewards lie within
// the range of the state rewards; πQ = 0.
func TestSolveProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 60; trial++ {
		n := 2 + r.IntN(30)
		c := randomChain(r, n)
		c.Times = []float64{r.Float64() * 3}
		res, err := Solve(c)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Irreducible {
			t.Fatalf("ring chain reported reducible")
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, w := range c.Rewards {
			lo, hi = math.Min(lo, w), math.Max(hi, w)
		}
		pi := make([]float64, n)
		sum := 0.0
		for i, s := range c.States {
			pi[i] = res.SteadyState[s]
			if pi[i] < 0 || pi[i] > 1 {
				t.Fatalf("π(%s) = %v", s, pi[i])
			}
			sum += pi[i]
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Fatalf("Σπ = %v", sum)
		}
		// Balance: flow out of each state equals flow in.
		flow := make([]float64, n)
		for _, tr := range c.Transitions {
			flow[tr.From] -= pi[tr.From] * tr.Rate
			flow[tr.To] += pi[tr.From] * tr.Rate
		}
		for i, f := range flow {
			if math.Abs(f) > 1e-9*(1+pi[i]*1e3) {
				t.Fatalf("trial %d: πQ[%d] = %v", trial, i, f)
			}
		}
		if w := *res.SteadyStateReward; w < lo-1e-9 || w > hi+1e-9 {
			t.Fatalf("steady reward %v outside [%v, %v]", w, lo, hi)
		}
		tp := res.Transient[0]
		ps := 0.0
		for _, p := range tp.Probabilities {
			ps += p
		}
		if math.Abs(ps-1) > 1e-9 || *tp.Reward < lo-1e-9 || *tp.Reward > hi+1e-9 ||
			*tp.AccumulatedReward < lo*tp.T-1e-6 || *tp.AccumulatedReward > hi*tp.T+1e-6 {
			t.Fatalf("transient out of bounds: Σp=%v reward=%v acc=%v (t=%v, [%v,%v])", ps, *tp.Reward, *tp.AccumulatedReward, tp.T, lo, hi)
		}
	}
}

func TestReducibleChains(t *testing.T) {
	// 0 → 1 ⇄ 2: one closed class {1,2}, state 0 transient.
	c := &Chain{States: []string{"a", "b", "c"}, Initial: []float64{1, 0, 0},
		Transitions: []Transition{{0, 1, 1}, {1, 2, 1}, {2, 1, 3}}}
	res, err := Solve(c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Irreducible || len(res.Notes) == 0 || res.SteadyState["a"] != 0 || math.Abs(res.SteadyState["b"]-0.75) > 1e-12 {
		t.Errorf("got %+v", res)
	}
	// Two closed classes: no steady state, a note.
	c = &Chain{States: []string{"a", "b", "c"}, Initial: []float64{1, 0, 0},
		Transitions: []Transition{{0, 1, 1}, {0, 2, 1}}}
	res, _ = Solve(c)
	if res.SteadyState != nil || len(res.Notes) == 0 {
		t.Errorf("two closed classes: got %+v", res)
	}
	// Absorption that may never happen: MTTA infinite.
	c = &Chain{States: []string{"a", "b", "dead"}, Initial: []float64{1, 0, 0},
		Transitions: []Transition{{0, 1, 1}, {0, 2, 1}}, Absorbing: []bool{false, false, true}}
	res, _ = Solve(c)
	if !math.IsInf(float64(*res.MeanTimeToAbsorption), 1) {
		t.Errorf("MTTA = %v, want +Inf", *res.MeanTimeToAbsorption)
	}
}

// A long birth–death chain solved by the banded path after reordering: the
// states are shuffled so that the natural order has a wide band.
func TestShuffledChainUsesBand(t *testing.T) {
	n := 2000
	c := birthDeath(n, func(int) float64 { return 0.9 }, func(int) float64 { return 1 })
	r := rand.New(rand.NewPCG(3, 4))
	perm := r.Perm(n)
	for i := range c.Transitions {
		c.Transitions[i].From, c.Transitions[i].To = perm[c.Transitions[i].From], perm[c.Transitions[i].To]
	}
	names := make([]string, n)
	for i, p := range perm {
		names[p] = c.States[i]
	}
	c.States = names
	_, _, bw := ordering(newSparse(c), seq(n))
	if bw > 4 {
		t.Errorf("RCM bandwidth %d, want ≤ 4", bw)
	}
	res, err := Solve(c)
	if err != nil {
		t.Fatal(err)
	}
	z := (1 - math.Pow(0.9, float64(n))) / (1 - 0.9)
	relClose(t, "π(s10)", res.SteadyState["s10"], math.Pow(0.9, 10)/z, 1e-10)
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// Probabilities and times beyond float64's range: a 1-of-200 system whose
// failure needs 200 faults before any repair. The steady state must not
// overflow (it is ordered from "all up"), and the MTTF is +Inf with a note.
func TestHugeRatiosDoNotMakeNaN(t *testing.T) {
	m := KofN{N: 200, K: 1, MTTF: 60, MTTR: 1}
	r, err := m.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	p := 1.0 / 61
	relClose(t, "reward", r.SteadyStateReward, 200*(1-p), 1e-12)
	if !math.IsInf(float64(r.MTTF), 1) {
		t.Errorf("MTTF = %v, want +Inf", r.MTTF)
	}
	// The same chain listed from "down" to "all up".
	c, _ := m.Chain(false)
	n := len(c.States)
	for i := range c.Transitions {
		c.Transitions[i].From, c.Transitions[i].To = n-1-c.Transitions[i].From, n-1-c.Transitions[i].To
	}
	for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
		c.States[i], c.States[j] = c.States[j], c.States[i]
		c.Rewards[i], c.Rewards[j] = c.Rewards[j], c.Rewards[i]
	}
	res, err := Solve(c)
	if err != nil {
		t.Fatal(err)
	}
	relClose(t, "reversed reward", *res.SteadyStateReward, 200*(1-p), 1e-12)
}
