package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Ling, Kiciman and Fox (2004) equations (1) and (2) are the general formula at WQ = 3 and 2.
func TestSessionLossMatchesPaperEquations(t *testing.T) {
	for _, rho := range []float64{0.1, 1, 3, 10, 43.3, 1000} {
		eq2 := rho * (rho + 3) / ((rho + 1) * (rho + 2))
		eq1 := rho * (rho*rho + 6*rho + 11) / ((rho + 1) * (rho + 2) * (rho + 3))
		relClose(t, "WQ=2", 1-PLoss(2, rho), eq2, 1e-12)
		relClose(t, "WQ=3", 1-PLoss(3, rho), eq1, 1e-12)
	}
}

// Ling, Kiciman and Fox (2004) Table 2: the MTTF/write-interval ratio for K nines. The paper's
// numbers are the exact roots rounded up to one decimal, except WQ=2 at
// five nines, where it prints 446.8 and the equation gives 445.7.
func TestSessionLossTable2(t *testing.T) {
	table := map[int][]float64{2: {3, 12.7, 43.3, 140, 446.8}, 3: {2, 6.5, 16.2, 37.2, 82.4}}
	for wq, row := range table {
		for k, paper := range row {
			res, err := RhoForNines(wq, float64(k+1))
			if err != nil {
				t.Fatal(err)
			}
			up := math.Ceil(res.Rho*10-1e-6) / 10
			if wq == 2 && k == 4 {
				if math.Abs(res.Rho-paper)/paper > 0.003 {
					t.Errorf("WQ=2 5 nines: %v, paper %v", res.Rho, paper)
				}
				continue
			}
			if math.Abs(up-paper) > 1e-9 {
				t.Errorf("WQ=%d %d nines: rho %.4f (rounded up %.1f), paper %v", wq, k+1, res.Rho, up, paper)
			}
		}
	}
	// The paper's example: writes every 5 min, WQ=3, three nines: MTTF ≥ 81 min.
	res, _ := RhoForNines(3, 3)
	if m := res.Rho * 5; m < 80.5 || m > 81 {
		t.Errorf("MTTF %v min, paper 81", m)
	}
}

// The formula against a simulation of the process it models.
func TestSessionLossSimulation(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, tc := range []struct {
		wq  int
		rho float64
	}{{1, 2}, {2, 3}, {3, 2}, {4, 1.5}} {
		const trials = 200000
		lost := 0
		for i := 0; i < trials; i++ {
			write := r.ExpFloat64() * 1 // λ = 1
			last := 0.0
			for c := 0; c < tc.wq; c++ {
				last = math.Max(last, r.ExpFloat64()*tc.rho) // µ = 1/ρ
			}
			if last < write {
				lost++
			}
		}
		got := float64(lost) / trials
		want := PLoss(tc.wq, tc.rho)
		if sd := math.Sqrt(want * (1 - want) / trials); math.Abs(got-want) > 5*sd {
			t.Errorf("WQ=%d ρ=%v: simulated %v, formula %v", tc.wq, tc.rho, got, want)
		}
	}
}

// Fig. 5 (ratio 10): each extra copy multiplies p_loss by WQ/(10+WQ),
// from 1/11 with one copy.
func TestSessionLossFig5(t *testing.T) {
	relClose(t, "WQ=1", PLoss(1, 10), 1.0/11, 1e-12)
	for wq := 2; wq <= 8; wq++ {
		relClose(t, "ratio", PLoss(wq, 10)/PLoss(wq-1, 10), float64(wq)/(10+float64(wq)), 1e-12)
	}
}
