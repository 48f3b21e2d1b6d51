package kernelfault

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/faultnet"
)

// fakeNet records every lever call; it is a target of size 4.
type fakeNet struct {
	calls []string
	fail  bool
}

func (f *fakeNet) Size() int { return 4 }

func (f *fakeNet) Filter(l Label, node int, b Block) (Undo, error) {
	if f.fail {
		return nil, errors.New("no effect")
	}
	f.calls = append(f.calls, fmt.Sprintf("filter %s#%d n%d %+v reject=%v loss=%v", l.Fault, l.ID, node, b.Peers, b.Reject, b.Loss))
	return func() error { f.calls = append(f.calls, fmt.Sprintf("unfilter n%d", node)); return nil }, nil
}

func (f *fakeNet) Shape(l Label, node int, p Peers, rate int64) (Undo, error) {
	f.calls = append(f.calls, fmt.Sprintf("shape n%d %+v %d", node, p, rate))
	return func() error { f.calls = append(f.calls, fmt.Sprintf("unshape n%d", node)); return nil }, nil
}

func (f *fakeNet) Burn(l Label, node int, cpus int) (Undo, error) {
	f.calls = append(f.calls, fmt.Sprintf("burn n%d %d", node, cpus))
	return func() error { f.calls = append(f.calls, "unburn"); return nil }, nil
}

func (f *fakeNet) Balloon(l Label, node int, bytes int64) (Undo, error) {
	f.calls = append(f.calls, fmt.Sprintf("balloon n%d %d", node, bytes))
	return func() error { f.calls = append(f.calls, "unballoon"); return nil }, nil
}

// wrapper hides the levers behind a system's target, as a rig does.
type wrapper struct{ inner fault.Target }

func (w wrapper) Size() int            { return w.inner.Size() }
func (w wrapper) Unwrap() fault.Target { return w.inner }

func TestNetworkFaultsPutRulesWhereTheTargetSays(t *testing.T) {
	down := &faultnet.DownParams{Mode: faultnet.Hold}
	cases := []struct {
		name string
		o    fault.Occurrence
		want []string
	}{
		{"link", fault.Occurrence{Type: "link-down", ID: 1, Link: []int{1, 2}},
			[]string{"filter link-down#1 n1 {Nodes:[2] Client:false All:false} reject=false loss=0"}},
		{"nic", fault.Occurrence{Type: "link-down", ID: 2, Node: 3},
			[]string{"filter link-down#2 n3 {Nodes:[] Client:false All:true} reject=false loss=0"}},
		{"client", fault.Occurrence{Type: "link-down", ID: 3, Node: 3, Scope: "client"},
			[]string{"filter link-down#3 n3 {Nodes:[] Client:true All:false} reject=false loss=0"}},
		{"partition", fault.Occurrence{Type: "partition", ID: 4, Group: [][]int{{1}, {2, 3}}},
			[]string{
				"filter partition#4 n1 {Nodes:[2 3] Client:false All:false} reject=false loss=0",
				"filter partition#4 n2 {Nodes:[1] Client:false All:false} reject=false loss=0",
				"filter partition#4 n3 {Nodes:[1] Client:false All:false} reject=false loss=0"}},
	}
	for _, tc := range cases {
		f := &fakeNet{}
		rev, err := injectDown(context.Background(), wrapper{f}, tc.o, down)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, want := strings.Join(f.calls, "\n"), strings.Join(tc.want, "\n")
		if got != want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, want)
		}
		n := len(f.calls)
		if err := rev(); err != nil {
			t.Fatal(err)
		}
		if err := rev(); err != nil { // idempotent
			t.Fatal(err)
		}
		if len(f.calls) != 2*n {
			t.Errorf("%s: %d reverts for %d rules: %v", tc.name, len(f.calls)-n, n, f.calls)
		}
	}
}

func TestSwitchDownCutsEveryNodeAndRejectsOnCut(t *testing.T) {
	f := &fakeNet{}
	_, err := injectDown(context.Background(), f, fault.Occurrence{Type: "switch-down", ID: 1}, &faultnet.DownParams{Mode: faultnet.Cut})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 4 || !strings.Contains(f.calls[3], "n4") || !strings.Contains(f.calls[0], "reject=true") {
		t.Errorf("calls = %v", f.calls)
	}
}

func TestLossAndBandwidthActAtBothEndsOfALink(t *testing.T) {
	f := &fakeNet{}
	o := fault.Occurrence{Type: "loss", ID: 1, Link: []int{1, 2}}
	if _, err := injectLoss(context.Background(), f, o, &faultnet.LossParams{Loss: 0.25, RTO: 1}); err != nil {
		t.Fatal(err)
	}
	o.Type = "bandwidth"
	if _, err := injectBandwidth(context.Background(), f, o, &faultnet.BandwidthParams{Rate: 1 << 16}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"filter loss#1 n1 {Nodes:[2] Client:false All:false} reject=false loss=0.25",
		"filter loss#1 n2 {Nodes:[1] Client:false All:false} reject=false loss=0.25",
		"shape n1 {Nodes:[2] Client:false All:false} 65536",
		"shape n2 {Nodes:[1] Client:false All:false} 65536",
	}
	if !reflect.DeepEqual(f.calls, want) {
		t.Errorf("calls:\n%s\nwant\n%s", strings.Join(f.calls, "\n"), strings.Join(want, "\n"))
	}
}

func TestAFailedSiteRevertsTheOthers(t *testing.T) {
	f := &fakeNet{}
	calls := 0
	_, err := applyAll([]site{{node: 1}, {node: 2}, {node: 3}}, func(s site) (Undo, error) {
		calls++
		if s.node == 3 {
			return nil, errors.New("no effect on node 3")
		}
		return f.Filter(Label{Fault: "partition"}, s.node, Block{})
	})
	if err == nil || !strings.Contains(err.Error(), "node 3") {
		t.Fatalf("err = %v", err)
	}
	if got := strings.Join(f.calls[2:], ","); got != "unfilter n2,unfilter n1" {
		t.Errorf("reverts = %s, want n2 then n1", got)
	}
}

func TestResourceFaults(t *testing.T) {
	f := &fakeNet{}
	rev, err := injectHog(context.Background(), f, fault.Occurrence{Type: "cpu-hog", Node: 2}, &HogParams{CPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	_ = rev()
	rev, err = injectPressure(context.Background(), f, fault.Occurrence{Type: "mem-pressure", Node: 1}, &PressureParams{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	_ = rev()
	want := []string{"burn n2 2", "unburn", "balloon n1 1048576", "unballoon"}
	if !reflect.DeepEqual(f.calls, want) {
		t.Errorf("calls = %v", f.calls)
	}
}

func TestWithoutTheLeverTheFaultIsUnsupported(t *testing.T) {
	_, err := injectHog(context.Background(), wrapper{bare{}}, fault.Occurrence{Type: "cpu-hog", Node: 1}, NewHogParams())
	if !errors.Is(err, fault.ErrUnsupported) || !strings.Contains(err.Error(), "cgroup") {
		t.Errorf("err = %v", err)
	}
}

type bare struct{}

func (bare) Size() int { return 1 }

// delay and link-flaky of a black box need the NFQUEUE delayer's lever
// (this kernel has no netem); a backend without it is told so.
func TestDelayNeedsTheQueueLever(t *testing.T) {
	levers := []string{"app", "process", "host", LeverNetfilter, LeverQdisc, LeverCgroup}
	offer := fault.Offer{Backend: "netns", BackendLevers: levers, System: "command"}
	for _, typ := range []string{"delay", "link-flaky"} {
		err := offer.Check(typ)
		if err == nil || !strings.Contains(err.Error(), "nfqueue") {
			t.Errorf("%s: %v, want an error naming the nfqueue lever", typ, err)
		}
	}
	offer.BackendLevers = append(levers, LeverQueue)
	for _, typ := range []string{"delay", "link-flaky", "link-down", "partition", "switch-down", "loss", "bandwidth", "cpu-hog", "mem-pressure", "node-freeze", "node-crash"} {
		if err := offer.Check(typ); err != nil {
			t.Errorf("%s on netns/command: %v", typ, err)
		}
	}
	local := fault.Offer{Backend: "local", BackendLevers: []string{"app", "process", "host"}, System: "command"}
	if err := local.Check("cpu-hog"); err == nil || !strings.Contains(err.Error(), "cgroup") {
		t.Errorf("cpu-hog on local: %v, want the missing cgroup lever", err)
	}
}

func TestParams(t *testing.T) {
	if (&HogParams{CPUs: 0}).Validate() == nil || (&HogParams{CPUs: 65}).Validate() == nil {
		t.Error("cpus out of 1..64 accepted")
	}
	if (&PressureParams{Size: 0}).Validate() == nil || (&PressureParams{Size: maxBalloon + 1}).Validate() == nil {
		t.Error("size out of range accepted")
	}
	if NewHogParams().Validate() != nil || NewPressureParams().Validate() != nil {
		t.Error("defaults refused")
	}
}

// InjectNet (press on kernel links) cuts a node's or the switch's
// intra-cluster links only, so the users still reach every node; a link
// and the client scope are placed as for a black box.
func TestInjectNetCutsIntraClusterLinksOnly(t *testing.T) {
	down := &faultnet.DownParams{Mode: faultnet.Hold}
	cases := []struct {
		name string
		o    fault.Occurrence
		want []string
	}{
		{"node", fault.Occurrence{Type: "link-down", ID: 1, Node: 2},
			[]string{"filter link-down#1 n2 {Nodes:[1 3 4] Client:false All:false} reject=false loss=0"}},
		{"link", fault.Occurrence{Type: "link-down", ID: 2, Link: []int{1, 2}},
			[]string{"filter link-down#2 n1 {Nodes:[2] Client:false All:false} reject=false loss=0"}},
		{"client", fault.Occurrence{Type: "link-down", ID: 3, Node: 3, Scope: "client"},
			[]string{"filter link-down#3 n3 {Nodes:[] Client:true All:false} reject=false loss=0"}},
		{"switch", fault.Occurrence{Type: "switch-down", ID: 4},
			[]string{
				"filter switch-down#4 n1 {Nodes:[2 3 4] Client:false All:false} reject=false loss=0",
				"filter switch-down#4 n2 {Nodes:[1 3 4] Client:false All:false} reject=false loss=0",
				"filter switch-down#4 n3 {Nodes:[1 2 4] Client:false All:false} reject=false loss=0",
				"filter switch-down#4 n4 {Nodes:[1 2 3] Client:false All:false} reject=false loss=0"}},
	}
	for _, tc := range cases {
		f := &fakeNet{}
		rev, err := InjectNet(context.Background(), wrapper{f}, tc.o, down)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got, want := strings.Join(f.calls, "\n"), strings.Join(tc.want, "\n"); got != want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, want)
		}
		if err := rev(); err != nil {
			t.Errorf("%s: revert: %v", tc.name, err)
		}
	}
	f := &fakeNet{}
	if _, err := InjectNet(context.Background(), wrapper{f}, fault.Occurrence{Type: "delay", ID: 5, Node: 1}, &faultnet.DelayParams{}); !errors.Is(err, fault.ErrUnsupported) || !strings.Contains(err.Error(), "netem") {
		t.Errorf("delay on kernel links: want ErrUnsupported naming netem, got %v", err)
	}
}

func (f *fakeNet) Queue(l Label, node int, p Peers, d Disturbance) (Undo, error) {
	f.calls = append(f.calls, fmt.Sprintf("queue n%d %+v %v %v/%v", node, p, d.Delay, d.Up, d.Down))
	return func() error { f.calls = append(f.calls, fmt.Sprintf("unqueue n%d", node)); return nil }, nil
}

func TestDelayAndFlakyQueueWhereTheTargetSays(t *testing.T) {
	f := &fakeNet{}
	rev, err := injectDelay(context.Background(), wrapper{f}, fault.Occurrence{Type: "delay", ID: 1, Link: []int{1, 2}}, &faultnet.DelayParams{Delay: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_ = rev()
	if _, err := injectFlaky(context.Background(), f, fault.Occurrence{Type: "link-flaky", ID: 2, Node: 3, Scope: "client"}, &faultnet.FlakyParams{Up: time.Second, Down: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	want := []string{"queue n1 {Nodes:[2] Client:false All:false} 5ms 0s/0s", "unqueue n1", "queue n3 {Nodes:[] Client:true All:false} 0s 1s/2s"}
	if !reflect.DeepEqual(f.calls, want) {
		t.Errorf("calls:\n%s\nwant\n%s", strings.Join(f.calls, "\n"), strings.Join(want, "\n"))
	}
}
