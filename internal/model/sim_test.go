package model

import (
	"math"
	"math/rand/v2"
)

// simulateChain runs the chain for the given time and returns the
// time-averaged reward: a deliberately simple reference for the solvers.
func simulateChain(c *Chain, horizon float64, seed uint64) float64 {
	r := rand.New(rand.NewPCG(seed, seed+1))
	s := newSparse(c)
	state := 0
	for i, p := range c.Initial {
		if p > 0 {
			state = i
		}
	}
	t, acc := 0.0, 0.0
	for t < horizon {
		exit := s.exit(state)
		stay := r.ExpFloat64() / exit
		stay = math.Min(stay, horizon-t)
		acc += stay * c.Rewards[state]
		t += stay
		u := r.Float64() * exit
		for _, e := range s.out[state] {
			if u -= e.rate; u <= 0 {
				state = e.to
				break
			}
		}
	}
	return acc / horizon
}
