package operator

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/law"
	"github.com/faultbench/faultbench/internal/scenario"
)

// Policies.
const (
	RestartFailed = "restart-failed"
	RestartAll    = "restart-all"
	RebootNode    = "reboot-node"
	None          = "none"
)

// Config is the operator of a scenario.
type Config struct {
	DetectAfter time.Duration // 0: never notices
	Policy      string        // restart-failed | restart-all | reboot-node | none ("" = none)
	ActionTime  time.Duration // how long an action takes from begin to done
	Response    law.Law       // extra delay between detection and action; zero Law: none
	Boot        time.Duration // reboot-node: added to ActionTime
}

// FromScenario builds a Config from the scenario's operator section and the
// cluster's boot time; errors name the key.
func FromScenario(op scenario.Operator, boot time.Duration) (Config, error) {
	c := Config{DetectAfter: op.DetectAfter.Duration, Policy: op.Policy, ActionTime: op.ActionTime.Duration, Boot: boot}
	if op.Response != "" {
		l, err := law.Parse(op.Response)
		if err != nil {
			return Config{}, fmt.Errorf("operator.response: %w", err)
		}
		if l.Name != "fixed" && l.Name != "exponential" {
			return Config{}, fmt.Errorf("operator.response: %s: want fixed(D) or exponential(MEAN)", l)
		}
		c.Response = l
	}
	return c, c.Validate()
}

// Validate checks the config; errors name the scenario key.
func (c Config) Validate() error {
	switch c.Policy {
	case "", None, RestartFailed, RestartAll, RebootNode:
	default:
		return fmt.Errorf("operator.policy: %q: want restart-failed, restart-all, reboot-node or none", c.Policy)
	}
	if c.DetectAfter < 0 {
		return fmt.Errorf("operator.detect_after: negative duration %v", c.DetectAfter)
	}
	if c.ActionTime < 0 {
		return fmt.Errorf("operator.action_time: negative duration %v", c.ActionTime)
	}
	return nil
}

// StepKind is what a Step asks for.
type StepKind uint8

const (
	Detect StepKind = iota // the operator notices Fault
	Begin                  // the action's disruptive step on Nodes
	Done                   // the action's restoring step on Nodes; then the faults on Nodes are repaired
)

func (k StepKind) String() string { return [...]string{"detect", "begin", "done"}[k] }

// Step is one thing the operator does.
type Step struct {
	At     time.Duration // when it was due
	Kind   StepKind
	Policy string
	Nodes  []int            // Begin, Done: the nodes acted on
	Fault  fault.Occurrence // the fault noticed, or that led to the action
	Busy   bool             // Detect: a repair of this node is already under way, no new action
	Idle   bool             // Detect: the policy cannot act on this fault (no single node)
}

// Machine is the operator's deterministic state machine. It is not safe for
// concurrent use; Operator serialises access.
type Machine struct {
	cfg   Config
	nodes int
	rng   *rand.Rand

	queue     []Step       // pending, sorted by At, ties in insertion order
	repairing map[int]bool // node under repair, from Begin scheduled to Done
}

// NewMachine returns the operator of a cluster of nodes nodes; rng draws
// response times and should be the operator's own stream of the seed.
func NewMachine(cfg Config, nodes int, rng *rand.Rand) *Machine {
	return &Machine{cfg: cfg, nodes: nodes, rng: rng, repairing: map[int]bool{}}
}

func (m *Machine) push(s Step) {
	i := len(m.queue)
	for i > 0 && m.queue[i-1].At > s.At {
		i--
	}
	m.queue = slices.Insert(m.queue, i, s)
}

func (m *Machine) acts() bool {
	return m.cfg.Policy != "" && m.cfg.Policy != None && m.cfg.DetectAfter > 0
}

// Injected tells the machine a fault was injected at now.
func (m *Machine) Injected(now time.Duration, o fault.Occurrence) {
	if !m.acts() || o.Instant {
		return
	}
	m.push(Step{At: now + m.cfg.DetectAfter, Kind: Detect, Policy: m.cfg.Policy, Fault: o})
}

// Cleared tells the machine a fault cleared at now; a detection still
// pending for it is dropped.
func (m *Machine) Cleared(now time.Duration, o fault.Occurrence) {
	for i := 0; i < len(m.queue); i++ {
		if m.queue[i].Kind == Detect && m.queue[i].Fault.ID == o.ID {
			m.queue = slices.Delete(m.queue, i, i+1)
			i--
		}
	}
}

// Next is when the next step is due; ok is false when none is pending.
func (m *Machine) Next() (at time.Duration, ok bool) {
	if len(m.queue) == 0 {
		return 0, false
	}
	return m.queue[0].At, true
}

// Advance pops and returns every step due at or before now, in order,
// scheduling the steps each one leads to (which may also be due). The
// caller performs Begin and Done steps on the cluster.
func (m *Machine) Advance(now time.Duration) []Step {
	var out []Step
	for len(m.queue) > 0 && m.queue[0].At <= now {
		s := m.queue[0]
		m.queue = m.queue[1:]
		switch s.Kind {
		case Detect:
			m.detect(&s)
		case Begin:
			end := s.At + m.cfg.ActionTime
			if s.Policy == RebootNode {
				end += m.cfg.Boot
			}
			m.push(Step{At: end, Kind: Done, Policy: s.Policy, Nodes: s.Nodes, Fault: s.Fault})
		case Done:
			for _, n := range s.Nodes {
				delete(m.repairing, n)
			}
		}
		out = append(out, s)
	}
	return out
}

func (m *Machine) detect(s *Step) {
	var nodes []int
	switch {
	case s.Policy == RestartAll:
		for n := 1; n <= m.nodes; n++ {
			nodes = append(nodes, n)
		}
	case s.Fault.Node == 0:
		s.Idle = true
		return
	default:
		nodes = []int{s.Fault.Node}
	}
	for _, n := range nodes {
		if m.repairing[n] {
			s.Busy = true
			return
		}
	}
	for _, n := range nodes {
		m.repairing[n] = true
	}
	delay := time.Duration(0)
	if m.cfg.Response.Name != "" {
		delay = m.cfg.Response.Draw(m.rng)
	}
	m.push(Step{At: s.At + delay, Kind: Begin, Policy: s.Policy, Nodes: nodes, Fault: s.Fault})
}
