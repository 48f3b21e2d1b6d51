package scenario

import (
	"time"

	"gopkg.in/yaml.v3"

	"github.com/faultbench/faultbench/internal/knee"
)

// kneeDefaults fills the workload.knee keys the file leaves out. A key the
// file gives keeps its value, even 0, so that validation can refuse it.
// `knee:` with nothing after it is a knee search with every default.
func (sc *Scenario) kneeDefaults() {
	w := &sc.Workload
	if w.Knee == nil {
		if lookup(sc.root, "workload", "knee") == nil {
			return
		}
		w.Knee = &Knee{}
	}
	k, d := w.Knee, knee.Default
	given := func(key string) bool { return lookup(sc.root, "workload", "knee", key) != nil }
	setF := func(key string, v *float64, def float64) {
		if *v == 0 && !given(key) {
			*v = def
		}
	}
	setF("start", &k.Start, d.Start)
	setF("max", &k.Max, d.Max)
	setF("factor", &k.Factor, d.Factor)
	setF("goodput", &k.Goodput, d.Goodput)
	setF("fraction", &k.Fraction, d.Fraction)
	if !given("refine") {
		k.Refine = d.Refine
	}
	if k.StepTime.Duration == 0 && !given("step_time") {
		k.StepTime = D(d.StepTime)
	}
	if k.P99.Duration == 0 && !given("p99") {
		k.P99 = D(d.P99)
	}
}

// KneeConfig is the knee search the scenario asks for (nil without one).
func (sc *Scenario) KneeConfig() *knee.Config {
	k := sc.Workload.Knee
	if k == nil {
		return nil
	}
	return &knee.Config{Start: k.Start, Max: k.Max, Factor: k.Factor, Refine: k.Refine, StepTime: k.StepTime.Duration,
		Goodput: k.Goodput, P99: k.P99.Duration, Fraction: k.Fraction}
}

// validateKnee checks workload.knee, each error at its key's line.
func (sc *Scenario) validateKnee() []error {
	var errs []error
	bad := func(key string, format string, args ...any) {
		path := []any{"workload", "knee"}
		if key != "" {
			path = append(path, key)
		}
		errs = append(errs, sc.Errorf(path, format, args...))
	}
	w := sc.Workload
	k := w.Knee
	if lookup(sc.root, "workload", "rate") != nil || (sc.root == nil && w.Rate != 0) {
		errs = append(errs, sc.Errorf([]any{"workload", "rate"},
			"rate %v and knee are both given: the knee search sets the rate (fraction × knee); leave rate out, or drop knee to run at a fixed rate", w.Rate))
	}
	if !(k.Start > 0 && k.Start <= 1e6) {
		bad("start", "%v: want the first rate in requests per second, above 0 (at most 1000000)", k.Start)
	}
	if !(k.Max >= k.Start && k.Max <= 1e6) {
		bad("max", "%v: want the highest rate to try, from start (%v) to 1000000", k.Max, k.Start)
	}
	if !(k.Factor > 1 && k.Factor <= 10) {
		bad("factor", "%v: want the growth from one step to the next, above 1 (at most 10), e.g. 1.5", k.Factor)
	}
	if k.Refine < 0 || k.Refine > 10 {
		bad("refine", "%d: want 0 to 10 bisection steps", k.Refine)
	}
	if k.StepTime.Duration <= 0 {
		bad("step_time", "want a positive duration like 5s")
	}
	if !(k.Goodput > 0 && k.Goodput <= 1) {
		bad("goodput", "%v: want a fraction above 0, at most 1 (e.g. 0.99)", k.Goodput)
	}
	longest := w.ConnectTimeout.Duration + w.ResponseTimeout.Duration
	if k.P99.Duration <= 0 || k.P99.Duration >= longest {
		bad("p99", "%v: want a latency bound above 0 and below connect_timeout + response_timeout (%v), which no attempt exceeds", k.P99, longest)
	}
	if !(k.Fraction > 0 && k.Fraction <= 1) {
		bad("fraction", "%v: want the fraction of the knee to run at, above 0, at most 1 (e.g. 0.9)", k.Fraction)
	}
	if len(errs) == 0 {
		if n := sc.KneeConfig().MaxSteps(); n > knee.Limit {
			bad("", "start %v, max %v, factor %v and refine %d could take %d steps (at most %d): raise start or factor, or lower max",
				k.Start, k.Max, k.Factor, k.Refine, n, knee.Limit)
		}
	}
	return errs
}

// KneeBound is the longest a knee search can take: every step's load plus
// the drain of its last attempts (bounded by the timeouts).
func (sc *Scenario) KneeBound() time.Duration {
	cfg := sc.KneeConfig()
	if cfg == nil {
		return 0
	}
	w := sc.Workload
	return cfg.MaxTime() + time.Duration(cfg.MaxSteps())*(w.ConnectTimeout.Duration+w.ResponseTimeout.Duration)
}

// lookup returns the value node at the key path below root (nil if absent,
// or if root is nil: a scenario built in code).
func lookup(root *yaml.Node, keys ...string) *yaml.Node {
	n := root
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, key := range keys {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
			}
		}
		n = next
	}
	return n
}
