package press

import (
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
)

func TestCommParamsValidate(t *testing.T) {
	common := CommonParams{Probability: 1}
	for _, tc := range []struct {
		name string
		p    CommParams
		ok   bool
	}{
		{"mem-alloc-fail defaults", NewCommParams(MemAllocFail), true},
		{"bad-param defaults", NewCommParams(BadParamSize), true},
		{"slow defaults", NewCommParams(Slow), true},
		{"probability 0", &CommonParams{Probability: 0}, false},
		{"probability half", &CommonParams{Probability: 0.5, Count: 3}, true},
		{"probability above 1", &CommonParams{Probability: 1.5}, false},
		{"negative count", &CommonParams{Probability: 1, Count: -1}, false},
		{"n 100", &BadParamParams{CommonParams: common, N: 100}, true},
		{"n 101", &BadParamParams{CommonParams: common, N: 101}, false},
		{"n negative", &BadParamParams{CommonParams: common, N: -1}, false},
		{"slow 1m", &SlowParams{CommonParams: common, Delay: time.Minute}, true},
		{"slow above 1m", &SlowParams{CommonParams: common, Delay: time.Minute + 1}, false},
		{"slow zero", &SlowParams{CommonParams: common}, false},
		{"slow bad probability", &SlowParams{CommonParams: CommonParams{Probability: 2}, Delay: time.Second}, false},
	} {
		if err := tc.p.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// Each comm fault type takes its own keys: n only for bad-param faults,
// delay only for slow; the spec carries what was given.
func TestCommParamsKeys(t *testing.T) {
	decode := func(typ CommFault, raw map[string]string) (CommParams, error) {
		p := NewCommParams(typ)
		return p, fault.DecodeParams(p, raw)
	}
	if _, err := decode(MemAllocFail, map[string]string{"n": "3"}); err == nil {
		t.Error("mem-alloc-fail took n")
	}
	if _, err := decode(Slow, map[string]string{"n": "3"}); err == nil {
		t.Error("slow took n")
	}
	if _, err := decode(BadParamOffset, map[string]string{"delay": "1s"}); err == nil {
		t.Error("bad-param-offset took delay")
	}
	p, err := decode(Slow, map[string]string{"delay": "5ms", "probability": "0.5", "count": "4"})
	if err != nil {
		t.Fatal(err)
	}
	want := FaultSpec{Type: Slow, Duration: "1m0s", Probability: 0.5, Count: 4, Delay: "5ms"}
	if got := p.Spec(Slow, time.Minute); got != want {
		t.Errorf("slow spec %+v, want %+v", got, want)
	}
	p, err = decode(BadParamNull, map[string]string{"n": "9"})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Spec(BadParamNull, time.Second); got.N != 9 || got.Probability != 1 || got.Delay != "" {
		t.Errorf("bad-param-null spec %+v", got)
	}
}
