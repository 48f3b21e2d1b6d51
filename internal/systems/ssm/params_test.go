package ssm

import (
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
)

func TestBitflipParamsValidate(t *testing.T) {
	for _, tc := range []struct {
		p  BitflipParams
		ok bool
	}{
		{*NewBitflipParams(), true},
		{BitflipParams{Target: "expiry", Which: "random", Count: 1000}, true},
		{BitflipParams{Target: "stack", Which: "latest", Count: 1}, true},
		{BitflipParams{Target: "hashtable", Which: "latest", Count: 1}, false},
		{BitflipParams{Target: "value", Which: "newest", Count: 1}, false},
		{BitflipParams{Target: "value", Which: "latest", Count: 0}, false},
		{BitflipParams{Target: "value", Which: "latest", Count: 1001}, false},
	} {
		if err := tc.p.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: Validate() = %v, want ok %v", tc.p, err, tc.ok)
		}
	}
	p := NewBitflipParams()
	if err := fault.DecodeParams(p, map[string]string{"target": "key", "count": "4"}); err != nil {
		t.Fatal(err)
	}
	if r := p.Request(); r.Action != "bitflip" || r.Target != "key" || r.Which != "latest" || r.Count != 4 || p.Stack() {
		t.Errorf("request %+v", r)
	}
}

func TestSlowParamsValidate(t *testing.T) {
	for d, ok := range map[time.Duration]bool{time.Millisecond: true, time.Second: true, 0: false, -1: false, time.Second + 1: false} {
		if err := (&SlowParams{Delay: d}).Validate(); (err == nil) != ok {
			t.Errorf("delay %v: Validate() = %v, want ok %v", d, err, ok)
		}
	}
	if NewSlowParams().Validate() != nil {
		t.Error("defaults invalid")
	}
}
