package stub

import (
	"errors"
	"fmt"
	"time"
)

// Config configures a stub. Start from DefaultConfig (the paper's W=3, WQ=2,
// R=2, 60 ms); Validate runs before any connection is made.
type Config struct {
	// Bricks are the addresses the stub dials, one per brick: the bricks'
	// own listen addresses or faultnet proxies in front of them. Which
	// brick answers at an address is learnt from its beacons, so cookies
	// name bricks by id and stay valid across stubs that reach the same
	// brick through different proxies.
	Bricks []string

	// Style is how the bricks replicate a session: Active (the stub writes
	// to W bricks and waits for WQ, the paper's design) or Passive (the
	// primary brick alone takes reads and writes and ships its writes to
	// its backups after acknowledging them). Active by default.
	Style Style

	W  int // write group: bricks each write is sent to (Passive: ignored by the stub; the bricks' degree)
	WQ int // write quota: acknowledgements before a write returns (Passive: the primary's one)
	R  int // read group: bricks of the cookie each read is sent to (Passive: the primary alone)

	// Timeout bounds every operation: the stub waits this long for WQ
	// acknowledgements or one valid read reply, and tells the bricks the
	// remaining budget so they can discard a request that has expired.
	Timeout time.Duration

	// AIMD keeps a sending window per brick, as TCP does: slow start (+1 per
	// reply) until the first timeout, then additive increase (+1/window per
	// reply); a timeout halves it, at most once per Timeout. It rejects
	// an operation at once with ErrOverloaded when too few bricks have an
	// open window. Off, the stub sends everything (Ling, Kiciman and Fox 2004, §5.2's collapse).
	AIMD          bool
	InitialWindow float64 // default 32: above a front end's usual concurrency, so a cold stub does not refuse its first burst
	MaxWindow     float64 // default 1024

	// BeaconTimeout: a brick is dead when no beacon came for this long;
	// default 500ms (five of the brick's default 100 ms beacons).
	BeaconTimeout time.Duration
	// MaxValue bounds a value the stub accepts to write; default 256 KiB.
	MaxValue int
	// OutboxLen bounds the frames queued to one brick's connection; a full
	// outbox fails the send at once instead of blocking (Ling, Kiciman and Fox 2004, §7.3).
	OutboxLen int

	Seed int64 // drives the choice of write and read groups

	// OnEvent receives system.* events (brick up, brick down); it is called
	// from the stub's goroutine and must not block. Nil drops them.
	OnEvent func(kind, detail string)
}

// DefaultConfig returns the paper's settings with protection on.
func DefaultConfig() Config {
	return Config{
		W: 3, WQ: 2, R: 2,
		Timeout:       60 * time.Millisecond,
		AIMD:          true,
		InitialWindow: 32,
		MaxWindow:     1024,
		BeaconTimeout: 500 * time.Millisecond,
		MaxValue:      256 << 10,
		OutboxLen:     4096,
	}
}

// Style is a replication style: how many bricks take a write before it is
// acknowledged, and which bricks answer.
type Style uint8

// Replication styles (Dumitras and Narasimhan 2005, §2.1's two, mapped onto
// SSM: docs/magical-1pct.md).
const (
	// Active: every write goes to W bricks at once and is acknowledged
	// after WQ of them stored it; a read asks R of the bricks the cookie
	// names. No brick is special (Ling, Kiciman and Fox 2004, §3).
	Active Style = iota
	// Passive (warm passive): the primary — the lowest-numbered live brick
	// when the stub last chose one — alone stores and answers; it ships
	// each write to its backups after acknowledging it, so a write
	// acknowledged less than a shipping interval before the primary dies
	// is lost. The stub takes the primary for dead when its connection
	// breaks or its beacons stop for BeaconTimeout, and promotes the
	// lowest-numbered live brick. A brick that comes back does not take
	// the primary's place back.
	Passive
)

// ParseStyle reads a style's name: active or passive.
func ParseStyle(s string) (Style, error) {
	switch s {
	case "active":
		return Active, nil
	case "passive":
		return Passive, nil
	}
	return Active, fmt.Errorf("%w: style %q: want active or passive", ErrConfig, s)
}

func (s Style) String() string {
	if s == Passive {
		return "passive"
	}
	return "active"
}

// ErrConfig wraps every validation failure.
var ErrConfig = errors.New("ssm stub: bad config")

// Validate reports the first impossible setting.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Style != Active && c.Style != Passive:
		return bad("style %d is neither active nor passive", c.Style)
	case c.W < 1 || c.W > MaxBricks:
		return bad("w=%d must be in [1, %d]", c.W, MaxBricks)
	case c.Style == Active && (c.WQ < 1 || c.WQ > c.W):
		return bad("wq=%d must be in [1, w=%d]: a write cannot wait for more acknowledgements than it sends", c.WQ, c.W)
	case c.Style == Active && (c.R < 1 || c.R > c.W):
		return bad("r=%d must be in [1, w=%d]", c.R, c.W)
	case c.Timeout <= 0 || c.Timeout > time.Hour:
		return bad("timeout %v must be in (0, 1h]", c.Timeout)
	case c.AIMD && (c.InitialWindow < 1 || c.MaxWindow < c.InitialWindow):
		return bad("windows: need 1 <= initial_window (%v) <= max_window (%v)", c.InitialWindow, c.MaxWindow)
	case c.BeaconTimeout <= 0:
		return bad("beacon_timeout %v must be positive", c.BeaconTimeout)
	case c.MaxValue < 1:
		return bad("max_value %d must be positive", c.MaxValue)
	case c.OutboxLen < 1:
		return bad("outbox %d must be positive", c.OutboxLen)
	}
	return nil
}
