package faultnet

import (
	"math"
	"testing"
	"time"
)

func TestParamsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Params
		ok   bool
	}{
		{"down defaults", NewDownParams(), true},
		{"down cut", &DownParams{Mode: Cut}, true},
		{"down up", &DownParams{Mode: Up}, true}, // a zero mode is a healthy link, not an error
		{"down unknown mode", &DownParams{Mode: 7}, false},
		{"flaky defaults", NewFlakyParams(), true},
		{"flaky no up", &FlakyParams{Up: 0, Down: time.Second}, false},
		{"flaky negative down", &FlakyParams{Up: time.Second, Down: -1}, false},
		{"delay defaults", NewDelayParams(), true},
		{"delay zero", &DelayParams{}, false},
		{"delay negative", &DelayParams{Delay: -time.Millisecond}, false},
		{"loss defaults", NewLossParams(), true},
		{"loss certain", &LossParams{Loss: 1, RTO: time.Millisecond}, true},
		{"loss above 1", &LossParams{Loss: 1.01, RTO: time.Millisecond}, false},
		{"loss negative", &LossParams{Loss: -0.1, RTO: time.Millisecond}, false},
		{"loss NaN", &LossParams{Loss: math.NaN(), RTO: time.Millisecond}, false},
		{"loss no rto", &LossParams{Loss: 0.5}, false},
		{"bandwidth defaults", NewBandwidthParams(), true},
		{"bandwidth zero", &BandwidthParams{}, false},
	} {
		if err := tc.p.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

func TestParamsState(t *testing.T) {
	if s := (&LossParams{Loss: 0.7, RTO: time.Second}).State(); s.Loss != 0.7 || s.RTO != time.Second {
		t.Errorf("loss state %+v", s)
	}
	if s := (&FlakyParams{Up: 1, Down: 2, Mode: Cut}).State(); s.Flaky == nil || *s.Flaky != (Flaky{1, 2, Cut}) {
		t.Errorf("flaky state %+v", s)
	}
	if s := (&BandwidthParams{Rate: 512 << 10}).State(); s.Bandwidth != 512<<10 {
		t.Errorf("bandwidth state %+v", s)
	}
	for _, typ := range []string{"link-down", "switch-down", "partition", "link-flaky", "delay", "loss", "bandwidth"} {
		if p := NewParams(typ); p == nil || p.Validate() != nil {
			t.Errorf("%s: defaults %v invalid", typ, p)
		}
	}
	if NewParams("app-crash") != nil {
		t.Error("app-crash has network params")
	}
}

func TestByteRate(t *testing.T) {
	for in, want := range map[string]ByteRate{"250000": 250000, "512K": 512 << 10, "1M": 1 << 20, "1mb": 1 << 20, " 2G ": 2 << 30} {
		var r ByteRate
		if err := r.UnmarshalText([]byte(in)); err != nil || r != want {
			t.Errorf("%q: %d, %v; want %d", in, r, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1K", "1T", "fast", "9999999999G"} {
		var r ByteRate
		if err := r.UnmarshalText([]byte(in)); err == nil {
			t.Errorf("%q accepted as %d", in, r)
		}
	}
}

func FuzzByteRate(f *testing.F) {
	for _, s := range []string{"1M", "512K", "0", "-5", "9223372036854775807", "4611686018427387904G"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var r ByteRate
		if err := r.UnmarshalText([]byte(s)); err == nil && r <= 0 {
			t.Fatalf("%q decoded to non-positive rate %d", s, r)
		}
	})
}
