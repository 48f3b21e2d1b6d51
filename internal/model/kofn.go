package model

import (
	"fmt"
	"math"
)

// KofN describes n identical units of which at least k must be up, each
// failing at rate 1/MTTF and repaired at rate 1/MTTR, all exponential and
// independent. Times are in one unit of the caller's choosing.
type KofN struct {
	N, K int
	MTTF float64
	MTTR float64 // 0: no repair
	// SharedRepair means one repair crew: failed units are repaired one at a
	// time (rate μ whatever the number failed). Otherwise each failed unit
	// has its own repair (rate j·μ with j units failed), like replicas that
	// restart themselves (Dumitras and Narasimhan 2005, §3.2).
	SharedRepair bool
	// UnitReward is each up unit's reward (e.g. its throughput); a state's
	// reward is UnitReward × units up, and 0 when the system is down. Zero
	// means 1.
	UnitReward float64
	// StateRewards, when set, replace the rewards per state (len N−K+2).
	StateRewards []float64
	// Names, when set, name the states from all up to down (len N−K+2);
	// otherwise they are up<N>, up<N-1>, ..., down.
	Names []string
}

func (m KofN) validate() error {
	switch {
	case m.N < 1 || m.K < 1 || m.K > m.N:
		return badInput("k-of-n needs 1 ≤ k ≤ n, got k=%d n=%d", m.K, m.N)
	case m.N-m.K+2 > 1_000_000:
		return badInput("k-of-n with n−k = %d gives too many states", m.N-m.K)
	case !(m.MTTF > 0) || math.IsInf(m.MTTF, 0):
		return badInput("mttf must be > 0")
	case m.MTTR < 0 || math.IsNaN(m.MTTR) || math.IsInf(m.MTTR, 0):
		return badInput("mttr must be ≥ 0")
	case m.Names != nil && len(m.Names) != m.N-m.K+2:
		return badInput("k-of-n needs %d state names", m.N-m.K+2)
	case m.StateRewards != nil && len(m.StateRewards) != m.N-m.K+2:
		return badInput("k-of-n needs %d state rewards", m.N-m.K+2)
	}
	return nil
}

// Chain builds the birth–death chain: state j has j units failed
// (j = 0..n−k), and the last state is down (n−k+1 failed). When absorbing,
// down has no way out (for the MTTF); otherwise down is repaired like any
// state (for the availability).
func (m KofN) Chain(absorbing bool) (*Chain, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	lambda := 1 / m.MTTF
	mu := 0.0
	if m.MTTR > 0 {
		mu = 1 / m.MTTR
	}
	unit := m.UnitReward
	if unit == 0 {
		unit = 1
	}
	downIdx := m.N - m.K + 1
	c := &Chain{Initial: make([]float64, downIdx+1), Rewards: make([]float64, downIdx+1)}
	for j := 0; j <= downIdx; j++ {
		name := fmt.Sprintf("up%d", m.N-j)
		if j == downIdx {
			name = "down"
		}
		if m.Names != nil {
			name = m.Names[j]
		}
		c.States = append(c.States, name)
		if j < downIdx {
			c.Rewards[j] = unit * float64(m.N-j)
		}
	}
	if m.StateRewards != nil {
		copy(c.Rewards, m.StateRewards)
	}
	c.Initial[0] = 1
	for j := 0; j < downIdx; j++ {
		c.Transitions = append(c.Transitions, Transition{j, j + 1, float64(m.N-j) * lambda})
	}
	if mu > 0 {
		for j := 1; j <= downIdx; j++ {
			if j == downIdx && absorbing {
				break
			}
			rate := mu
			if !m.SharedRepair {
				rate = float64(j) * mu
			}
			c.Transitions = append(c.Transitions, Transition{j, j - 1, rate})
		}
	}
	if absorbing {
		c.Absorbing = make([]bool, downIdx+1)
		c.Absorbing[downIdx] = true
	}
	return c, nil
}

// KofNResult is what `faultbench model kofn` reports.
type KofNResult struct {
	N            int       `json:"n"`
	K            int       `json:"k"`
	SharedRepair bool      `json:"shared_repair"`
	MTTF         jsonFloat `json:"mttf"` // system mean time to failure from all up (the chain's MTTA)
	// ClosedFormMTTF is the textbook formula where one exists (n=3, k=1 with
	// per-unit repair: Dumitras and Narasimhan's (2005) (2μ²+7μλ+11λ²)/(6λ³); k = n−1: RAID-5's
	// ((2n−1)λ+μ)/(n(n−1)λ²); no repair: Σ 1/(iλ)); absent otherwise.
	ClosedFormMTTF    *float64           `json:"closed_form_mttf,omitempty"`
	Availability      float64            `json:"availability"` // steady-state probability of being up
	SteadyState       map[string]float64 `json:"steady_state"`
	SteadyStateReward float64            `json:"steady_state_reward"`
}

// Evaluate solves both chains of a k-of-n system.
func (m KofN) Evaluate() (*KofNResult, error) {
	absorbing, err := m.Chain(true)
	if err != nil {
		return nil, err
	}
	ra, err := Solve(absorbing)
	if err != nil {
		return nil, err
	}
	res := &KofNResult{N: m.N, K: m.K, SharedRepair: m.SharedRepair, MTTF: *ra.MeanTimeToAbsorption}
	if cf, ok := m.closedFormMTTF(); ok {
		res.ClosedFormMTTF = &cf
	}
	if m.MTTR > 0 {
		repairable, _ := m.Chain(false)
		rr, err := Solve(repairable)
		if err != nil {
			return nil, err
		}
		res.SteadyState = rr.SteadyState
		res.SteadyStateReward = *rr.SteadyStateReward
		res.Availability = 1 - rr.SteadyState[repairable.States[len(repairable.States)-1]]
	} else {
		res.SteadyState = map[string]float64{absorbing.States[len(absorbing.States)-1]: 1}
	}
	return res, nil
}

// closedFormMTTF returns the known formulas, for checking the solver.
func (m KofN) closedFormMTTF() (float64, bool) {
	l := 1 / m.MTTF
	if m.MTTR == 0 {
		// Pure death process: the sum of the sojourn times.
		s := 0.0
		for i := m.K; i <= m.N; i++ {
			s += 1 / (float64(i) * l)
		}
		return s, true
	}
	mu := 1 / m.MTTR
	switch {
	case m.N == 3 && m.K == 1 && !m.SharedRepair:
		return MTTF3ReplicasRestart(l, mu), true
	case m.K == m.N-1 && m.N >= 2:
		n := float64(m.N)
		return ((2*n-1)*l + mu) / (n * (n - 1) * l * l), true
	}
	return 0, false
}

// MTTF3ReplicasRestart is Dumitras and Narasimhan (2005) §3.2's MTTF of three replicas that are
// restarted after a crash: (2μ² + 7μλ + 11λ²) / (6λ³), with λ the fault
// rate and μ the recovery rate.
func MTTF3ReplicasRestart(lambda, mu float64) float64 {
	return (2*mu*mu + 7*mu*lambda + 11*lambda*lambda) / (6 * lambda * lambda * lambda)
}

// RAID5 is Broadwell (2004) Fig. 2's Markov reward model of a RAID-5 array (after
// Kari): n disks, data lost when a second disk fails before the first is
// reconstructed. Rewards are the array's I/O rate when whole and degraded.
type RAID5 struct {
	Disks            int
	MTTF, MTTR       float64
	Normal, Degraded float64 // rewards (e.g. IO/s) of the two up states
}

// KofN is the array as a k-of-n system: n−1 of n disks must be up, one
// reconstruction at a time.
func (r RAID5) KofN() KofN {
	return KofN{N: r.Disks, K: r.Disks - 1, MTTF: r.MTTF, MTTR: r.MTTR, SharedRepair: true,
		Names: []string{"ok", "degraded", "data-loss"}, StateRewards: []float64{r.Normal, r.Degraded, 0}}
}
