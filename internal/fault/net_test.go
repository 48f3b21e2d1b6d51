package fault

import (
	"context"
	"errors"
	"testing"

	"github.com/faultbench/faultbench/internal/faultnet"
)

// netTarget is a system's target holding a faultnet.Net, wrapping a bare
// cluster as a rig's target does.
type netTarget struct {
	inner Target
	net   *faultnet.Net
}

func (n netTarget) Size() int               { return n.inner.Size() }
func (n netTarget) Unwrap() Target          { return n.inner }
func (n netTarget) FaultNet() *faultnet.Net { return n.net }

type bare int

func (b bare) Size() int { return int(b) }

// TestInjectNet: the one injector press and ssm register for their
// network faults sets the links an occurrence names, reverts them, and
// hands a target without proxies to the kernel injector it was given.
func TestInjectNet(t *testing.T) {
	ups := map[int]string{1: "127.0.0.1:1", 2: "127.0.0.1:2", 3: "127.0.0.1:3"}
	fn, err := faultnet.NewNet(ups, faultnet.NetOptions{Seed: 1, ListenAddr: func(int, int) string { return "127.0.0.1:0" }})
	if err != nil {
		t.Fatal(err)
	}
	defer fn.Close()
	kernelCalls := 0
	kernel := func(context.Context, Target, Occurrence, faultnet.Params) (Revert, error) {
		kernelCalls++
		return noRevert, nil
	}
	inject := InjectNet(kernel)
	tgt := netTarget{inner: bare(3), net: fn}
	down := faultnet.NewDownParams()

	cases := []struct {
		o    Occurrence
		down [][2]int // links held down while the fault is in effect
	}{
		{Occurrence{Type: "link-down", Link: []int{1, 2}}, [][2]int{{1, 2}, {2, 1}}},
		{Occurrence{Type: "link-down", Node: 3}, [][2]int{{1, 3}, {3, 1}, {2, 3}, {3, 2}}},
		{Occurrence{Type: "partition", Group: [][]int{{1}, {2, 3}}}, [][2]int{{1, 2}, {2, 1}, {1, 3}, {3, 1}}},
		{Occurrence{Type: "switch-down"}, [][2]int{{1, 2}, {2, 1}, {1, 3}, {3, 1}, {2, 3}, {3, 2}}},
	}
	for _, tc := range cases {
		revert, err := inject(context.Background(), tgt, tc.o, down)
		if err != nil {
			t.Fatalf("%+v: %v", tc.o, err)
		}
		isDown := map[[2]int]bool{}
		for _, l := range tc.down {
			isDown[l] = true
		}
		for _, a := range fn.Nodes() {
			for _, b := range fn.Nodes() {
				if a == b {
					continue
				}
				if got := fn.Link(a, b).State().Down != faultnet.Up; got != isDown[[2]int{a, b}] {
					t.Errorf("%s %+v: link %d→%d down=%v", tc.o.Type, tc.o, a, b, got)
				}
			}
		}
		if err := revert(); err != nil {
			t.Fatal(err)
		}
		_ = revert() // idempotent
		for _, a := range fn.Nodes() {
			for _, b := range fn.Nodes() {
				if a != b && fn.Link(a, b).State().Down != faultnet.Up {
					t.Errorf("%s: link %d→%d still down after the revert", tc.o.Type, a, b)
				}
			}
		}
	}
	if kernelCalls != 0 {
		t.Fatalf("the kernel injector served %d faults on a target with proxies", kernelCalls)
	}

	// Kernel links: no proxies (a nil Net, or no NetLever at all).
	for _, k := range []Target{netTarget{inner: bare(3)}, bare(3)} {
		if _, err := inject(context.Background(), k, Occurrence{Type: "link-down", Node: 1}, down); err != nil {
			t.Fatal(err)
		}
	}
	if kernelCalls != 2 {
		t.Fatalf("kernel injector called %d times, want 2", kernelCalls)
	}
	if _, err := InjectNet(nil)(context.Background(), bare(3), Occurrence{Type: "loss", Node: 1}, faultnet.NewParams("loss")); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("no proxies and no kernel: %v, want ErrUnsupported", err)
	}
}
