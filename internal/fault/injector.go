package fault

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Target is the running cluster faults act on. It is deliberately tiny:
// injectors find the levers they need with As, which walks the Unwrap
// chain of targets that wrap others (a system's rig wraps the backend's
// cluster), as errors.As walks wrapped errors.
type Target interface {
	Size() int // number of nodes, numbered 1..Size
}

// Wrapper is a Target that adds levers to another one, which Unwrap
// returns. A wrapper never embeds what it wraps: a lever it does not
// implement itself is found on the wrapped target by As.
type Wrapper interface {
	Target
	Unwrap() Target
}

// As finds the first target in t's Unwrap chain that has lever L, as
// errors.As finds an error type. The chain is bounded (a wrapper that
// returns itself ends the walk).
func As[L any](t Target) (L, bool) {
	for range maxUnwrap {
		if t == nil {
			break
		}
		if l, ok := t.(L); ok {
			return l, true
		}
		w, ok := t.(Wrapper)
		if !ok {
			break
		}
		next := w.Unwrap()
		if next == t {
			break
		}
		t = next
	}
	var zero L
	return zero, false
}

// maxUnwrap bounds the Unwrap chain As walks.
const maxUnwrap = 16

// Lever names: what a fault's registration says it needs (Support.Levers)
// and what a backend or system says it offers. validate checks the one
// against the other before a run.
const (
	LeverApp     = "app"     // AppLever: kill, start, restart a node's application
	LeverProcess = "process" // ProcessLever: stop and continue a node's processes
	LeverHost    = "host"    // HostLever: take a node's host down
	LeverNetwork = "network" // a system's links between nodes (faultnet proxies)
	LeverControl = "control" // a system's per-node control endpoint (comm, disk, memory faults)
)

// AppLever controls a node's application (the local backend's cluster
// implements it).
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

// Once makes f a Revert: idempotent and safe from any goroutine, later
// calls returning the first call's error. Injectors of other packages use
// it too, so every Revert keeps the contract the same way.
func Once(f func() error) Revert {
	var o sync.Once
	var err error
	return func() error {
		o.Do(func() { err = f() })
		return err
	}
}

func noRevert() error { return nil }

// lever finds lever L on t (As), or returns ErrUnsupported naming the
// fault and node.
func lever[L any](t Target, o Occurrence) (L, error) {
	l, ok := As[L](t)
	if !ok {
		return l, fmt.Errorf("%s on node %d: %w", o.Type, o.Node, ErrUnsupported)
	}
	return l, nil
}

func init() {
	app := Support{Levers: []string{LeverApp}}
	Register("app-crash", healing{appCrash}, app)
	Register("app-hang", InjectorFunc(stopNode), Support{Levers: []string{LeverProcess}})
	Register("node-freeze", InjectorFunc(stopNode), Support{Levers: []string{LeverProcess}})
	host := Support{Levers: []string{LeverHost, LeverApp}}
	Register("node-crash", healing{hostDown(false)}, host)
	Register("node-reboot", healing{hostDown(true)}, host)
	Register("restart-node", InjectorFunc(restartNode), app)
	Register("restart-all", InjectorFunc(restartAll), app)
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
	return Once(func() error { return app.StartApp(o.Node) }), nil
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
	return Once(func() error { return p.Resume(o.Node) }), nil
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
		return Once(func() error { return app.StartApp(o.Node) }), nil
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
