// Package law parses and draws the duration laws of scenarios: the gaps of
// a recurring fault (every: poisson(2m)) and the operator's response time
// (exponential(30s)). Draws take the caller's seeded *rand.Rand.
package law

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Law is a distribution of durations: the gaps of a recurring fault
// (poisson, gaussian, fixed) or the operator's response time (exponential,
// fixed). The zero Law is fixed(0).
type Law struct {
	Name   string        // fixed | poisson | exponential | gaussian
	Mean   time.Duration // the mean gap (for fixed: the value)
	Stddev time.Duration // gaussian only
}

func (l Law) String() string {
	if l.Name == "gaussian" {
		return fmt.Sprintf("gaussian(%v, %v)", l.Mean, l.Stddev)
	}
	return fmt.Sprintf("%s(%v)", l.Name, l.Mean)
}

// ParseLaw parses "poisson(120s)", "exponential(30s)", "gaussian(120s, 20s)"
// or "fixed(60s)". poisson and exponential are the same law: exponential
// gaps, i.e. Poisson arrivals. Errors say what form is expected.
func Parse(s string) (Law, error) {
	const forms = "want poisson(MEAN), exponential(MEAN), gaussian(MEAN, STDDEV) or fixed(D), e.g. poisson(120s)"
	name, rest, ok := strings.Cut(strings.TrimSpace(s), "(")
	if !ok || !strings.HasSuffix(rest, ")") {
		return Law{}, fmt.Errorf("law %q: %s", s, forms)
	}
	var args []time.Duration
	for a := range strings.SplitSeq(strings.TrimSuffix(rest, ")"), ",") {
		d, err := time.ParseDuration(strings.TrimSpace(a))
		if err != nil {
			return Law{}, fmt.Errorf("law %q: %q is not a duration like 90s", s, strings.TrimSpace(a))
		}
		if d < 0 {
			return Law{}, fmt.Errorf("law %q: negative duration", s)
		}
		args = append(args, d)
	}
	l := Law{Name: strings.TrimSpace(name)}
	switch {
	case (l.Name == "poisson" || l.Name == "exponential" || l.Name == "fixed") && len(args) == 1:
		l.Mean = args[0]
	case l.Name == "gaussian" && len(args) == 2:
		l.Mean, l.Stddev = args[0], args[1]
	default:
		return Law{}, fmt.Errorf("law %q: %s", s, forms)
	}
	if l.Name != "fixed" && l.Mean <= 0 {
		return Law{}, fmt.Errorf("law %q: the mean must be positive", s)
	}
	return l, nil
}

// Draw returns one duration from the law using rng. A gaussian draw is
// truncated at zero (redrawn up to 100 times, then the mean), since a gap
// cannot be negative.
func (l Law) Draw(rng *rand.Rand) time.Duration {
	switch l.Name {
	case "poisson", "exponential":
		return time.Duration(rng.ExpFloat64() * float64(l.Mean))
	case "gaussian":
		for range 100 {
			if d := float64(l.Mean) + rng.NormFloat64()*float64(l.Stddev); d >= 0 && d < math.MaxInt64 {
				return time.Duration(d)
			}
		}
		return l.Mean
	default:
		return l.Mean
	}
}

// Scaled returns the law with its durations multiplied by f (--time-scale).
func (l Law) Scaled(f float64) Law {
	l.Mean = time.Duration(float64(l.Mean) * f)
	l.Stddev = time.Duration(float64(l.Stddev) * f)
	return l
}

// Is reports whether the law's name is one of names.
func (l Law) Is(names ...string) bool {
	for _, n := range names {
		if l.Name == n {
			return true
		}
	}
	return false
}
