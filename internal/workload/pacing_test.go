package workload

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestPaceAt(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct{ at, tick, want time.Duration }{
		{1500 * time.Microsecond, 0, 1500 * time.Microsecond}, // no tick: the instant itself
		{0, ms, 0},
		{1, ms, ms},
		{ms, ms, ms}, // on a tick: not delayed
		{ms + 1, ms, 2 * ms},
		{1999 * time.Microsecond, ms, 2 * ms},
		{7 * time.Hour, 3 * ms, 7 * time.Hour},
	} {
		if got := paceAt(c.at, c.tick); got != c.want {
			t.Errorf("paceAt(%v, %v) = %v, want %v", c.at, c.tick, got, c.want)
		}
	}
}

// With a pacing tick every arrival is still recorded, none is handed on
// before the tick at or after its instant, and the send lag says so.
func TestPacingTickHandsOnAtTicks(t *testing.T) {
	const tick = 2 * time.Millisecond
	sink := &sliceSink{}
	cfg := WithDefaults(Config{Driver: "null", Rate: 4000, Arrivals: "constant", Clients: 2, Trace: "zipf:5:1", PacingTick: tick,
		Targets: []Target{{1, "127.0.0.1:9"}}})
	if err := Validate(cfg); err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), cfg, time.Now(), 100*time.Millisecond, sink); err != nil {
		t.Fatal(err)
	}
	reqs := sink.sorted()
	if len(reqs) != 400 {
		t.Fatalf("%d records, want the 400 arrivals of 100 ms at 4000/s", len(reqs))
	}
	for _, r := range reqs {
		at := time.Duration(r.StartS * 1e9)
		early := paceAt(at, tick) - at
		// StartS is rounded to float64 seconds: allow a nanosecond.
		if lag := time.Duration(r.SendLagS * 1e9); lag < early-time.Nanosecond {
			t.Fatalf("arrival at %v handed on %v after its instant, before its tick %v", at, lag, paceAt(at, tick))
		}
	}
}

func TestValidatePacingTick(t *testing.T) {
	base := Config{Rate: 10, Trace: "zipf:3:1", Targets: []Target{{1, "127.0.0.1:1"}}}
	neg := base
	neg.PacingTick = -time.Millisecond
	closed := Config{Driver: "null", Model: ModelClosed, Trace: "zipf:3:1", PacingTick: time.Millisecond, Targets: base.Targets}
	for name, cfg := range map[string]Config{"negative": neg, "closed": closed} {
		if err := Validate(WithDefaults(cfg)); err == nil || !strings.Contains(err.Error(), "pacing_tick") {
			t.Errorf("%s: error %v does not mention pacing_tick", name, err)
		}
	}
}
