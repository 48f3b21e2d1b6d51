package fault

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Target is the running cluster faults act on. It is deliberately tiny;
// injectors find the levers they need by type assertion.
type Target interface {
	Size() int // number of nodes, numbered 1..Size
}

// AppLever controls a node's application (testbed.Cluster implements it).
type AppLever interface {
	KillApp(node int) error    // SIGKILL the application; the host stays up
	StartApp(node int) error   // start it (booting a downed host first); no-op if running
	RestartApp(node int) error // end it gracefully and start it again
}

// ProcessLever stops and continues all of a node's processes.
type ProcessLever interface {
	Pause(node int) error  // SIGSTOP
	Resume(node int) error // SIGCONT
}

// HostLever takes a node's host down; AppLever.StartApp boots it again.
type HostLever interface {
	HostDown(node int, graceful bool) error
}

// ErrUnsupported is returned by Inject when the target lacks a lever the
// fault needs. Validation (Supported) normally prevents it.
var ErrUnsupported = errors.New("fault not supported by this target")

// Revert undoes one injected fault. It is idempotent and safe to call from
// any goroutine, including after an interrupt and after the cluster stopped
// (then it does nothing useful and may return an error worth logging only).
type Revert func() error

// Injector injects one fault type. Inject returns once the fault is in
// effect; the returned Revert (never nil on success) clears it. Inject is
// called from the Scheduler's goroutine and must not block beyond the
// target's own bounded operations.
type Injector interface {
	Inject(ctx context.Context, t Target, o Occurrence) (Revert, error)
}

// InjectorFunc adapts a function to Injector.
type InjectorFunc func(ctx context.Context, t Target, o Occurrence) (Revert, error)

// Inject calls f.
func (f InjectorFunc) Inject(ctx context.Context, t Target, o Occurrence) (Revert, error) {
	return f(ctx, t, o)
}

// Healer is an optional Injector capability: RevertOnlyHeals reports that
// the injector's Revert only restarts what the fault ended (an application,
// a host), with nothing lingering to undo, so RevertAll at the end of a run
// or on an interrupt can skip it.
type Healer interface {
	RevertOnlyHeals() bool
}

// healing marks an injector as a Healer.
type healing struct{ InjectorFunc }

func (healing) RevertOnlyHeals() bool { return true }

// once makes f idempotent: later calls return the first call's error.
func once(f func() error) Revert {
	var o sync.Once
	var err error
	return func() error {
		o.Do(func() { err = f() })
		return err
	}
}

func noRevert() error { return nil }

// lever asserts that t has lever L.
func lever[L any](t Target, o Occurrence) (L, error) {
	l, ok := t.(L)
	if !ok {
		return l, fmt.Errorf("%s on node %d: %w", o.Type, o.Node, ErrUnsupported)
	}
	return l, nil
}

// LocalSupport is where the process-level injectors below work: nodes that
// are processes this controller owns.
var LocalSupport = Support{Backends: []string{"local"}}

func init() {
	Register("app-crash", healing{appCrash}, LocalSupport)
	Register("app-hang", InjectorFunc(stopNode), LocalSupport)
	Register("node-freeze", InjectorFunc(stopNode), LocalSupport)
	Register("node-crash", healing{hostDown(false)}, LocalSupport)
	Register("node-reboot", healing{hostDown(true)}, LocalSupport)
	Register("restart-node", InjectorFunc(restartNode), LocalSupport)
	Register("restart-all", InjectorFunc(restartAll), LocalSupport)
}

// appCrash kills the application; clearing it starts the application again
// (a supervisor restarting it), a repair does the same.
func appCrash(_ context.Context, t Target, o Occurrence) (Revert, error) {
	app, err := lever[AppLever](t, o)
	if err != nil {
		return nil, err
	}
	if err := app.KillApp(o.Node); err != nil {
		return nil, err
	}
	return once(func() error { return app.StartApp(o.Node) }), nil
}

// stopNode stops every process of the node (SIGSTOP) and continues them at
// the clear. On the local backend a node's only processes are its
// application's, so app-hang and node-freeze stop the same processes; they
// differ in how an operator is expected to repair them.
func stopNode(_ context.Context, t Target, o Occurrence) (Revert, error) {
	p, err := lever[ProcessLever](t, o)
	if err != nil {
		return nil, err
	}
	if err := p.Pause(o.Node); err != nil {
		return nil, err
	}
	return once(func() error { return p.Resume(o.Node) }), nil
}

// hostDown crashes (SIGKILL) or reboots (SIGTERM first) the node's host; it
// stays unreachable until the clear boots it and restarts its services.
func hostDown(graceful bool) InjectorFunc {
	return func(_ context.Context, t Target, o Occurrence) (Revert, error) {
		host, err := lever[HostLever](t, o)
		if err != nil {
			return nil, err
		}
		app, err := lever[AppLever](t, o)
		if err != nil {
			return nil, err
		}
		if err := host.HostDown(o.Node, graceful); err != nil {
			return nil, err
		}
		return once(func() error { return app.StartApp(o.Node) }), nil
	}
}

func restartNode(_ context.Context, t Target, o Occurrence) (Revert, error) {
	app, err := lever[AppLever](t, o)
	if err != nil {
		return nil, err
	}
	return noRevert, app.RestartApp(o.Node)
}

func restartAll(_ context.Context, t Target, o Occurrence) (Revert, error) {
	app, err := lever[AppLever](t, o)
	if err != nil {
		return nil, err
	}
	var errs []error
	for n := 1; n <= t.Size(); n++ {
		errs = append(errs, app.RestartApp(n))
	}
	return noRevert, errors.Join(errs...)
}
