package raid

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/systems/raid/control"
)

// ControlLever is implemented by a fault.Target whose raid nodes run with
// the run's control token (the raid rig's target).
type ControlLever interface {
	RaidControl(node int) (*control.Client, error)
}

// raidSupport: the disk faults and maintenance events a raid cluster run by
// `faultbench run` takes through its nodes' control API. restart-node and
// restart-all are the generic process levers.
var raidSupport = fault.Support{Levers: []string{fault.LeverControl}, Systems: []string{Kind}}

// DiskFaults are the docs/scenario.md disk fault types, all injected through
// POST /control/fault.
var DiskFaults = []string{"disk-read-correctable", "disk-read-uncorrectable", "disk-write-correctable",
	"disk-write-uncorrectable", "disk-hw-error", "disk-illegal-command", "disk-hang-read", "disk-hang-write",
	"disk-hang-idle", "disk-power-fail", "disk-remove"}

func init() {
	for _, typ := range DiskFaults {
		fault.Register(typ, fault.InjectorFunc(injectDisk), raidSupport)
	}
	fault.Register(control.ReplaceDisk, fault.WithParams(NewReplaceDiskParams,
		func(ctx context.Context, t fault.Target, o fault.Occurrence, p *ReplaceDiskParams) (fault.Revert, error) {
			return maintain(ctx, t, o, maintenance{reinsert: p.Reinsert})
		}), raidSupport)
	fault.Register(control.StartReconstruction, fault.WithParams(NewStartReconstructionParams,
		func(ctx context.Context, t fault.Target, o fault.Occurrence, p *StartReconstructionParams) (fault.Revert, error) {
			return maintain(ctx, t, o, maintenance{force: p.Force})
		}), raidSupport)
	fault.Register(control.RemoveWrongDisk, fault.InjectorFunc(func(ctx context.Context, t fault.Target, o fault.Occurrence) (fault.Revert, error) {
		return maintain(ctx, t, o, maintenance{})
	}), raidSupport)
}

// ReplaceDiskParams: replace-disk. Reinsert puts back the disk a
// remove-wrong-disk pulled from this bay (stale, as it was) instead of a
// blank one; default false.
type ReplaceDiskParams struct {
	Reinsert bool `param:"reinsert"`
}

// NewReplaceDiskParams returns the defaults.
func NewReplaceDiskParams() *ReplaceDiskParams { return &ReplaceDiskParams{} }

// Validate accepts either value.
func (*ReplaceDiskParams) Validate() error { return nil }

// StartReconstructionParams: start-reconstruction. Force first forces a
// failed volume back with the disks present (the Windows 2000 repair
// docs/raid.md describes), then rebuilds if a member is missing; default
// false.
type StartReconstructionParams struct {
	Force bool `param:"force"`
}

// NewStartReconstructionParams returns the defaults.
func NewStartReconstructionParams() *StartReconstructionParams { return &StartReconstructionParams{} }

// Validate accepts either value.
func (*StartReconstructionParams) Validate() error { return nil }

// maintenance is what the parameters of a maintenance event ask for.
type maintenance struct{ reinsert, force bool }

func clientFor(t fault.Target, o fault.Occurrence) (*control.Client, error) {
	cl, ok := fault.As[ControlLever](t)
	if !ok {
		return nil, fmt.Errorf("%s on node %d: the cluster has no raid control API: %w", o.Type, o.Node, fault.ErrUnsupported)
	}
	c, err := cl.RaidControl(o.Node)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Type, err)
	}
	return c, nil
}

func diskOf(o fault.Occurrence) int {
	if o.Disk == nil {
		return 0
	}
	return *o.Disk
}

// gone reports an error of a control call that got no answer at all: the
// node is down or restarting (or died answering), and its faults went with
// its memory.
func gone(err error) bool {
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &oe) || (errors.As(err, &ne) && ne.Timeout()) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// injectDisk injects a disk fault into the disk in bay disk: of node
// node:. mode: sticky fires on every matching command until the clear;
// transient fires once (the scenario's duration only bounds how long an
// unfired fault waits). The clear reverts it through DELETE: it ends a
// hang, restores power, reinserts a pulled disk (which the array does not
// take back by itself). A fault already spent, or forgotten because its
// disk was replaced or its node restarted, needs no revert: the node
// answers 404, or nothing while it is down. Fault ids are unique across a
// node's restarts (faultIDBase), so the revert of a fault from before a
// restart cannot clear a fault injected since.
func injectDisk(ctx context.Context, t fault.Target, o fault.Occurrence) (fault.Revert, error) {
	c, err := clientFor(t, o)
	if err != nil {
		return nil, err
	}
	mode := "transient"
	if o.Sticky {
		mode = "sticky"
	}
	id, err := c.InjectFault(ctx, control.FaultRequest{Type: o.Type, Disk: diskOf(o), Mode: mode})
	if err != nil {
		return nil, fmt.Errorf("%s on node %d disk %d: %w", o.Type, o.Node, diskOf(o), err)
	}
	var once sync.Once
	var rerr error
	return func() error {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			rerr = c.RevertFault(ctx, id)
			if errors.Is(rerr, control.ErrNotFound) || gone(rerr) {
				rerr = nil
			}
		})
		return rerr
	}, nil
}

// maintain performs a maintenance event on node node:'s array through
// POST /control/maintenance. Events are instantaneous: nothing to revert.
func maintain(ctx context.Context, t fault.Target, o fault.Occurrence, m maintenance) (fault.Revert, error) {
	c, err := clientFor(t, o)
	if err != nil {
		return nil, err
	}
	d := diskOf(o)
	fail := func(err error) (fault.Revert, error) {
		return nil, fmt.Errorf("%s on node %d disk %d: %w", o.Type, o.Node, d, err)
	}
	noRevert := func() error { return nil }
	cl, _ := fault.As[*raidTarget](t)
	switch {
	case o.Type == control.ReplaceDisk && m.reinsert:
		if cl == nil {
			return fail(fault.ErrUnsupported)
		}
		id, ok := cl.rig.takePulled(bayKey{o.Node, d})
		if !ok {
			return fail(errors.New("params.reinsert: no disk was pulled from this bay by remove-wrong-disk"))
		}
		if err := c.RevertFault(ctx, id); err != nil {
			if errors.Is(err, control.ErrNotFound) {
				// Fault ids are unique across node restarts, so this is
				// never some other fault of a restarted node.
				err = fmt.Errorf("params.reinsert: the disk pulled from this bay is not out any more (reinserted already, or the node restarted since and formatted a new array): %w", err)
			}
			return fail(err)
		}
		return noRevert, nil
	case o.Type == control.StartReconstruction && m.force:
		if _, err := c.Maintenance(ctx, control.MaintenanceRequest{Action: control.Force}); err != nil {
			return fail(fmt.Errorf("force: %w", err))
		}
		// With automatic reconstruction the forced volume is already
		// rebuilding, or has nothing to rebuild: not an error.
		_, err := c.Maintenance(ctx, control.MaintenanceRequest{Action: control.StartReconstruction, Disk: d})
		if err != nil && !errors.Is(err, control.ErrConflict) {
			return fail(err)
		}
		return noRevert, nil
	}
	resp, err := c.Maintenance(ctx, control.MaintenanceRequest{Action: o.Type, Disk: d})
	if err != nil {
		return fail(err)
	}
	if o.Type == control.RemoveWrongDisk && cl != nil {
		cl.rig.remember(bayKey{o.Node, d}, resp.ID)
	}
	return noRevert, nil
}
