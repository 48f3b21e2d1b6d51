package fake

import (
	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/testbed"
)

// System is a system descriptor named name for tests: its Prepare logs
// "prepare" and returns a Rig on log; it claims to offer levers (which its
// target does not implement: use it for validation tests, or for faults
// whose levers the backend has).
func System(name string, log *Log, levers ...string) testbed.System {
	return testbed.System{
		Name: name, Levers: levers,
		Prepare: func(*testbed.Spec, testbed.Plan, int64) (testbed.Rig, error) {
			log.Add("prepare")
			return &Rig{Log: log}, nil
		},
	}
}

// Rig is a testbed.Rig that logs "rig.close" at every Close and wraps the
// cluster in a Wrapped target.
type Rig struct{ Log *Log }

// Target wraps c.
func (r *Rig) Target(c testbed.Cluster) fault.Target { return &Wrapped{Inner: c} }

// Close logs "rig.close".
func (r *Rig) Close() error {
	r.Log.Add("rig.close")
	return nil
}

// Wrapped is a target that adds no lever and reaches Inner's through
// Unwrap, as a system's rig does.
type Wrapped struct{ Inner fault.Target }

// Size is Inner's.
func (w *Wrapped) Size() int { return w.Inner.Size() }

// Unwrap implements fault.Wrapper.
func (w *Wrapped) Unwrap() fault.Target { return w.Inner }
