package ssm

import (
	"errors"
	"testing"
	"time"
)

// Pinpoint may decide to restart several bricks at once (a stalled host
// silences them all); the restarter lets only WQ−1 restarts through per
// window, so no session loses every copy, and lets the next through once
// the window has passed.
func TestRestartBudget(t *testing.T) {
	var restarted []int
	b := &brickRestarter{restart: func(n int) error { restarted = append(restarted, n); return nil },
		stop: func(int) error { return nil }, limit: 1, window: 50 * time.Millisecond}
	if err := b.Restart(2); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{3, 7} {
		if err := b.Restart(n); !errors.Is(err, errRestartBudget) {
			t.Fatalf("restart of brick %d right after another: %v, want errRestartBudget", n, err)
		}
	}
	time.Sleep(60 * time.Millisecond)
	if err := b.Restart(3); err != nil {
		t.Fatalf("restart after the window: %v", err)
	}
	if len(restarted) != 2 || restarted[0] != 2 || restarted[1] != 3 {
		t.Fatalf("restarted %v, want [2 3]", restarted)
	}
}

// The budget is WQ−1 restarts, at least one.
func TestRunSettings(t *testing.T) {
	for _, c := range []struct {
		opts  map[string]string
		limit int
		pin   bool
	}{
		{map[string]string{}, 1, false},
		{map[string]string{"wq": "3", "pinpoint": "on"}, 2, true},
		{map[string]string{"wq": "1", "pinpoint": "off"}, 1, false},
	} {
		s, errs := parseRunSettings(c.opts)
		if len(errs) != 0 || s.restartLimit != c.limit || s.pinpoint != c.pin || s.interval != time.Second {
			t.Errorf("%v: %+v %v, want limit %d pinpoint %v", c.opts, s, errs, c.limit, c.pin)
		}
	}
	if _, errs := parseRunSettings(map[string]string{"pinpoint": "maybe", "pinpoint_interval": "1h"}); len(errs) != 2 {
		t.Errorf("bad settings: %v, want 2 errors", errs)
	}
}
