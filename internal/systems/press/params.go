package press

import (
	"fmt"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
)

// CommParams are the parameters of a comm fault, as the control endpoint
// receives them (FaultSpec): every type takes CommonParams, the bad-param
// faults also n (BadParamParams), slow also delay (SlowParams), mem-pin-fail
// also pinnable (MemPinParams). A key a
// type does not take is rejected when the scenario is checked.
type CommParams interface {
	Validate() error
	// Spec is the control request of the fault of type typ, lasting d.
	Spec(typ CommFault, d time.Duration) FaultSpec
}

// CommonParams are the parameters every comm fault takes (mem-alloc-fail
// takes only these).
type CommonParams struct {
	Probability float64 `param:"probability"` // per message, (0, 1], default 1
	Count       int     `param:"count"`       // messages to hit at most; 0 (default) = no limit
}

// BadParamParams: bad-param-null, bad-param-offset, bad-param-size.
type BadParamParams struct {
	CommonParams
	N int `param:"n"` // the offset, 1..100; 0 (default) draws it from 1..100
}

// MemPinParams: mem-pin-fail.
type MemPinParams struct {
	CommonParams
	Pinnable float64 `param:"pinnable"` // fraction of the cache that stays pinnable, (0, 1), default 0.25
}

// SlowParams: slow.
type SlowParams struct {
	CommonParams
	Delay time.Duration `param:"delay"` // per message, (0, 1m], default 100ms
}

// NewCommParams returns the defaults of the parameters of comm fault typ.
func NewCommParams(typ CommFault) CommParams {
	common := CommonParams{Probability: 1}
	switch typ {
	case BadParamNull, BadParamOffset, BadParamSize:
		return &BadParamParams{CommonParams: common}
	case Slow:
		return &SlowParams{CommonParams: common, Delay: 100 * time.Millisecond}
	case MemPinFail:
		return &MemPinParams{CommonParams: common, Pinnable: DefaultPinnable}
	}
	return &common
}

// Validate checks the ranges the control endpoint accepts.
func (p *CommonParams) Validate() error {
	if !(p.Probability > 0 && p.Probability <= 1) { // also rejects NaN
		return &fault.ParamError{Key: "probability", Err: fmt.Errorf("probability %v is not in (0, 1]", p.Probability)}
	}
	if p.Count < 0 {
		return &fault.ParamError{Key: "count", Err: fmt.Errorf("count %d is negative", p.Count)}
	}
	return nil
}

// Spec implements CommParams.
func (p *CommonParams) Spec(typ CommFault, d time.Duration) FaultSpec {
	return FaultSpec{Type: typ, Duration: d.String(), Probability: p.Probability, Count: p.Count}
}

// Validate checks the ranges the control endpoint accepts.
func (p *BadParamParams) Validate() error {
	if p.N < 0 || p.N > 100 {
		return &fault.ParamError{Key: "n", Err: fmt.Errorf("n %d is not in 0..100", p.N)}
	}
	return p.CommonParams.Validate()
}

// Spec implements CommParams.
func (p *BadParamParams) Spec(typ CommFault, d time.Duration) FaultSpec {
	s := p.CommonParams.Spec(typ, d)
	s.N = p.N
	return s
}

// Validate checks the ranges the control endpoint accepts.
func (p *SlowParams) Validate() error {
	if p.Delay <= 0 || p.Delay > time.Minute {
		return &fault.ParamError{Key: "delay", Err: fmt.Errorf("delay %v is not in (0, 1m]", p.Delay)}
	}
	return p.CommonParams.Validate()
}

// Spec implements CommParams.
func (p *SlowParams) Spec(typ CommFault, d time.Duration) FaultSpec {
	s := p.CommonParams.Spec(typ, d)
	s.Delay = p.Delay.String()
	return s
}

// Validate checks the ranges the control endpoint accepts.
func (p *MemPinParams) Validate() error {
	if !(p.Pinnable > 0 && p.Pinnable < 1) {
		return &fault.ParamError{Key: "pinnable", Err: fmt.Errorf("pinnable %v is not in (0, 1)", p.Pinnable)}
	}
	return p.CommonParams.Validate()
}

// Spec implements CommParams.
func (p *MemPinParams) Spec(typ CommFault, d time.Duration) FaultSpec {
	s := p.CommonParams.Spec(typ, d)
	s.Pinnable = p.Pinnable
	return s
}
