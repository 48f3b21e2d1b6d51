package faultnet

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Params are the typed parameters of a network fault (fault.Params plus
// the link State they ask for). Every system whose links run through a Net
// takes the same parameters for the same fault type, so they live here,
// next to the State they produce. Fields carry the `param:"name"` tags the
// fault package decodes a scenario's params: map with.
type Params interface {
	Validate() error
	State() State
}

// paramError names the parameter a Validate error is about: the fault
// package reads ParamKey to point at the key in the scenario file.
type paramError struct {
	key string
	err error
}

func (e paramError) Error() string    { return e.err.Error() }
func (e paramError) Unwrap() error    { return e.err }
func (e paramError) ParamKey() string { return e.key }

func keyErr(key, format string, args ...any) error {
	return paramError{key: key, err: fmt.Errorf(format, args...)}
}

// UnmarshalText reads "hold", "cut" or "" (hold), so a DownMode is a
// scenario parameter.
func (d *DownMode) UnmarshalText(b []byte) error {
	m, err := ParseDownMode(string(b))
	if err != nil {
		return fmt.Errorf("%q: want hold or cut", b)
	}
	*d = m
	return nil
}

// DownParams: link-down, switch-down and partition. Mode is how the link
// is down: hold (default) or cut.
type DownParams struct {
	Mode DownMode `param:"mode"`
}

// NewDownParams returns the defaults: mode hold.
func NewDownParams() Params { return &DownParams{Mode: Hold} }

func (p *DownParams) Validate() error { return p.State().Validate() }
func (p *DownParams) State() State    { return State{Down: p.Mode} }

// FlakyParams: link-flaky, up for Up then down (in Mode) for Down, over and
// over. Defaults: 1s, 1s, hold.
type FlakyParams struct {
	Up   time.Duration `param:"up"`
	Down time.Duration `param:"down"`
	Mode DownMode      `param:"mode"`
}

// NewFlakyParams returns the defaults.
func NewFlakyParams() Params { return &FlakyParams{Up: time.Second, Down: time.Second, Mode: Hold} }

func (p *FlakyParams) Validate() error {
	if p.Up <= 0 || p.Down <= 0 {
		if p.Up <= 0 {
			return keyErr("up", "up %v must be a positive duration", p.Up)
		}
		return keyErr("down", "down %v must be a positive duration", p.Down)
	}
	return p.State().Validate()
}

func (p *FlakyParams) State() State {
	return State{Flaky: &Flaky{Up: p.Up, Down: p.Down, Mode: p.Mode}}
}

// DelayParams: delay, Delay added to every chunk (default 100ms).
type DelayParams struct {
	Delay time.Duration `param:"delay"`
}

// NewDelayParams returns the defaults.
func NewDelayParams() Params { return &DelayParams{Delay: 100 * time.Millisecond} }

func (p *DelayParams) Validate() error {
	if p.Delay <= 0 {
		return keyErr("delay", "delay %v must be a positive duration", p.Delay)
	}
	return p.State().Validate()
}

func (p *DelayParams) State() State { return State{Delay: p.Delay} }

// LossParams: loss, each chunk lost with probability Loss (default 0.1) and
// delayed by RTO (default DefaultRTO) as a retransmission would be.
type LossParams struct {
	Loss float64       `param:"loss"`
	RTO  time.Duration `param:"rto"`
}

// NewLossParams returns the defaults.
func NewLossParams() Params { return &LossParams{Loss: 0.1, RTO: DefaultRTO} }

func (p *LossParams) Validate() error {
	if !(p.Loss >= 0 && p.Loss <= 1) { // also rejects NaN
		return keyErr("loss", "loss %v is not a probability in [0, 1]", p.Loss)
	}
	if p.RTO <= 0 {
		return keyErr("rto", "rto %v must be a positive duration", p.RTO)
	}
	return p.State().Validate()
}

func (p *LossParams) State() State { return State{Loss: p.Loss, RTO: p.RTO} }

// ByteRate is bytes per second, written "250000", "512K", "1M", "1MB" or
// "2G" (binary multiples).
type ByteRate int64

// UnmarshalText parses a ByteRate.
func (r *ByteRate) UnmarshalText(b []byte) error {
	s := string(b)
	v := strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B")
	mult := int64(1)
	switch {
	case strings.HasSuffix(v, "K"):
		mult, v = 1<<10, strings.TrimSuffix(v, "K")
	case strings.HasSuffix(v, "M"):
		mult, v = 1<<20, strings.TrimSuffix(v, "M")
	case strings.HasSuffix(v, "G"):
		mult, v = 1<<30, strings.TrimSuffix(v, "G")
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return fmt.Errorf("%q is not a positive byte rate (e.g. 1M)", s)
	}
	*r = ByteRate(n * mult)
	return nil
}

// BandwidthParams: bandwidth, each direction limited to Rate (default 1M).
type BandwidthParams struct {
	Rate ByteRate `param:"rate"`
}

// NewBandwidthParams returns the defaults.
func NewBandwidthParams() Params { return &BandwidthParams{Rate: 1 << 20} }

func (p *BandwidthParams) Validate() error {
	if p.Rate <= 0 {
		return keyErr("rate", "rate %d must be positive", p.Rate)
	}
	return p.State().Validate()
}

func (p *BandwidthParams) State() State { return State{Bandwidth: int64(p.Rate)} }

// NewParams returns the defaults of the parameters of network fault type
// typ, or nil for a type that is not a network fault.
func NewParams(typ string) Params {
	switch typ {
	case "link-down", "switch-down", "partition":
		return NewDownParams()
	case "link-flaky":
		return NewFlakyParams()
	case "delay":
		return NewDelayParams()
	case "loss":
		return NewLossParams()
	case "bandwidth":
		return NewBandwidthParams()
	}
	return nil
}
