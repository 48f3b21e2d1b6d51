package guard

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Expr
	}{
		{"goodput < 0.5 for 10s", Expr{"goodput", "<", 0.5, 10 * time.Second}},
		{"p99 > 2s for 5s", Expr{"p99", ">", 2, 5 * time.Second}},
		{"p99>=250ms", Expr{"p99", ">=", 0.25, 0}},
		{"data_error > 0", Expr{"data_error", ">", 0, 0}},
		{"inflight_age > 3s for 2s", Expr{"inflight_age", ">", 3, 2 * time.Second}},
		{"  mean != 1.5  ", Expr{"mean", "!=", 1.5, 0}},
	} {
		got, err := Parse(c.in)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		again, err := Parse(got.String())
		if err != nil || again != got {
			t.Errorf("Parse(String(%q)) = %+v, %v; want %+v", c.in, again, err, got)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ in, says string }{
		{"", "want METRIC OP VALUE"},
		{"goodput", "want METRIC OP VALUE"},
		{"latency < 2s", `unknown metric "latency": want one of`},
		{"goodput =< 0.5", `"=<" is not a comparison`},
		{"goodput < half", `"half" is not a number`},
		{"goodput < 2s", `"2s" is not a number`},
		{"p99 > soon", "not a duration like 2s"},
		{"goodput < 0.5 for ever", `"ever" after "for" is not a positive duration`},
		{"goodput < NaN", "not a finite number"},
		{"goodput <", "no value after the comparison"},
	} {
		_, err := Parse(c.in)
		if err == nil || !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Parse(%q) = %v; want an ErrSyntax saying %q", c.in, err, c.says)
		}
	}
}

func TestScaled(t *testing.T) {
	e, _ := Parse("inflight_age > 3s for 2s")
	if got := e.Scaled(0.1); got.For != 200*time.Millisecond || math.Abs(got.Value-0.3) > 1e-12 {
		t.Errorf("scaled %+v: want for 200ms, value 0.3", got)
	}
	g, _ := Parse("goodput < 0.5 for 10s")
	if got := g.Scaled(0.1); got.For != time.Second || got.Value != 0.5 {
		t.Errorf("scaled %+v: want for 1s, value 0.5 (not a time)", got)
	}
}

func TestParseCompare(t *testing.T) {
	if op, v, err := ParseCompare(" > 0.5"); err != nil || op != ">" || v != 0.5 {
		t.Errorf("ParseCompare: %v %v %v", op, v, err)
	}
	if _, _, err := ParseCompare("about 3"); err == nil || !strings.Contains(err.Error(), "want OP VALUE") {
		t.Errorf("ParseCompare(about 3) = %v", err)
	}
}

// The parser never panics, and what it accepts it writes back into
// something it reads as the same expression.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"goodput < 0.5 for 10s", "p99 > 2s for 5s", "data_error > 0", "inflight_age > 3s for 2s",
		"mean<=1e-3", "x for y", "p99 > 1h for 1ns", "goodput == -0", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(e.String())
		if err != nil {
			t.Fatalf("Parse(%q) gave %+v whose String %q does not parse: %v", s, e, e.String(), err)
		}
		if again.Metric != e.Metric || again.Op != e.Op || again.For != e.For || math.Abs(again.Value-e.Value) > 1e-9*math.Max(1, math.Abs(e.Value)) {
			t.Fatalf("round trip of %q: %+v then %+v", s, e, again)
		}
	})
}
