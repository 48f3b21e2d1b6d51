package model

// BridgeChain turns a fault load into a Markov reward model: a state
// "normal" (reward T_n) and, for each fault, one state per stage that
// occurs (reward = the stage's measured throughput), entered in order
// A..G and left at rate 1/duration. Rates are per second.
//
// Only one fault is active at a time in this chain, so its steady-state
// reward equals phase 2's average throughput with denominator mttf+mttr
// exactly, whatever the stage durations' distributions (the steady state of
// such a semi-Markov cycle depends only on the means), and differs from
// Nagaraja et al.'s (2002) mttf denominator by O(W²). With the stage durations
// exponential, its transient is the real transient of that fault model.
func BridgeChain(fl *FaultLoad) *Chain {
	c := &Chain{States: []string{"normal"}, Rewards: []float64{fl.NormalThroughput}}
	for i := range fl.Faults {
		f := &fl.Faults[i]
		rate := fl.rate(f)
		prev := 0
		entry := rate
		for s, st := range EffectiveStages(f) {
			if st.Duration <= 0 {
				continue
			}
			c.States = append(c.States, f.Name+"/"+StageNames[s:s+1])
			c.Rewards = append(c.Rewards, st.Throughput)
			idx := len(c.States) - 1
			c.Transitions = append(c.Transitions, Transition{prev, idx, entry})
			prev, entry = idx, 1/st.Duration
		}
		if prev != 0 {
			c.Transitions = append(c.Transitions, Transition{prev, 0, entry})
		}
	}
	c.Initial = make([]float64, len(c.States))
	c.Initial[0] = 1
	return c
}
