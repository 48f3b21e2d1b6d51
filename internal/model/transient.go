package model

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// denseTransientMax is the largest chain whose transient is computed with a
// dense matrix exponential (Padé with scaling and squaring), which is
// indifferent to stiffness. Larger chains use uniformization, whose cost
// grows with (largest exit rate × t).
const denseTransientMax = 400

// maxUniformizationSteps bounds uniformization's work (each step is one
// sparse vector product); beyond it the point is refused.
const maxUniformizationSteps = 2_000_000

func transient(s *sparse, c *Chain) ([]TransientPoint, error) {
	var pts []TransientPoint
	for _, t := range c.Times {
		var pi []float64
		var acc float64
		var err error
		if s.n <= denseTransientMax {
			pi, acc = transientDense(s, c.Initial, c.Rewards, t)
		} else if pi, acc, err = transientUniform(s, c.Initial, c.Rewards, t); err != nil {
			return nil, err
		}
		p := TransientPoint{T: t, Probabilities: map[string]float64{}}
		for i, v := range pi {
			p.Probabilities[c.States[i]] = v
		}
		if c.Rewards != nil {
			r := dot(pi, c.Rewards)
			p.Reward, p.AccumulatedReward = &r, &acc
		}
		pts = append(pts, p)
	}
	return pts, nil
}

// transientDense exponentiates the augmented generator [[Q, r], [0, 0]]·t:
// its top-left block is e^{Qt} and its top-right column is ∫₀ᵗ e^{Qs}r ds,
// so one exponential gives both p(t) and the accumulated reward.
func transientDense(s *sparse, alpha, rewards []float64, t float64) ([]float64, float64) {
	n := s.n
	m := mat.NewDense(n+1, n+1, nil)
	for i := 0; i < n; i++ {
		for _, e := range s.out[i] {
			m.Set(i, e.to, m.At(i, e.to)+e.rate*t)
			m.Set(i, i, m.At(i, i)-e.rate*t)
		}
		if rewards != nil {
			m.Set(i, n, rewards[i]*t)
		}
	}
	var e mat.Dense
	e.Exp(m)
	pi := make([]float64, n)
	acc := 0.0
	for i, a := range alpha {
		if a == 0 {
			continue
		}
		for j := 0; j < n; j++ {
			pi[j] += a * e.At(i, j)
		}
		acc += a * e.At(i, n)
	}
	clampDistribution(pi)
	return pi, acc
}

// transientUniform computes p(t) = Σ_k Poisson(k; Λt)·αP^k with P = I + Q/Λ,
// and ∫₀ᵗ p(s)·r ds = (1/Λ)·Σ_k P[N > k]·αP^k·r, where N ~ Poisson(Λt).
func transientUniform(s *sparse, alpha, rewards []float64, t float64) ([]float64, float64, error) {
	lambda := 0.0
	for i := 0; i < s.n; i++ {
		lambda = math.Max(lambda, s.exit(i))
	}
	v := append([]float64(nil), alpha...)
	if lambda == 0 || t == 0 {
		acc := 0.0
		if rewards != nil {
			acc = dot(v, rewards) * t
		}
		return v, acc, nil
	}
	lambda *= 1.02 // keep P's diagonal positive
	lt := lambda * t
	steps := int(lt + 10*math.Sqrt(lt) + 50)
	if steps > maxUniformizationSteps {
		return nil, 0, fmt.Errorf("transient at t=%v: the chain's fastest rate × t is %.3g, too stiff for uniformization on %d states (limit %d steps); ask for a smaller t or a chain of at most %d states",
			t, lt, s.n, maxUniformizationSteps, denseTransientMax)
	}
	pi := make([]float64, s.n)
	next := make([]float64, s.n)
	acc := 0.0
	cdf := 0.0
	logLT := math.Log(lt)
	for k := 0; k <= steps; k++ {
		lg, _ := math.Lgamma(float64(k + 1))
		w := math.Exp(-lt + float64(k)*logLT - lg)
		cdf += w
		for i := range v {
			pi[i] += w * v[i]
		}
		if rewards != nil {
			acc += math.Max(0, 1-cdf) * dot(v, rewards) / lambda
		}
		if float64(k) > lt && 1-cdf < 1e-14 {
			break
		}
		// next = v·P
		for i := range next {
			next[i] = v[i]
		}
		for i, es := range s.out {
			if v[i] == 0 {
				continue
			}
			for _, e := range es {
				f := v[i] * e.rate / lambda
				next[e.to] += f
				next[i] -= f
			}
		}
		v, next = next, v
	}
	clampDistribution(pi)
	return pi, acc, nil
}

// clampDistribution removes the round-off negatives an exponential leaves
// in probabilities that are zero, and renormalises.
func clampDistribution(p []float64) {
	sum := 0.0
	for i, v := range p {
		if v < 0 {
			p[i] = 0
		}
		sum += p[i]
	}
	if sum > 0 {
		for i := range p {
			p[i] /= sum
		}
	}
}
