package faultnet

import (
	"fmt"
	"time"
)

// DownMode says how a down link behaves.
type DownMode uint8

const (
	// Up forwards bytes.
	Up DownMode = iota
	// Hold blackholes: new connections are accepted but not forwarded,
	// bytes in flight wait, and everything resumes when the link comes back
	// (TCP over a pulled cable: silence, then retransmission succeeds).
	Hold
	// Cut refuses new connections and resets existing ones (a fabric that
	// reports failures at once).
	Cut
)

func (d DownMode) String() string {
	switch d {
	case Up:
		return "up"
	case Hold:
		return "hold"
	case Cut:
		return "cut"
	}
	return fmt.Sprintf("downmode(%d)", uint8(d))
}

// ParseDownMode maps "hold", "cut" (or "" for hold) to a DownMode.
func ParseDownMode(s string) (DownMode, error) {
	switch s {
	case "", "hold":
		return Hold, nil
	case "cut":
		return Cut, nil
	}
	return Up, fmt.Errorf("faultnet: down mode %q is unknown (want hold or cut)", s)
}

// Flaky alternates a link between up (for Up) and down (for Down, in mode
// Mode, Hold when zero), starting up.
type Flaky struct {
	Up, Down time.Duration
	Mode     DownMode
}

// State is a link's fault state. The zero State is a healthy link.
type State struct {
	Down      DownMode      // Up, Hold or Cut
	Delay     time.Duration // added before every chunk, each direction
	Loss      float64       // probability a chunk is "lost" and delayed by RTO
	RTO       time.Duration // retransmission delay of a lost chunk; 200ms when zero
	Bandwidth int64         // bytes per second each direction; 0 = unlimited
	Flaky     *Flaky        // nil = not flaky
}

// DefaultRTO is the delay a lost chunk suffers when State.RTO is zero: Linux's
// minimum retransmission timeout.
const DefaultRTO = 200 * time.Millisecond

// Validate reports an impossible state.
func (s State) Validate() error {
	switch {
	case s.Down > Cut:
		return fmt.Errorf("faultnet: down mode %d is unknown", s.Down)
	case s.Delay < 0:
		return fmt.Errorf("faultnet: delay %v is negative", s.Delay)
	case s.Loss < 0 || s.Loss > 1:
		return fmt.Errorf("faultnet: loss %v is outside [0, 1]", s.Loss)
	case s.RTO < 0:
		return fmt.Errorf("faultnet: rto %v is negative", s.RTO)
	case s.Bandwidth < 0:
		return fmt.Errorf("faultnet: bandwidth %d is negative", s.Bandwidth)
	case s.Flaky != nil && (s.Flaky.Up <= 0 || s.Flaky.Down <= 0):
		return fmt.Errorf("faultnet: flaky needs positive up and down periods, got %v/%v", s.Flaky.Up, s.Flaky.Down)
	case s.Flaky != nil && s.Flaky.Mode > Cut:
		return fmt.Errorf("faultnet: flaky down mode %d is unknown", s.Flaky.Mode)
	}
	return nil
}

// merge composes two overlapping faults: the harsher down mode, delays
// added, independent losses combined, the tighter bandwidth, the first flaky.
func merge(a, b State) State {
	out := a
	if b.Down > out.Down {
		out.Down = b.Down
	}
	out.Delay += b.Delay
	out.Loss = 1 - (1-a.Loss)*(1-b.Loss)
	if b.RTO > out.RTO {
		out.RTO = b.RTO
	}
	if b.Bandwidth > 0 && (out.Bandwidth == 0 || b.Bandwidth < out.Bandwidth) {
		out.Bandwidth = b.Bandwidth
	}
	if out.Flaky == nil {
		out.Flaky = b.Flaky
	}
	return out
}

// downAt is the down mode in force at time now for a state set at since.
func (s State) downAt(since, now time.Time) DownMode {
	if s.Down != Up || s.Flaky == nil {
		return s.Down
	}
	period := s.Flaky.Up + s.Flaky.Down
	if now.Sub(since)%period < s.Flaky.Up {
		return Up
	}
	if s.Flaky.Mode == Up {
		return Hold
	}
	return s.Flaky.Mode
}
