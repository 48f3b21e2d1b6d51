package model

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// CTMCResult is what `faultbench model ctmc` reports. JSON keys are a contract.
type CTMCResult struct {
	States      []string `json:"states"`
	Irreducible bool     `json:"irreducible"`
	// Notes explain what could not be computed and why (a reducible chain,
	// absorption that never happens).
	Notes []string `json:"notes,omitempty"`
	// SteadyState is the stationary distribution; present when it is unique
	// (one closed class) and the model declares no absorbing states.
	SteadyState       map[string]float64 `json:"steady_state,omitempty"`
	SteadyStateReward *float64           `json:"steady_state_reward,omitempty"`
	// MeanTimeToAbsorption is from the initial distribution, in the rates'
	// time unit; null when absorption is not certain.
	MeanTimeToAbsorption *jsonFloat       `json:"mean_time_to_absorption,omitempty"`
	Transient            []TransientPoint `json:"transient,omitempty"`
}

// TransientPoint is the chain's state at time T.
type TransientPoint struct {
	T             float64            `json:"t"`
	Probabilities map[string]float64 `json:"probabilities"`
	// Reward is Σ p_i(t)·w_i; AccumulatedReward is ∫₀ᵗ of it.
	Reward            *float64 `json:"reward,omitempty"`
	AccumulatedReward *float64 `json:"accumulated_reward,omitempty"`
}

// Solve computes the chain's steady state, mean time to absorption and
// transient points, as far as each is defined.
func Solve(c *Chain) (*CTMCResult, error) {
	s := newSparse(c)
	res := &CTMCResult{States: c.States}
	closed := s.closedClasses()
	res.Irreducible = len(closed) == 1 && len(closed[0]) == s.n
	hasAbsorbing := false
	for _, a := range c.Absorbing {
		hasAbsorbing = hasAbsorbing || a
	}

	switch {
	case hasAbsorbing:
		res.Notes = append(res.Notes, "the chain has absorbing states, so its long run is absorption: steady_state omitted, see mean_time_to_absorption")
	case len(closed) == 1:
		sort.Ints(closed[0]) // keep the file's order: the first state is usually the likeliest
		if !res.Irreducible {
			res.Notes = append(res.Notes, fmt.Sprintf("the chain is not irreducible: states %s are transient; the steady state is unique and zero on them", listStates(c, transientOf(s.n, closed[0]))))
		}
		pi, err := steadyState(s, closed[0])
		if err != nil {
			return nil, err
		}
		res.SteadyState = map[string]float64{}
		for i, p := range pi {
			res.SteadyState[c.States[i]] = p
		}
		if c.Rewards != nil {
			r := dot(pi, c.Rewards)
			res.SteadyStateReward = &r
		}
	default:
		var names []string
		for _, cl := range closed {
			names = append(names, "{"+listStates(c, cl)+"}")
		}
		res.Notes = append(res.Notes, fmt.Sprintf("the chain is not irreducible: it has %d closed classes %s, so the long run depends on where it starts; steady_state omitted (declare absorbing states to get the mean time to absorption)", len(closed), strings.Join(names, " ")))
	}

	if hasAbsorbing {
		t, note, err := meanTimeToAbsorption(s, c)
		if err != nil {
			return nil, err
		}
		if note == "" && math.IsInf(t, 1) {
			note = "the mean time to absorption is beyond 1.8e308 time units (absorption is practically impossible)"
		}
		if note != "" {
			res.Notes = append(res.Notes, note)
		}
		v := jsonFloat(t)
		res.MeanTimeToAbsorption = &v
	}

	if len(c.Times) > 0 {
		pts, err := transient(s, c)
		if err != nil {
			return nil, err
		}
		res.Transient = pts
	}
	return res, nil
}

// steadyState returns the stationary distribution over all states, zero
// outside the closed class.
func steadyState(s *sparse, class []int) ([]float64, error) {
	order, pos, bw := ordering(s, class)
	var local []float64
	if b, err := newBand(s, order, pos, bw, nil); err == nil {
		local = gthSteady(b)
	} else if local, err = gsSteady(s, order, pos); err != nil {
		return nil, err
	}
	pi := make([]float64, s.n)
	for k, v := range order {
		pi[v] = local[k]
	}
	return pi, nil
}

// meanTimeToAbsorption is the expected time from the initial distribution
// until an absorbing state is entered. It is +Inf, with a note, when the
// chain can reach a state from which absorption is impossible.
func meanTimeToAbsorption(s *sparse, c *Chain) (float64, string, error) {
	start := make([]bool, s.n)
	for i, p := range c.Initial {
		start[i] = p > 0 && !c.Absorbing[i]
	}
	reachable := s.reach(start, false)
	canAbsorb := s.reach(c.Absorbing, true)
	var subset []int
	for i := 0; i < s.n; i++ {
		if reachable[i] && !c.Absorbing[i] {
			if !canAbsorb[i] {
				return math.Inf(1), fmt.Sprintf("from the initial state the chain can reach %q, from which no absorbing state can be reached: the mean time to absorption is infinite", c.States[i]), nil
			}
			subset = append(subset, i)
		}
	}
	if len(subset) == 0 {
		return 0, "", nil // starts absorbed
	}
	order, pos, bw := ordering(s, subset)
	exit := make([]float64, len(order))
	var times []float64
	if b, err := newBand(s, order, pos, bw, exit); err == nil {
		times = gthAbsorb(b, exit)
	} else if times, err = gsAbsorb(s, order, pos); err != nil {
		return 0, "", err
	}
	mean := 0.0
	for k, v := range order {
		if c.Initial[v] > 0 {
			mean += c.Initial[v] * times[k]
		}
	}
	if math.IsNaN(mean) {
		// Every quantity in the elimination is positive, so NaN can only come
		// from Inf/Inf or 0·Inf: the time overflowed float64.
		mean = math.Inf(1)
	}
	return mean, "", nil
}

func transientOf(n int, class []int) []int {
	in := make([]bool, n)
	for _, v := range class {
		in[v] = true
	}
	var out []int
	for i := 0; i < n; i++ {
		if !in[i] {
			out = append(out, i)
		}
	}
	return out
}

// listStates names up to 10 states.
func listStates(c *Chain, idx []int) string {
	var names []string
	for k, i := range idx {
		if k == 10 {
			names = append(names, fmt.Sprintf("… (%d more)", len(idx)-10))
			break
		}
		names = append(names, c.States[i])
	}
	return strings.Join(names, ", ")
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
