package model

import (
	"fmt"
	"math"
)

// Gauss–Seidel is the fallback for chains whose states cannot be ordered
// into a narrow band (random sparse graphs have bandwidth ~n/2 under any
// ordering): memory stays O(transitions). It converges slowly on stiff or
// nearly decomposable chains, so it is bounded and says so when it stops.
const (
	gsMaxSweeps = 100_000
	gsTolerance = 1e-13
)

// ErrNotConverged is returned when the iterative solver runs out of sweeps.
var ErrNotConverged = fmt.Errorf("iterative solver did not converge")

func incoming(s *sparse, subset []int, pos []int) [][]edge {
	in := make([][]edge, len(subset))
	for k, v := range subset {
		for _, e := range s.out[v] {
			if j := pos[e.to]; j >= 0 {
				in[j] = append(in[j], edge{k, e.rate})
			}
		}
	}
	return in
}

// gsSteady solves πQ = 0 over an irreducible subset: π_j = Σ_i π_i q_ij / q_j.
func gsSteady(s *sparse, subset, pos []int) ([]float64, error) {
	m := len(subset)
	in := incoming(s, subset, pos)
	exit := make([]float64, m)
	for k, v := range subset {
		exit[k] = s.exit(v)
	}
	pi := make([]float64, m)
	for k := range pi {
		pi[k] = 1 / float64(m)
	}
	for sweep := 0; sweep < gsMaxSweeps; sweep++ {
		change, total := 0.0, 0.0
		for j := range pi {
			v := 0.0
			for _, e := range in[j] {
				v += pi[e.to] * e.rate
			}
			v /= exit[j]
			change = math.Max(change, math.Abs(v-pi[j])/math.Max(v, 1e-300))
			pi[j] = v
			total += v
		}
		for j := range pi {
			pi[j] /= total
		}
		if change < gsTolerance {
			return pi, nil
		}
	}
	return nil, fmt.Errorf("%w: steady state of %d states after %d sweeps (the chain is too stiff or nearly decomposable for Gauss–Seidel; a narrower ordering would let the direct solver run)", ErrNotConverged, m, gsMaxSweeps)
}

// gsAbsorb solves (−Q_TT)·t = 1: t_i = (1 + Σ_j q_ij t_j) / q_i.
func gsAbsorb(s *sparse, subset, pos []int) ([]float64, error) {
	m := len(subset)
	exit := make([]float64, m)
	for k, v := range subset {
		exit[k] = s.exit(v)
	}
	t := make([]float64, m)
	for sweep := 0; sweep < gsMaxSweeps; sweep++ {
		change := 0.0
		for k, v := range subset {
			x := 1.0
			for _, e := range s.out[v] {
				if j := pos[e.to]; j >= 0 {
					x += e.rate * t[j]
				}
			}
			x /= exit[k]
			change = math.Max(change, math.Abs(x-t[k])/x)
			t[k] = x
		}
		if change < gsTolerance {
			return t, nil
		}
	}
	return nil, fmt.Errorf("%w: mean time to absorption over %d states after %d sweeps", ErrNotConverged, m, gsMaxSweeps)
}
