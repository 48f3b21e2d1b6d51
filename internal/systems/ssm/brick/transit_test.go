package brick

import (
	"testing"
	"time"
)

func TestTransitLate(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	const offset = 3 * time.Second // the brick's clock runs 3 s ahead of the stub's
	sent := func(at time.Time) int64 { return at.Add(-offset).UnixMicro() }
	tr := newTransit()
	if got := tr.late(t0, 0); got != 0 {
		t.Fatalf("unknown send time: late %v, want 0", got)
	}
	// On time: 100 µs in transit each; the offset cancels.
	for i := range 5 {
		arr := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		if got := tr.late(arr, sent(arr.Add(-100*time.Microsecond))); got != 0 {
			t.Fatalf("request %d on time: late %v", i, got)
		}
	}
	// Held 200 ms by a lossy link.
	arr := t0.Add(time.Second)
	if got := tr.late(arr, sent(arr.Add(-200*time.Millisecond-100*time.Microsecond))); got != 200*time.Millisecond {
		t.Fatalf("held request: late %v, want 200ms", got)
	}
	// A faster path than ever seen lowers the baseline; it is never negative.
	if got := tr.late(arr, sent(arr.Add(-50*time.Microsecond))); got != 0 {
		t.Fatalf("faster request: late %v, want 0", got)
	}
	// The stub's clock steps back 1 s (requests look 1 s late): after two
	// baseline periods the step is the new baseline.
	step := time.Second
	late := func(at time.Time) time.Duration { return tr.late(at, sent(at.Add(-step-100*time.Microsecond))) }
	if got := late(t0.Add(2 * time.Second)); got < step {
		t.Fatalf("just after the step: late %v, want ≥ %v", got, step)
	}
	at := t0.Add(2*time.Second + 2*baseWindow)
	late(at.Add(-baseWindow)) // one sample in the period before
	if got := late(at); got != 0 {
		t.Fatalf("two periods after the step: late %v, want 0", got)
	}
}
