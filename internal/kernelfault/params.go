package kernelfault

import (
	"fmt"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/faultnet"
)

// HogParams are cpu-hog's parameters.
type HogParams struct {
	CPUs int `param:"cpus"` // busy threads in the node's cgroup, default 1
}

// NewHogParams returns the defaults.
func NewHogParams() *HogParams { return &HogParams{CPUs: 1} }

// Validate checks cpus is in [1, 64].
func (p *HogParams) Validate() error {
	if p.CPUs < 1 || p.CPUs > 64 {
		return &fault.ParamError{Key: "cpus", Err: fmt.Errorf("cpus %d: want 1..64 busy threads", p.CPUs)}
	}
	return nil
}

// PressureParams are mem-pressure's parameters.
type PressureParams struct {
	// Size is the resident memory the balloon holds (e.g. 256M), default 64M.
	Size faultnet.ByteRate `param:"size"`
}

// NewPressureParams returns the defaults.
func NewPressureParams() *PressureParams { return &PressureParams{Size: 64 << 20} }

// maxBalloon bounds a balloon: 64 GiB.
const maxBalloon = 64 << 30

// Validate checks the size is positive and bounded.
func (p *PressureParams) Validate() error {
	if p.Size <= 0 || p.Size > maxBalloon {
		return &fault.ParamError{Key: "size", Err: fmt.Errorf("size %d: want a positive size up to 64G (e.g. 256M)", p.Size)}
	}
	return nil
}
