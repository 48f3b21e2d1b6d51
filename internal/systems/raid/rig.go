package raid

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	ctl "github.com/faultbench/faultbench/internal/control"
	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/node"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/systems/raid/control"
	"github.com/faultbench/faultbench/internal/testbed"
)

// TokenEnv is the environment variable through which the testbed hands
// every raid node the run's control token: the environment of a process is
// readable only by its user, its argv by everyone (ps). A node without
// option control_token takes its token from there.
const TokenEnv = "FAULTBENCH_RAID_TOKEN"

func init() {
	testbed.RegisterSystem(testbed.System{
		Name: Kind, NodeKinds: []string{Kind}, PageSet: true,
		Levers: []string{fault.LeverControl},
		Check:  system{}.Check, Prepare: system{}.Prepare,
	})
}

// system adapts the testbed to raid: every node is a whole RAID-5 web
// server of its own (usually one), whose control API — on the node's own
// address — takes the disk faults and maintenance events of the run,
// guarded by a per-run token.
type system struct{}

// Check validates a raid cluster before anything runs: the node options
// (by parsing them as node 1 will), no control_token of the scenario's
// own, and every disk fault and maintenance event aimed at a bay that
// exists (1..disks+spares; start-reconstruction also takes 0, any spare).
// Every error names file:line and the key.
func (system) Check(sc *scenario.Scenario, _ testbed.Plan) error {
	c := sc.Cluster
	var errs []error
	opt := func(k string) []any { return []any{"cluster", "options", k} }
	if _, set := c.Options["control_token"]; set {
		errs = append(errs, sc.Errorf(opt("control_token"), "option control_token is set by faultbench for each run (drawn per run, passed in the environment)"))
	}
	opts := maps.Clone(c.Options)
	delete(opts, "control_token")
	set, err := ParseSettings(node.Config{Node: 1, Pages: c.Pages, PageSize: c.PageSize, Options: opts})
	if err != nil {
		for _, e := range unjoin(err) {
			errs = append(errs, sc.Errorf([]any{"cluster", "options"}, "%v", e))
		}
		return errors.Join(errs...)
	}
	bays := set.Array.Disks + set.Array.Spares
	for i, f := range sc.Faults {
		t, ok := fault.Lookup(f.Type)
		if !ok || t.Target != fault.TargetDisk || f.Disk == nil {
			continue // unknown types and a missing disk: are reported by fault.Validate
		}
		low := 1
		if f.Type == control.StartReconstruction {
			low = 0
		}
		if d := *f.Disk; d < low || d > bays {
			errs = append(errs, sc.Errorf([]any{"faults", i, "disk"}, "%s: disk %d does not exist: the array has bays 1 to %d (disks %d + spares %d; cluster.options disks and spares)",
				f.Type, d, bays, set.Array.Disks, set.Array.Spares))
		}
	}
	return errors.Join(errs...)
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// Prepare draws the run's control token and hands it to every node
// through the environment. Ports stay as the scenario says (0: one drawn
// per node); the fault target finds each node's address on the running
// cluster.
func (system) Prepare(spec *testbed.Spec, _ testbed.Plan, _ int64) (testbed.Rig, error) {
	if _, set := spec.Options["control_token"]; set {
		return nil, errors.New("option control_token is set by faultbench for each run")
	}
	token, err := ctl.NewToken()
	if err != nil {
		return nil, err
	}
	spec.Env = append(slices.Clip(spec.Env), TokenEnv+"="+token)
	return &rig{token: token, window: spec.Window, clock: spec.Clock, pulled: map[bayKey]int{}}, nil
}

// bayKey names one bay of one node.
type bayKey struct{ node, disk int }

type rig struct {
	token  string
	window time.Duration // the run's window: sample at least this often
	clock  testbed.Clock

	mu     sync.Mutex
	pulled map[bayKey]int // remove-wrong-disk: the fault id whose revert reinserts the disk
}

func (r *rig) Target(c testbed.Cluster) fault.Target { return &raidTarget{cluster: c, rig: r} }

// Close has nothing to stop: the control API lives in the nodes.
func (r *rig) Close() error { return nil }

// raidTarget is a running raid cluster as faults see it: each node's
// control API (ControlLever), wrapping the backend's cluster, whose levers
// fault.As finds through Unwrap.
type raidTarget struct {
	cluster testbed.Cluster
	rig     *rig
}

// Size is the cluster's.
func (c *raidTarget) Size() int { return c.cluster.Size() }

// Unwrap implements fault.Wrapper.
func (c *raidTarget) Unwrap() fault.Target { return c.cluster }

// RaidControl implements ControlLever.
func (c *raidTarget) RaidControl(n int) (*control.Client, error) {
	return controlClient(c.cluster, n, c.rig.token)
}

// controlClient returns a client of node n's control API.
func controlClient(c testbed.Cluster, n int, token string) (*control.Client, error) {
	for _, nd := range c.Nodes() {
		if nd.ID == n {
			return control.NewClient(nd.Addr, token), nil
		}
	}
	return nil, fmt.Errorf("no node %d (cluster has %d)", n, c.Size())
}

// remember keeps the fault id of a wrong-disk pull, for a later
// replace-disk with params reinsert.
func (r *rig) remember(k bayKey, id int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pulled[k] = id
}

// takePulled returns and forgets the pull of bay k.
func (r *rig) takePulled(k bayKey) (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.pulled[k]
	delete(r.pulled, k)
	return id, ok
}
