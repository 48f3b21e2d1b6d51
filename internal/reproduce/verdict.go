package reproduce

import (
	"fmt"
	"math"
	"strings"
)

// Verdict is a claim's outcome.
type Verdict string

// The verdicts, in the order the tables count them. ByConstruction is
// behaviour built to match the paper and never counts as agreement;
// Failed means the runs that would measure the claim failed.
const (
	Agrees         Verdict = "agrees"
	Close          Verdict = "close"
	Differs        Verdict = "differs"
	NotMeasured    Verdict = "not measured"
	ByConstruction Verdict = "by construction"
	Failed         Verdict = "failed"
)

// Verdicts lists every verdict in table order.
var Verdicts = []Verdict{Agrees, Close, Differs, NotMeasured, ByConstruction, Failed}

// judge compares a measured value with the published one by the claim's
// rule and tolerance.
func judge(c *Claim, v Value) (Verdict, error) {
	p := c.Published
	switch c.Rule {
	case RuleClass:
		if !v.IsText {
			return Failed, fmt.Errorf("measured %s, a number: rule class wants a behaviour class", v)
		}
		switch {
		case v.Text == p.Text:
			return Agrees, nil
		case v.Text != "" && p.Text != "" && v.Text[0] == p.Text[0]:
			return Close, nil
		}
		return Differs, nil
	case RuleEqual:
		if v.IsText != p.IsText {
			return Failed, fmt.Errorf("measured %s: rule equal wants a %s", v, map[bool]string{true: "text", false: "number"}[p.IsText])
		}
		if (v.IsText && v.Text == p.Text) || (!v.IsText && v.Num == p.Num) {
			return Agrees, nil
		}
		return Differs, nil
	}
	if v.IsText {
		return Failed, fmt.Errorf("measured the text %q: rule %s wants a number", v.Text, c.Rule)
	}
	if math.IsNaN(v.Num) {
		return Failed, fmt.Errorf("measured no number (NaN)")
	}
	t := c.Tolerance
	switch c.Rule {
	case RuleNumber:
		d := math.Abs(v.Num - p.Num)
		agree := distance(t.Abs, t.Rel, p.Num)
		closeTol := 2 * agree
		if t.CloseAbs != nil || t.CloseRel != nil {
			closeTol = distance(t.CloseAbs, t.CloseRel, p.Num)
		}
		return byDistance(d, agree, closeTol), nil
	case RuleRange:
		if v.Num >= p.Lo && v.Num <= p.Hi {
			return Agrees, nil
		}
		bound := p.Lo
		if v.Num > p.Hi {
			bound = p.Hi
		}
		closeTol := distance(t.CloseAbs, t.CloseRel, bound)
		return byDistance(math.Abs(v.Num-bound), -1, closeTol), nil
	}
	return Failed, fmt.Errorf("unknown rule %q", c.Rule)
}

// distance is an absolute tolerance, or a relative one of ref; 0 when
// neither is given.
func distance(abs, rel *float64, ref float64) float64 {
	switch {
	case abs != nil:
		return *abs
	case rel != nil:
		return *rel * math.Abs(ref)
	}
	return 0
}

// byDistance allows for the rounding of the values' decimal forms.
func byDistance(d, agree, closeTol float64) Verdict {
	const eps = 1e-9
	switch {
	case d <= agree*(1+eps)+eps:
		return Agrees
	case d <= closeTol*(1+eps)+eps:
		return Close
	}
	return Differs
}

// ToleranceText is the tolerance as the table prints it.
func (c *Claim) ToleranceText() string {
	t := c.Tolerance
	var s string
	switch c.Rule {
	case RuleClass:
		s = "exact; the same letter (C-1 for C-2) is close"
	case RuleEqual:
		s = "exact"
	case RuleNumber:
		s = "±" + tolText(t.Abs, t.Rel)
		if t.CloseAbs != nil || t.CloseRel != nil {
			s += ", close ±" + tolText(t.CloseAbs, t.CloseRel)
		} else {
			s += ", close twice that"
		}
	case RuleRange:
		s = "inside the range"
		if t.CloseAbs != nil || t.CloseRel != nil {
			s += ", close within " + tolText(t.CloseAbs, t.CloseRel) + " of it"
		}
	}
	if why := strings.TrimSpace(t.Why); why != "" {
		if s != "" {
			s += ": "
		}
		s += why
	}
	return s
}

func tolText(abs, rel *float64) string {
	if abs != nil {
		return formatNum(*abs)
	}
	if rel != nil {
		return formatNum(*rel*100) + "%"
	}
	return "0"
}
