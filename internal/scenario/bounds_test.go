package scenario

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestScaledCheckedAcceptsWhatItScales(t *testing.T) {
	sc, err := Parse([]byte(good), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []float64{1, 0.5, 0.1, 0.01} {
		got, err := sc.ScaledChecked(f)
		if err != nil {
			t.Fatalf("scale %v: %v", f, err)
		}
		want := sc.Scaled(f)
		if got.Length() != want.Length() || got.Workload.Window != want.Workload.Window || got.Faults[1].Every != want.Faults[1].Every {
			t.Errorf("scale %v: ScaledChecked gave %+v, Scaled %+v", f, got, want)
		}
	}
	for _, f := range []float64{0, -1, 1001} {
		if _, err := sc.ScaledChecked(f); !errors.Is(err, ErrScale) {
			t.Errorf("scale %v: error %v, want ErrScale", f, err)
		}
	}
}

// TestScaledCheckedRefusesDegenerateRuns: each problem is found on the
// scaled scenario and named by file:line and key, with the scale.
func TestScaledCheckedRefusesDegenerateRuns(t *testing.T) {
	cases := []struct {
		from, to string  // replaced in good
		scale    float64 // --time-scale
		want     string
	}{
		{"clients: 2}", "clients: 2, window: 1ns}", 1, "t.yaml:4: workload.window: window 1ns is shorter than 1ms"},
		{"clients: 2}", "clients: 2, window: 1h}", 1, "t.yaml:4: workload.window: window 1h0m0s is longer than the whole run (30s)"},
		{"clients: 2}", "clients: 2, window: 15s}", 1, `t.yaml:6: phases[0].duration: phase "warmup" lasts 10s, less than one window (15s)`},
		{"rate: 100", "rate: 0.01", 1, `t.yaml:6: phases[0].duration: phase "warmup" of 10s offers 0.1 requests`},
		{"poisson(30s)", "fixed(1ns)", 1, "t.yaml:10: faults[1].every: fixed(1ns): faults would recur faster than one window (5s)"},
		{"poisson(30s)", "fixed(10s)", 1, "t.yaml:10: faults[1].every: fixed(10s) never recurs"},
		{"duration: 5s}", "duration: 1s}", 1e-4, "t.yaml:9: faults[0].duration: at --time-scale 0.0001, a fault of 100µs is shorter than 1ms"},
		{"", "", 1e-9, "t.yaml:4: workload.connect_timeout: at --time-scale 1e-09, 2ns is shorter than 1ms"},
	}
	for _, tc := range cases {
		sc, err := Parse([]byte(strings.Replace(good, tc.from, tc.to, 1)), "t.yaml")
		if err != nil {
			t.Fatalf("%s: %v", tc.to, err)
		}
		_, err = sc.ScaledChecked(tc.scale)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s at %v: error %v\nwant one containing %q", tc.to, tc.scale, err, tc.want)
		}
	}
}

func TestDefaultWindowFitsTheShortestPhase(t *testing.T) {
	short := strings.NewReplacer("duration: 10s}", "duration: 2s}").Replace(good)
	short = strings.Replace(short, "at: 12s", "at: 1s", 1)
	sc, err := Parse([]byte(short), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Workload.Window.Duration != 2*time.Second {
		t.Errorf("default window %s in a run whose shortest phase is 2s, want 2s", sc.Workload.Window)
	}
	if sc, _ := Parse([]byte(good), "t.yaml"); sc.Workload.Window.Duration != DefaultWindow {
		t.Errorf("default window %s, want %s", sc.Workload.Window, DefaultWindow)
	}
}

func TestTraceMinUsable(t *testing.T) {
	clf := strings.Replace(good, "clients: 2}", `clients: 2, trace: "clf:a.log"}`, 1)
	sc, err := Parse([]byte(clf), "t.yaml")
	if err != nil || sc.Workload.TraceMinUsable != DefaultTraceMinUsable {
		t.Fatalf("clf trace: trace_min_usable %v, %v; want the default", sc.Workload.TraceMinUsable, err)
	}
	for body, want := range map[string]string{
		strings.Replace(good, "clients: 2}", "clients: 2, trace_min_usable: 0.5}", 1):                     "workload.trace_min_usable: trace_min_usable is for clf: traces",
		strings.Replace(good, "clients: 2}", `clients: 2, trace: "clf:a.log", trace_min_usable: 1.5}`, 1): "workload.trace_min_usable: 1.5: want the share",
	} {
		if _, err := Parse([]byte(body), "t.yaml"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want one containing %q", err, want)
		}
	}
}
