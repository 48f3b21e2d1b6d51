package scenario

import (
	"fmt"
	"net/url"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/faultbench/faultbench/internal/guard"
)

// DefaultGuardCooldown is how long the load goes on after a guard fired,
// so that the recovery is recorded.
const DefaultGuardCooldown = 30 * time.Second

// guardKeys are the keys of a guard rule written as a mapping.
var guardKeys = map[string]bool{"probe": true, "promql": true, "prometheus": true, "when": true, "for": true, "every": true, "timeout": true}

// UnmarshalYAML reads a guard rule: a string is an expression, a mapping a
// probe or a query.
func (g *GuardRule) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*g = GuardRule{Expr: n.Value}
		return nil
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; !guardKeys[k.Value] {
				return &fieldError{line: k.Line, msg: fmt.Sprintf("guard: unknown key %q: a guard rule is a string like \"goodput < 0.5 for 10s\", or a mapping with probe: URL, or promql:, prometheus: and when: (and optional for, every, timeout)", k.Value)}
			}
		}
		type plain GuardRule
		var p plain
		if err := n.Decode(&p); err != nil {
			return err
		}
		*g = GuardRule(p)
		return nil
	}
	return &fieldError{line: n.Line, msg: "guard: each rule is a string like \"goodput < 0.5 for 10s\" or a mapping (probe: URL, or promql:/prometheus:/when:)"}
}

// MarshalYAML writes an expression rule back as its string.
func (g GuardRule) MarshalYAML() (any, error) {
	if g.Expr != "" {
		return g.Expr, nil
	}
	type plain GuardRule
	return plain(g), nil
}

// validateGuard checks every guard rule; bad receives each problem at its key path.
func (sc *Scenario) validateGuard(bad func(path []any, format string, args ...any)) {
	for i, g := range sc.Guard {
		at := []any{"guard", i}
		kinds := 0
		for _, set := range []bool{g.Expr != "", g.Probe != "", g.PromQL != ""} {
			if set {
				kinds++
			}
		}
		switch {
		case kinds != 1:
			bad(at, "a guard rule is exactly one of: an expression string, probe: URL, or promql: QUERY (with prometheus: URL and when: \"> 0.5\")")
		case g.Expr != "":
			if _, err := guard.Parse(g.Expr); err != nil {
				bad(at, "%v", err)
			}
		case g.Probe != "":
			if err := checkGuardURL(g.Probe); err != nil {
				bad(append(at, "probe"), "%v", err)
			}
			if g.Prometheus != "" || g.When != "" {
				bad(at, "prometheus and when belong to a promql rule, not to a probe")
			}
		default:
			if err := checkGuardURL(g.Prometheus); err != nil {
				bad(append(at, "prometheus"), "%v (the Prometheus server's base URL, e.g. http://127.0.0.1:9090)", err)
			}
			if _, _, err := guard.ParseCompare(g.When); err != nil {
				bad(append(at, "when"), "%v", err)
			}
		}
	}
}

func checkGuardURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http:// or https:// URL", s)
	}
	return nil
}

// scaledGuard returns the guard rules with their durations multiplied by f.
func scaledGuard(rules []GuardRule, f float64) []GuardRule {
	if rules == nil {
		return nil
	}
	out := make([]GuardRule, len(rules))
	for i, g := range rules {
		if g.Expr != "" {
			if e, err := guard.Parse(g.Expr); err == nil {
				g.Expr = e.Scaled(f).String()
			}
		}
		g.For = D(scaleDuration(g.For.Duration, f))
		g.Every = D(scaleDuration(g.Every.Duration, f))
		out[i] = g
	}
	return out
}
