package analysis

import (
	"errors"
	"math"
	"testing"
)

func TestParseThreshold(t *testing.T) {
	good := []struct {
		expr, metric, op string
		value            float64
	}{
		{"p99 < 500ms", "latency_p99_s", "<", 0.5},
		{"goodput > 0.9", "goodput", ">", 0.9},
		{"yield >= 0.99", "yield", ">=", 0.99},
		{"latency_mean < 100ms", "latency_mean_s", "<", 0.1},
		{"latency_mean_s<=0.2", "latency_mean_s", "<=", 0.2},
		{"  p99.9 < 2s ", "latency_p999_s", "<", 2},
		{"p_exceed_2 < 0.01", "p_exceed.2", "<", 0.01},
		{"p_exceed.0.1 <= 1e-2", "p_exceed.0.1", "<=", 0.01},
		{"timeout < 10", "outcomes.timeout", "<", 10},
		{"demerits <= 1000", "demerits", "<=", 1000},
		{"max < 6500us", "latency_max_s", "<", 0.0065},
		{"latency_max_trimmed_1pct_s < 1", "latency_max_trimmed_1pct_s", "<", 1},
	}
	for _, g := range good {
		th, err := ParseThreshold(g.expr)
		if err != nil {
			t.Errorf("%q: %v", g.expr, err)
			continue
		}
		if th.Metric != g.metric || th.Op != g.op || math.Abs(th.Value-g.value) > 1e-12 {
			t.Errorf("%q = %+v, want %s %s %v", g.expr, th, g.metric, g.op, g.value)
		}
	}
	for _, bad := range []string{"", "p99", "p99 = 5ms", "p98 < 5ms", "goodput > 90%", "goodput > 0.9s", "p99 < fast", "p99 <", "< 5ms", "p99 < 5h", "p99 << 5ms"} {
		if _, err := ParseThreshold(bad); !errors.Is(err, ErrThreshold) {
			t.Errorf("%q: error %v, want ErrThreshold", bad, err)
		}
	}
}

func TestThresholdEval(t *testing.T) {
	m := &Metrics{LatencyP99S: 0.4, Goodput: NaN, PExceed: map[string]Float{"2": 0.02}}
	for expr, want := range map[string]bool{"p99 < 500ms": true, "p99 < 400ms": false, "p99 <= 400ms": true, "p99 > 0.3": true,
		"goodput > 0.9": false, "p_exceed_2 < 0.01": false} {
		th, err := ParseThreshold(expr)
		if err != nil {
			t.Fatal(err)
		}
		if r := th.Eval(m); r.Passed != want {
			t.Errorf("%q on %+v: passed %v, want %v", expr, m, r.Passed, want)
		}
	}
}

func FuzzParseThreshold(f *testing.F) {
	for _, s := range []string{"p99 < 500ms", "goodput > 0.9", "yield >= 0.99", "latency_mean < 100ms", "p_exceed_0.1<=1e-3", "x<", "<=", "p99 < 1µs"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		th, err := ParseThreshold(s)
		if err != nil {
			if !errors.Is(err, ErrThreshold) {
				t.Fatalf("%q: error %v does not wrap ErrThreshold", s, err)
			}
			return
		}
		if _, ok := metricGetters[th.Metric]; !ok {
			t.Fatalf("%q: metric %q is not evaluable", s, th.Metric)
		}
		switch th.Op {
		case "<", "<=", ">", ">=":
		default:
			t.Fatalf("%q: op %q", s, th.Op)
		}
		if math.IsNaN(th.Value) || math.IsInf(th.Value, 0) {
			t.Fatalf("%q: value %v", s, th.Value)
		}
		th.Eval(&Metrics{})
	})
}
