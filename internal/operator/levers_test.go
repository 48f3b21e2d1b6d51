package operator

import (
	"errors"
	"slices"
	"testing"

	"github.com/faultbench/faultbench/internal/fault"
)

// wrapped adds nothing and reaches its cluster through Unwrap, as a
// system's rig target does.
type wrapped struct{ inner fault.Target }

func (w wrapped) Size() int            { return w.inner.Size() }
func (w wrapped) Unwrap() fault.Target { return w.inner }

// noLevers is a target with no lever at all.
type noLevers struct{}

func (noLevers) Size() int { return 1 }

// The operator's levers are found through a rig's wrapper; a target
// without them makes each repair fail with ErrUnsupported, naming it.
func TestLeversOf(t *testing.T) {
	fc := &fakeCluster{}
	l := LeversOf(wrapped{wrapped{fc}})
	if err := errors.Join(l.KillApp(1), l.StartApp(2), l.HostDown(1, false)); err != nil {
		t.Fatal(err)
	}
	if want := []string{"kill 1", "start 2", "down 1"}; !slices.Equal(fc.calls, want) {
		t.Errorf("calls %q, want %q", fc.calls, want)
	}
	none := LeversOf(noLevers{})
	for _, err := range []error{none.KillApp(1), none.StartApp(1), none.HostDown(1, true)} {
		if !errors.Is(err, fault.ErrUnsupported) {
			t.Errorf("error %v: want ErrUnsupported", err)
		}
	}
}
