package fault

import (
	"errors"
	"strings"
	"testing"
)

type appOnly struct{ killed []int }

func (a *appOnly) Size() int                { return 3 }
func (a *appOnly) KillApp(n int) error      { a.killed = append(a.killed, n); return nil }
func (a *appOnly) StartApp(int) error       { return nil }
func (a *appOnly) RestartApp(int) error     { return nil }
func (a *appOnly) Pause(int) error          { return nil }
func (a *appOnly) Resume(int) error         { return nil }
func (a *appOnly) HostDown(int, bool) error { return nil }

// wrap adds a lever of its own (control) and reaches the rest through
// Unwrap, as a system's rig does.
type wrap struct{ inner Target }

func (w wrap) Size() int                   { return w.inner.Size() }
func (w wrap) Unwrap() Target              { return w.inner }
func (w wrap) Control(int) (string, error) { return "ctl", nil }

type controller interface{ Control(int) (string, error) }

// selfWrap returns itself from Unwrap: As must stop, not loop.
type selfWrap struct{}

func (s selfWrap) Size() int      { return 1 }
func (s selfWrap) Unwrap() Target { return s }

func TestAsWalksUnwrap(t *testing.T) {
	inner := &appOnly{}
	outer := wrap{wrap{inner}}
	app, ok := As[AppLever](outer)
	if !ok {
		t.Fatal("AppLever not found two wrappers down")
	}
	if err := app.KillApp(2); err != nil || len(inner.killed) != 1 {
		t.Errorf("the lever found is not the wrapped cluster's: %v %v", err, inner.killed)
	}
	if _, ok := As[controller](outer); !ok {
		t.Error("the wrapper's own lever is not found")
	}
	if _, ok := As[controller](inner); ok {
		t.Error("a lever only a wrapper has was found on the inner target")
	}
	if _, ok := As[AppLever](selfWrap{}); ok {
		t.Error("found a lever on a target without one")
	}
	if _, ok := As[AppLever](nil); ok {
		t.Error("found a lever on nil")
	}
}

// An injector finds its levers through wrappers, and says which fault on
// which node it could not serve.
func TestInjectorLeverLookup(t *testing.T) {
	inner := &appOnly{}
	revert, err := appCrash(t.Context(), wrap{inner}, Occurrence{Type: "app-crash", Node: 3})
	if err != nil || len(inner.killed) != 1 || inner.killed[0] != 3 {
		t.Fatalf("app-crash through a wrapper: %v, killed %v", err, inner.killed)
	}
	if err := revert(); err != nil {
		t.Error(err)
	}
	_, err = appCrash(t.Context(), selfWrap{}, Occurrence{Type: "app-crash", Node: 1})
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "app-crash on node 1") {
		t.Errorf("error %v: want ErrUnsupported naming the fault and node", err)
	}
}

// Offer.Check names the fault, the missing lever, the backend and the
// system, with what each offers.
func TestOfferCheck(t *testing.T) {
	o := Offer{Backend: "bare", System: "static"}
	err := o.Check("node-crash")
	want := "fault node-crash needs the host and app lever, which neither backend bare (offers none) nor system static (offers none) has"
	if err == nil || err.Error() != want {
		t.Errorf("error %v\nwant %s", err, want)
	}
	o.BackendLevers = []string{LeverApp, LeverHost}
	if err := o.Check("node-crash"); err != nil {
		t.Errorf("backend with host and app levers: %v", err)
	}
	if err := o.Check("partition"); err == nil || !strings.Contains(err.Error(), "cannot be injected by backend bare into system static") {
		t.Errorf("partition on static: %v", err)
	}
}
