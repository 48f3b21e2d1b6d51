package model

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Design is a named fault load: one version of a system under comparison.
type Design struct {
	Name string
	Load *FaultLoad
}

// SweepPoint is phase 2 at one rate of the swept fault.
type SweepPoint struct {
	Design      string          `json:"design"`
	RatePerS    float64         `json:"rate_per_s"`
	MTTFS       float64         `json:"mttf_s"`
	Label       string          `json:"label"` // e.g. "1/day"
	Performance *Performability `json:"result"`
}

// SweepResult is what `faultbench model sweep` reports.
type SweepResult struct {
	Scale  string       `json:"scale"`
	Points []SweepPoint `json:"points"`
}

// Sweep evaluates every design with the named fault's (or group's) rate set
// to each of rates (per second).
func Sweep(designs []Design, name string, rates []float64) (*SweepResult, error) {
	res := &SweepResult{Scale: name}
	for _, d := range designs {
		for _, r := range rates {
			fl := d.Load.Clone()
			if err := fl.SetRate(name, r); err != nil {
				return nil, fmt.Errorf("%s: %w", d.Name, err)
			}
			res.Points = append(res.Points, SweepPoint{Design: d.Name, RatePerS: r, MTTFS: 1 / r, Label: RateLabel(r), Performance: Evaluate(fl)})
		}
	}
	return res, nil
}

// Crossover is what `faultbench model crossover` reports.
type Crossover struct {
	A      string   `json:"a"`
	B      string   `json:"b"`
	Scaled []string `json:"scaled"`
	// Factor is the number by which B's named fault rates must be multiplied
	// for B's performability to equal A's (Nagaraja et al. 2002, §6.4: "4 times as
	// often"). Below 1, B is worse already and its faults must become rarer.
	Factor          jsonFloat `json:"factor"`
	PerformabilityA float64   `json:"performability_a"`
	PerformabilityB float64   `json:"performability_b"` // unscaled
	Note            string    `json:"note,omitempty"`
	// Curve is B's performability at factors around the cross-over, for the figure.
	Curve []CurvePoint `json:"curve"`
}

// CurvePoint is B's performability at one scale factor.
type CurvePoint struct {
	Factor         float64 `json:"factor"`
	Performability float64 `json:"performability"`
}

// FindCrossover bisects, on a log scale, the factor f by which B's named
// rates must be multiplied for performability(B·f) = performability(A).
// Performability falls as fault rates rise, so the root is unique.
func FindCrossover(a, b Design, names []string) (*Crossover, error) {
	pa := Evaluate(a.Load)
	pb := Evaluate(b.Load)
	if math.IsNaN(float64(pa.Performability)) || math.IsNaN(float64(pb.Performability)) {
		return nil, badInput("performability is undefined when a design has no unavailability")
	}
	perfB := func(f float64) (float64, error) {
		fl := b.Load.Clone()
		if err := fl.Scale(names, f); err != nil {
			return 0, err
		}
		return float64(Evaluate(fl).Performability), nil
	}
	if _, err := perfB(1); err != nil {
		return nil, err
	}
	target := float64(pa.Performability)
	res := &Crossover{A: a.Name, B: b.Name, Scaled: names, PerformabilityA: target, PerformabilityB: float64(pb.Performability)}
	lo, hi := math.Log(1e-9), math.Log(1e9)
	fLo, _ := perfB(math.Exp(lo))
	fHi, _ := perfB(math.Exp(hi))
	switch {
	case fLo < target:
		res.Factor = jsonFloat(math.NaN())
		res.Note = "B stays below A even with the named faults a billion times rarer: its other faults or its throughput decide"
	case fHi > target:
		res.Factor = jsonFloat(math.NaN())
		res.Note = "B stays above A even with the named faults a billion times more frequent"
	default:
		for i := 0; i < 200 && hi-lo > 1e-12; i++ {
			mid := (lo + hi) / 2
			if p, _ := perfB(math.Exp(mid)); p > target {
				lo = mid
			} else {
				hi = mid
			}
		}
		res.Factor = jsonFloat(math.Exp((lo + hi) / 2))
	}
	center := 1.0
	if !math.IsNaN(float64(res.Factor)) {
		center = float64(res.Factor)
	}
	for e := -2.0; e <= 2.0001; e += 0.25 {
		f := center * math.Pow(4, e)
		p, _ := perfB(f)
		res.Curve = append(res.Curve, CurvePoint{f, p})
	}
	return res, nil
}

// rateUnits are the units of "k/unit" rates; a month is a twelfth of a year.
var rateUnits = map[string]float64{
	"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hour": 3600,
	"d": 86400, "day": 86400, "w": 7 * 86400, "week": 7 * 86400,
	"month": 365.25 * 86400 / 12, "y": 365.25 * 86400, "year": 365.25 * 86400,
}

// ParseRate reads a rate as "k/unit" (1/day, 2/week, 1/3month) or as a
// mean time between faults (a Go duration, 720h), and returns it per second.
func ParseRate(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if num, unit, ok := strings.Cut(s, "/"); ok {
		k, err := strconv.ParseFloat(num, 64)
		if err != nil || !(k > 0) || math.IsInf(k, 0) {
			return 0, badInput("rate %q: %q is not a positive number", s, num)
		}
		mult := 1.0
		i := 0
		for i < len(unit) && (unit[i] >= '0' && unit[i] <= '9' || unit[i] == '.') {
			i++
		}
		if i > 0 {
			if mult, err = strconv.ParseFloat(unit[:i], 64); err != nil || !(mult > 0) {
				return 0, badInput("rate %q: bad unit count %q", s, unit[:i])
			}
		}
		u, ok := rateUnits[strings.TrimSuffix(unit[i:], "s")]
		if !ok {
			u, ok = rateUnits[unit[i:]]
		}
		if !ok {
			return 0, badInput("rate %q: unknown unit %q (use s, min, h, day, week, month, year)", s, unit[i:])
		}
		return k / (mult * u), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, badInput("rate %q: use k/unit (1/day, 1/month) or a mean time between faults (720h)", s)
	}
	return 1 / d.Seconds(), nil
}

// ParseRange reads "FROM..TO" into steps log-spaced rates, FROM first.
func ParseRange(s string, steps int) ([]float64, error) {
	from, to, ok := strings.Cut(s, "..")
	if !ok {
		r, err := ParseRate(s)
		return []float64{r}, err
	}
	a, err := ParseRate(from)
	if err != nil {
		return nil, err
	}
	b, err := ParseRate(to)
	if err != nil {
		return nil, err
	}
	if steps < 2 || steps > 1000 {
		return nil, badInput("--steps must be between 2 and 1000, got %d", steps)
	}
	out := make([]float64, steps)
	for i := range out {
		out[i] = a * math.Pow(b/a, float64(i)/float64(steps-1))
	}
	return out, nil
}

// RateLabel writes a rate per second the way people say it: 1/day, 1/2.5week.
func RateLabel(perS float64) string {
	mttf := 1 / perS
	for _, u := range []struct {
		name string
		s    float64
	}{{"year", rateUnits["year"]}, {"month", rateUnits["month"]}, {"week", rateUnits["week"]}, {"day", 86400}, {"h", 3600}, {"min", 60}, {"s", 1}} {
		if mttf >= u.s*0.999 {
			k := mttf / u.s
			if math.Abs(k-math.Round(k)) < 0.01 {
				if math.Round(k) == 1 {
					return "1/" + u.name
				}
				return fmt.Sprintf("1/%g%s", math.Round(k), u.name)
			}
			return fmt.Sprintf("1/%.3g%s", k, u.name)
		}
	}
	return fmt.Sprintf("%.3g/s", perS)
}
