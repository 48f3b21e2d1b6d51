// Package guard is the steady-state guard of a run (docs/guard.md): the
// scenario's `guard:` conditions, checked while the run goes on, that stop
// the experiment when users are hurt more than it meant to hurt them.
//
// A condition is one of three kinds:
//
//   - an expression over the run's own record, "METRIC OP VALUE [for D]",
//     e.g. "goodput < 0.5 for 10s", "p99 > 2s for 5s", "data_error > 0",
//     "inflight_age > 3s for 2s" (Parse);
//   - an HTTP health probe: a URL that must answer 2xx or 3xx;
//   - a PromQL query against a Prometheus server, compared with a threshold.
//
// Window metrics are judged on each window as it closes (windows close
// late: the recorder waits for answers up to the response timeout), so a
// hang is first seen live, by inflight_age: the age of the oldest attempt
// still in flight. "for D" asks that the condition hold without a break for
// D: over consecutive closed windows covering D, or, for live signals,
// continuously for D. Without "for", one window (one sample) suffices.
package guard

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrSyntax wraps every error of Parse.
var ErrSyntax = errors.New("guard expression")

// Kind says where a metric's value comes from.
type Kind int

const (
	// Window metrics are figures of one closed window (windows.csv).
	Window Kind = iota
	// Live metrics are sampled continuously from the attempts in flight.
	Live
)

// metricInfo describes one metric an expression may name.
type metricInfo struct {
	kind    Kind
	seconds bool // a time: the value may be written as a duration
	help    string
}

// Metrics are the names an expression may use.
var metrics = map[string]metricInfo{
	"goodput":      {Window, false, "ok per offered attempt of the window (0..1)"},
	"yield":        {Window, false, "ok per measured attempt of the window (0..1)"},
	"error_rate":   {Window, false, "non-ok share of the window's measured attempts (0..1)"},
	"throughput":   {Window, false, "ok answers per second"},
	"offered":      {Window, false, "attempts offered per second"},
	"mean":         {Window, true, "mean latency"},
	"p50":          {Window, true, "median latency"},
	"p90":          {Window, true, "90th percentile latency"},
	"p99":          {Window, true, "99th percentile latency"},
	"max":          {Window, true, "largest latency"},
	"ok":           {Window, false, "ok attempts in the window"},
	"conn_error":   {Window, false, "conn_error attempts in the window"},
	"conn_abort":   {Window, false, "conn_abort attempts in the window"},
	"timeout":      {Window, false, "timeout attempts in the window"},
	"http_error":   {Window, false, "http_error attempts in the window"},
	"data_error":   {Window, false, "data_error attempts in the window"},
	"inflight":     {Live, false, "attempts sent and not yet answered"},
	"inflight_age": {Live, true, "age of the oldest attempt still in flight"},
}

// MetricNames lists the metric names an expression may use, sorted.
func MetricNames() []string {
	names := make([]string, 0, len(metrics))
	for n := range metrics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Op is a comparison.
type Op string

// The comparisons an expression may use.
var ops = []Op{"<=", ">=", "==", "!=", "<", ">"}

// Holds reports whether v op threshold. NaN (a window without attempts)
// never holds.
func (o Op) Holds(v, threshold float64) bool {
	if math.IsNaN(v) {
		return false
	}
	switch o {
	case "<":
		return v < threshold
	case "<=":
		return v <= threshold
	case ">":
		return v > threshold
	case ">=":
		return v >= threshold
	case "==":
		return v == threshold
	case "!=":
		return v != threshold
	}
	return false
}

// Expr is a parsed expression "METRIC OP VALUE [for D]".
type Expr struct {
	Metric string
	Op     Op
	Value  float64       // seconds for time metrics
	For    time.Duration // 0: one window or sample suffices
}

// Kind is where the expression's metric comes from.
func (e Expr) Kind() Kind { return metrics[e.Metric].kind }

// String writes e back in the syntax Parse reads.
func (e Expr) String() string {
	v := strconv.FormatFloat(e.Value, 'g', -1, 64)
	if metrics[e.Metric].seconds {
		v = time.Duration(e.Value * float64(time.Second)).String()
	}
	s := fmt.Sprintf("%s %s %s", e.Metric, e.Op, v)
	if e.For > 0 {
		s += " for " + e.For.String()
	}
	return s
}

// Scaled multiplies the "for" duration by f (--time-scale), and so the
// thresholds of time metrics (latencies, inflight_age): --time-scale
// scales the timeouts, which bound what a hung attempt's latency and age
// can reach, so an unscaled "inflight_age > 3s" could never hold in a run
// whose response timeout became 0.6 s. Other thresholds are not scaled.
func (e Expr) Scaled(f float64) Expr {
	e.For = time.Duration(math.Round(float64(e.For) * f))
	if metrics[e.Metric].seconds {
		e.Value *= f
	}
	return e
}

// Parse reads "METRIC OP VALUE [for DURATION]". Its errors wrap ErrSyntax
// and say what is allowed.
func Parse(s string) (Expr, error) {
	var e Expr
	fail := func(format string, args ...any) (Expr, error) {
		return Expr{}, fmt.Errorf("%w %q: %s", ErrSyntax, s, fmt.Sprintf(format, args...))
	}
	if len(s) > 200 {
		return fail("longer than 200 characters")
	}
	body, forPart, hasFor := cutFor(s)
	if hasFor {
		d, err := time.ParseDuration(strings.TrimSpace(forPart))
		if err != nil || d <= 0 {
			return fail("%q after \"for\" is not a positive duration like 10s", strings.TrimSpace(forPart))
		}
		e.For = d
	}
	body = strings.TrimSpace(body)
	i := strings.IndexAny(body, "<>=!")
	if i <= 0 {
		return fail("want METRIC OP VALUE [for DURATION], e.g. \"goodput < 0.5 for 10s\"; OP is one of < <= > >= == !=")
	}
	e.Metric = strings.TrimSpace(body[:i])
	info, ok := metrics[e.Metric]
	if !ok {
		return fail("unknown metric %q: want one of %s", e.Metric, strings.Join(MetricNames(), ", "))
	}
	rest := body[i:]
	for _, o := range ops {
		if strings.HasPrefix(rest, string(o)) {
			e.Op, rest = o, rest[len(o):]
			break
		}
	}
	if e.Op == "" {
		return fail("%q is not a comparison: want one of < <= > >= == !=", firstWord(rest))
	}
	v, err := parseValue(strings.TrimSpace(rest), info.seconds)
	if err != nil {
		return fail("%s: %v", e.Metric, err)
	}
	e.Value = v
	return e, nil
}

// cutFor splits off a trailing " for D".
func cutFor(s string) (body, forPart string, ok bool) {
	i := strings.LastIndex(s, " for ")
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(" for "):], true
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return s
}

// parseValue reads a number, or for a time metric also a duration
// ("2s", "500ms"); a bare number is then seconds.
func parseValue(s string, seconds bool) (float64, error) {
	if s == "" {
		return 0, errors.New("no value after the comparison")
	}
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("%q is not a finite number", s)
		}
		return v, nil
	}
	if seconds {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration like 2s or 500ms, nor a number of seconds", s)
		}
		return d.Seconds(), nil
	}
	return 0, fmt.Errorf("%q is not a number", s)
}

// ParseCompare reads the comparison of a probe or query rule, "OP VALUE",
// e.g. "> 0.5".
func ParseCompare(s string) (Op, float64, error) {
	t := strings.TrimSpace(s)
	for _, o := range ops {
		if strings.HasPrefix(t, string(o)) {
			v, err := parseValue(strings.TrimSpace(t[len(o):]), false)
			if err != nil {
				return "", 0, fmt.Errorf("%w %q: %v", ErrSyntax, s, err)
			}
			return o, v, nil
		}
	}
	return "", 0, fmt.Errorf("%w %q: want OP VALUE, e.g. \"> 0.5\"; OP is one of < <= > >= == !=", ErrSyntax, s)
}
