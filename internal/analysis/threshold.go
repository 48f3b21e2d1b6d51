package analysis

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Threshold is a parsed scenario threshold such as "p99 < 500ms": a metric
// of the overall period, a comparison and a bound. Latency bounds are held
// in seconds.
type Threshold struct {
	Expr   string  // as written
	Metric string  // canonical summary.json key of Metrics, e.g. "latency_p99_s" or "p_exceed.1"
	Op     string  // <, <=, >, >=
	Value  float64 // seconds for latency metrics
}

// ErrThreshold is wrapped by every error ParseThreshold returns.
var ErrThreshold = errors.New("bad threshold")

// metricGetters maps canonical metric keys to their value in Metrics.
var metricGetters = map[string]func(*Metrics) Float{
	"attempts":                   func(m *Metrics) Float { return Float(m.Attempts) },
	"throughput_total":           func(m *Metrics) Float { return Float(m.ThroughputTotal) },
	"throughput_mean_per_s":      func(m *Metrics) Float { return m.ThroughputMeanPerS },
	"offered_per_s":              func(m *Metrics) Float { return m.OfferedPerS },
	"latency_total_s":            func(m *Metrics) Float { return m.LatencyTotalS },
	"latency_mean_s":             func(m *Metrics) Float { return m.LatencyMeanS },
	"latency_trimmed_mean_s":     func(m *Metrics) Float { return m.LatencyTrimmedMeanS },
	"latency_stddev_s":           func(m *Metrics) Float { return m.LatencyStddevS },
	"latency_p50_s":              func(m *Metrics) Float { return m.LatencyP50S },
	"latency_p90_s":              func(m *Metrics) Float { return m.LatencyP90S },
	"latency_p99_s":              func(m *Metrics) Float { return m.LatencyP99S },
	"latency_p999_s":             func(m *Metrics) Float { return m.LatencyP999S },
	"latency_max_s":              func(m *Metrics) Float { return m.LatencyMaxS },
	"goodput":                    func(m *Metrics) Float { return m.Goodput },
	"punctuality":                func(m *Metrics) Float { return m.Punctuality },
	"yield":                      func(m *Metrics) Float { return m.Yield },
	"demerits":                   func(m *Metrics) Float { return m.Demerits },
	"outliers_3sigma_fraction":   func(m *Metrics) Float { return m.Outliers3SigmaFrac },
	"latency_max_trimmed_1pct_s": func(m *Metrics) Float { return m.LatencyMaxTrimmed1pc },
}

func init() {
	for _, t := range ExceedThresholds {
		key := t.Key
		metricGetters["p_exceed."+key] = func(m *Metrics) Float {
			if v, ok := m.PExceed[key]; ok {
				return v
			}
			return NaN
		}
	}
	for _, o := range []string{"ok", "conn_error", "conn_abort", "timeout", "http_error", "data_error"} {
		o := o
		metricGetters["outcomes."+o] = func(m *Metrics) Float { return Float(m.Outcomes[o]) }
	}
}

// metricAliases are the short names a threshold may use.
var metricAliases = map[string]string{
	"p50": "latency_p50_s", "p90": "latency_p90_s", "p99": "latency_p99_s", "p999": "latency_p999_s", "p99.9": "latency_p999_s",
	"max": "latency_max_s", "throughput": "throughput_mean_per_s", "offered": "offered_per_s",
	"outliers_3sigma": "outliers_3sigma_fraction",
}

// canonicalMetric resolves a name as written to a key of metricGetters:
// the summary.json key itself, the key without its "_s" unit suffix
// (latency_mean), a short alias (p99), "p_exceed_1" for "p_exceed.1",
// or an outcome name (timeout) for its count.
func canonicalMetric(name string) (string, bool) {
	if _, ok := metricGetters[name]; ok {
		return name, true
	}
	if a, ok := metricAliases[name]; ok {
		return a, true
	}
	if _, ok := metricGetters[name+"_s"]; ok {
		return name + "_s", true
	}
	if rest, ok := strings.CutPrefix(name, "p_exceed_"); ok {
		if _, ok := metricGetters["p_exceed."+rest]; ok {
			return "p_exceed." + rest, true
		}
	}
	if _, ok := metricGetters["outcomes."+name]; ok {
		return "outcomes." + name, true
	}
	return "", false
}

func isLatencyMetric(key string) bool {
	return strings.HasPrefix(key, "latency_") && strings.HasSuffix(key, "_s")
}

// ThresholdMetrics lists the canonical metric names a threshold may use.
func ThresholdMetrics() []string {
	out := make([]string, 0, len(metricGetters))
	for k := range metricGetters {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ParseThreshold parses "METRIC OP VALUE[UNIT]", e.g. "p99 < 500ms",
// "goodput > 0.9", "yield >= 0.99", "latency_mean < 100ms". OP is one of
// <, <=, >, >=. Latency metrics take a unit (ms, s, us, µs, ns; a bare
// number is seconds); other metrics take a bare number. Errors wrap
// ErrThreshold and say what is wrong.
func ParseThreshold(s string) (Threshold, error) {
	t := Threshold{Expr: s}
	expr := strings.TrimSpace(s)
	i := strings.IndexAny(expr, "<>")
	if i < 0 {
		return t, fmt.Errorf("%w %q: want METRIC OP VALUE with OP one of <, <=, >, >= (e.g. \"p99 < 500ms\")", ErrThreshold, s)
	}
	name := strings.TrimSpace(expr[:i])
	op := expr[i : i+1]
	rest := expr[i+1:]
	if strings.HasPrefix(rest, "=") {
		op += "="
		rest = rest[1:]
	}
	t.Op = op
	key, ok := canonicalMetric(name)
	if name == "" || !ok {
		return t, fmt.Errorf("%w %q: unknown metric %q (want one of p50, p90, p99, p999, max, latency_mean, goodput, yield, punctuality, demerits, ... or any key of summary.json's metrics)", ErrThreshold, s, name)
	}
	t.Metric = key
	val := strings.TrimSpace(rest)
	if val == "" {
		return t, fmt.Errorf("%w %q: no value after %q", ErrThreshold, s, op)
	}
	num, unit := splitUnit(val)
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return t, fmt.Errorf("%w %q: %q is not a number", ErrThreshold, s, num)
	}
	if unit != "" {
		if !isLatencyMetric(key) {
			return t, fmt.Errorf("%w %q: %s takes a plain number, not %q", ErrThreshold, s, name, unit)
		}
		scale, ok := map[string]float64{"s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}[unit]
		if !ok {
			return t, fmt.Errorf("%w %q: unknown unit %q (want ms or s)", ErrThreshold, s, unit)
		}
		v *= scale
	}
	t.Value = v
	return t, nil
}

func splitUnit(s string) (num, unit string) {
	i := len(s)
	for i > 0 {
		c := s[i-1]
		if (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80 {
			i--
			continue
		}
		break
	}
	// keep exponents such as 1e-3 in the number
	if i < len(s) && i > 0 && (s[i] == 'e' || s[i] == 'E') {
		return s, ""
	}
	return strings.TrimSpace(s[:i]), s[i:]
}

// Eval compares the metric of m with the bound. An undefined metric
// (no attempts, no baseline) fails the threshold: nothing was shown to hold.
func (t Threshold) Eval(m *Metrics) ThresholdResult {
	get, ok := metricGetters[t.Metric]
	if !ok {
		return ThresholdResult{Expr: t.Expr, Value: NaN}
	}
	v := get(m)
	r := ThresholdResult{Expr: t.Expr, Value: v}
	if !v.Valid() {
		return r
	}
	x := float64(v)
	switch t.Op {
	case "<":
		r.Passed = x < t.Value
	case "<=":
		r.Passed = x <= t.Value
	case ">":
		r.Passed = x > t.Value
	case ">=":
		r.Passed = x >= t.Value
	}
	return r
}
