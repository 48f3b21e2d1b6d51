package netns

import (
	"github.com/faultbench/faultbench/internal/kernelfault"
	"github.com/faultbench/faultbench/internal/testbed"
	"github.com/faultbench/faultbench/internal/warden"
)

// guard is the controller's side of the run's warden (warden.Client): a
// process in the host namespace that owns the run's journal and removes
// everything in it when this controller's pipe closes or its lease
// lapses. The controller journals every object through the warden's
// socket before creating it, and has it apply and revert kernel faults.
type guard struct{ *warden.Client }

// startGuard starts the warden for spec.RunID, connects, and renews the
// lease every warden.RenewEvery.
func startGuard(spec testbed.Spec) (*guard, error) {
	c, err := warden.StartClient(warden.ClientSpec{RunID: spec.RunID, Executable: spec.Executable, Env: spec.Env, Dir: spec.Dir})
	if err != nil {
		return nil, err
	}
	return &guard{c}, nil
}

// callTimeout bounds one request to the warden (tests shorten it).
var callTimeout = warden.CallTimeout

func (g *guard) notifyLost(f func(why string)) { g.NotifyLost(f) }
func (g *guard) release() error                { return g.Release() }

// inject has the warden apply f and returns its evidence.
func (g *guard) inject(f kernelfault.Fault) (string, error) { return g.Inject(f) }

// revert has the warden revert fault id and returns its evidence.
func (g *guard) revert(id string) (string, error) { return g.Revert(id) }
