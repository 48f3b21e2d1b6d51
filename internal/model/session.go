package model

import (
	"math"
)

// SessionLoss is Ling, Kiciman and Fox (2004) §3.7's model of an SSM session-state object:
// bricks fail as a Poisson process of rate µ each (MTTF 1/µ) and the
// object is rewritten to WQ fresh bricks by writes arriving at rate λ.
// The object is lost when all WQ copies fail before the next write.
// Rho is λ/µ: the brick MTTF over the mean time between writes.
type SessionLoss struct {
	WQ       int       `json:"wq"`
	Rho      float64   `json:"rho"`
	PLoss    float64   `json:"p_loss"`
	PNoLoss  float64   `json:"p_noloss"`
	Nines    jsonFloat `json:"nines"` // −log10(p_loss)
	Equation string    `json:"equation"`
}

// PLoss is the probability that all wq copies fail before the next write:
//
//	P_loss = ∫ λe^{−λt} (1 − e^{−µt})^WQ dt = WQ! / ((ρ+1)(ρ+2)…(ρ+WQ)).
//
// (Expand (1−e^{−µt})^WQ binomially and integrate term by term:
// Σ_j (−1)^j C(WQ,j) ρ/(ρ+j), which is the partial-fraction form of the
// product.) For WQ = 2 and 3, 1 − P_loss is the paper's equations (2) and (1).
func PLoss(wq int, rho float64) float64 {
	p := 1.0
	for j := 1; j <= wq; j++ {
		p *= float64(j) / (rho + float64(j))
	}
	return p
}

// EvaluateSessionLoss reports the loss probability of one configuration.
func EvaluateSessionLoss(wq int, rho float64) (*SessionLoss, error) {
	if wq < 1 || wq > 1000 {
		return nil, badInput("--wq must be between 1 and 1000, got %d", wq)
	}
	if !(rho > 0) || math.IsInf(rho, 0) {
		return nil, badInput("--rho must be > 0, got %v", rho)
	}
	p := PLoss(wq, rho)
	return &SessionLoss{WQ: wq, Rho: rho, PLoss: p, PNoLoss: 1 - p, Nines: jsonFloat(-math.Log10(p)),
		Equation: "p_loss = WQ! / ((rho+1)(rho+2)...(rho+WQ))"}, nil
}

// RhoForNines returns the smallest ρ with P_loss ≤ 10^−nines, by bisection
// (P_loss falls strictly as ρ grows). It is the paper's Table 2.
func RhoForNines(wq int, nines float64) (*SessionLoss, error) {
	if wq < 1 || wq > 1000 {
		return nil, badInput("--wq must be between 1 and 1000, got %d", wq)
	}
	if !(nines > 0) || nines > 300 {
		return nil, badInput("--nines must be in (0, 300], got %v", nines)
	}
	target := math.Pow(10, -nines)
	lo, hi := 0.0, 1.0
	for PLoss(wq, hi) > target {
		hi *= 2
	}
	for i := 0; i < 200 && hi-lo > 1e-12*hi; i++ {
		mid := (lo + hi) / 2
		if PLoss(wq, mid) > target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return EvaluateSessionLoss(wq, hi)
}
