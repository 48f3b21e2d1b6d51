package model

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Chain is a continuous-time Markov chain with rewards (MODEL.yaml).
type Chain struct {
	States      []string
	Initial     []float64 // a probability distribution over States
	Transitions []Transition
	Rewards     []float64 // per state; nil when the model has none
	Absorbing   []bool    // per state; nil when the model declares none
	Times       []float64 // transient points, in the rates' time unit
}

// Transition is one rate of the generator; duplicates add up.
type Transition struct {
	From, To int
	Rate     float64
}

// LoadChain reads and validates a MODEL.yaml.
func LoadChain(path string) (*Chain, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &InputError{File: path, Msg: err.Error()}
	}
	return ParseChain(path, data)
}

// ParseChain decodes a MODEL.yaml; file names the input in errors.
func ParseChain(file string, data []byte) (*Chain, error) {
	d := doc{file}
	root, err := d.parse(data)
	if err != nil {
		return nil, err
	}
	m, err := d.fields(root, "", "states", "initial", "transitions", "rewards", "absorbing", "times")
	if err != nil {
		return nil, err
	}
	c := &Chain{}
	sn, ok := m["states"]
	if !ok {
		return nil, d.errf(root, "states", "missing (a list of state names)")
	}
	names, err := d.seq(sn, "states")
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, d.errf(sn, "states", "must name at least one state")
	}
	seen := map[string]bool{}
	for i, n := range names {
		s, err := d.str(n, fmt.Sprintf("states[%d]", i))
		if err != nil {
			return nil, err
		}
		if s == "" || seen[s] {
			return nil, d.errf(n, fmt.Sprintf("states[%d]", i), "state names must be unique and non-empty (%q)", s)
		}
		seen[s] = true
		c.States = append(c.States, s)
	}
	byName := make(map[string]int, len(c.States))
	for i, s := range c.States {
		byName[s] = i
	}
	state := func(n *yaml.Node, key string) (int, error) {
		s, err := d.str(n, key)
		if err != nil {
			return 0, err
		}
		i, ok := byName[s]
		if !ok {
			return 0, d.errf(n, key, "state %q is not declared under states", s)
		}
		return i, nil
	}

	in, ok := m["initial"]
	if !ok {
		return nil, d.errf(root, "initial", "missing (a state, or a distribution {state: probability})")
	}
	c.Initial = make([]float64, len(c.States))
	if in.Kind == yaml.ScalarNode {
		i, err := state(in, "initial")
		if err != nil {
			return nil, err
		}
		c.Initial[i] = 1
	} else {
		if in.Kind != yaml.MappingNode {
			return nil, d.errf(in, "initial", "must be a state or a mapping {state: probability}")
		}
		sum := 0.0
		for i := 0; i+1 < len(in.Content); i += 2 {
			key := "initial." + in.Content[i].Value
			s, err := state(in.Content[i], key)
			if err != nil {
				return nil, err
			}
			p, err := d.float(in.Content[i+1], key)
			if err != nil {
				return nil, err
			}
			if p < 0 || p > 1 {
				return nil, d.errf(in.Content[i+1], key, "a probability must be in [0, 1], got %v", p)
			}
			c.Initial[s] += p
			sum += p
		}
		if sum < 1-1e-9 || sum > 1+1e-9 {
			return nil, d.errf(in, "initial", "probabilities sum to %v, not 1", sum)
		}
	}

	if tn, ok := m["transitions"]; ok {
		items, err := d.seq(tn, "transitions")
		if err != nil {
			return nil, err
		}
		for i, item := range items {
			key := fmt.Sprintf("transitions[%d]", i)
			t, err := d.fields(item, key, "from", "to", "rate")
			if err != nil {
				return nil, err
			}
			for _, k := range []string{"from", "to", "rate"} {
				if t[k] == nil {
					return nil, d.errf(item, key+"."+k, "missing")
				}
			}
			from, err := state(t["from"], key+".from")
			if err != nil {
				return nil, err
			}
			to, err := state(t["to"], key+".to")
			if err != nil {
				return nil, err
			}
			if from == to {
				return nil, d.errf(t["to"], key+".to", "a transition from %q to itself has no meaning in a CTMC", c.States[from])
			}
			rate, err := d.positive(t["rate"], key+".rate")
			if err != nil {
				return nil, err
			}
			c.Transitions = append(c.Transitions, Transition{from, to, rate})
		}
	}

	if rn, ok := m["rewards"]; ok {
		if rn.Kind != yaml.MappingNode {
			return nil, d.errf(rn, "rewards", "must be a mapping {state: reward}")
		}
		c.Rewards = make([]float64, len(c.States))
		for i := 0; i+1 < len(rn.Content); i += 2 {
			key := "rewards." + rn.Content[i].Value
			s, err := state(rn.Content[i], key)
			if err != nil {
				return nil, err
			}
			if c.Rewards[s], err = d.float(rn.Content[i+1], key); err != nil {
				return nil, err
			}
		}
	}

	if an, ok := m["absorbing"]; ok {
		items, err := d.seq(an, "absorbing")
		if err != nil {
			return nil, err
		}
		c.Absorbing = make([]bool, len(c.States))
		for i, item := range items {
			s, err := state(item, fmt.Sprintf("absorbing[%d]", i))
			if err != nil {
				return nil, err
			}
			c.Absorbing[s] = true
		}
		for i, t := range c.Transitions {
			if c.Absorbing[t.From] {
				return nil, d.errf(an, "absorbing", "state %q is absorbing but transitions[%d] leaves it", c.States[t.From], i)
			}
		}
	}

	if tn, ok := m["times"]; ok {
		items, err := d.seq(tn, "times")
		if err != nil {
			return nil, err
		}
		for i, item := range items {
			t, err := d.float(item, fmt.Sprintf("times[%d]", i))
			if err != nil {
				return nil, err
			}
			if t < 0 {
				return nil, d.errf(item, fmt.Sprintf("times[%d]", i), "must be ≥ 0, got %v", t)
			}
			c.Times = append(c.Times, t)
		}
	}
	return c, nil
}

// YAML writes the chain as a MODEL.yaml that ParseChain reads back.
func (c *Chain) YAML() string {
	var b strings.Builder
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	b.WriteString("states: [")
	for i, s := range c.States {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(q(s))
	}
	b.WriteString("]\ninitial: {")
	first := true
	for i, p := range c.Initial {
		if p == 0 {
			continue
		}
		if !first {
			b.WriteString(", ")
		}
		first = false
		fmt.Fprintf(&b, "%s: %s", q(c.States[i]), formatFloat(p))
	}
	b.WriteString("}\ntransitions:\n")
	for _, t := range c.Transitions {
		fmt.Fprintf(&b, "  - {from: %s, to: %s, rate: %s}\n", q(c.States[t.From]), q(c.States[t.To]), formatFloat(t.Rate))
	}
	if c.Rewards != nil {
		b.WriteString("rewards:\n")
		for i, r := range c.Rewards {
			fmt.Fprintf(&b, "  %s: %s\n", q(c.States[i]), formatFloat(r))
		}
	}
	var abs []string
	for i, a := range c.Absorbing {
		if a {
			abs = append(abs, q(c.States[i]))
		}
	}
	if len(abs) > 0 {
		sort.Strings(abs)
		fmt.Fprintf(&b, "absorbing: [%s]\n", strings.Join(abs, ", "))
	}
	if len(c.Times) > 0 {
		var ts []string
		for _, t := range c.Times {
			ts = append(ts, formatFloat(t))
		}
		fmt.Fprintf(&b, "times: [%s]\n", strings.Join(ts, ", "))
	}
	return b.String()
}
