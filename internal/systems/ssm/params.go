package ssm

import (
	"fmt"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/systems/ssm/brick"
)

// The parameters of the SSM brick faults. They are decoded and validated
// by the fault package when the scenario is checked (file:line, unknown keys
// rejected), and the injectors receive them typed. The network faults of an
// SSM cluster take faultnet's parameters.

// BitflipParams: bitflip (Ling et al. (2004) §5.6). Target is what is
// flipped: value (default), key, checksum, expiry, or stack — §5.5's flip of
// the stack pointer, which crashes the brick at once. Which picks the
// entries: latest (default) or random. Count is how many entries, 1..1000
// (default 1).
type BitflipParams struct {
	Target string `param:"target"`
	Which  string `param:"which"`
	Count  int    `param:"count"`
}

// NewBitflipParams returns the defaults.
func NewBitflipParams() *BitflipParams {
	return &BitflipParams{Target: string(brick.FlipValue), Which: "latest", Count: 1}
}

// Validate checks the target, which and count.
func (p *BitflipParams) Validate() error {
	switch brick.FlipTarget(p.Target) {
	case brick.FlipValue, brick.FlipKey, brick.FlipChecksum, brick.FlipExpiry, "stack":
	default:
		return &fault.ParamError{Key: "target", Err: fmt.Errorf("%q is unknown (want value, checksum, expiry, key or stack)", p.Target)}
	}
	switch p.Which {
	case "latest", "random":
	default:
		return &fault.ParamError{Key: "which", Err: fmt.Errorf("%q is unknown (want latest or random)", p.Which)}
	}
	if p.Count < 1 || p.Count > 1000 {
		return &fault.ParamError{Key: "count", Err: fmt.Errorf("%d: want 1 to 1000", p.Count)}
	}
	return nil
}

// Stack reports target stack: the brick crashes instead of flipping.
func (p *BitflipParams) Stack() bool { return p.Target == "stack" }

// Request is the brick's control request of the flip.
func (p *BitflipParams) Request() brick.ControlRequest {
	return brick.ControlRequest{Action: "bitflip", Target: p.Target, Which: p.Which, Count: p.Count}
}

// SlowParams: slow (Ling et al. (2004) §5.8), the brick sleeping Delay
// before every message: above 0, at most 1s (default 1ms).
type SlowParams struct {
	Delay time.Duration `param:"delay"`
}

// NewSlowParams returns the defaults.
func NewSlowParams() *SlowParams { return &SlowParams{Delay: time.Millisecond} }

// Validate checks the delay.
func (p *SlowParams) Validate() error {
	if p.Delay <= 0 || p.Delay > time.Second {
		return &fault.ParamError{Key: "delay", Err: fmt.Errorf("%v: want a duration above 0, at most 1s", p.Delay)}
	}
	return nil
}
