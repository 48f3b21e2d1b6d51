package kernelfault

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/faultnet"
	"github.com/faultbench/faultbench/internal/testbed"
)

// kernelSystems are the systems whose network faults go through the
// kernel. press and ssm register their own network faults over their
// faultnet proxies; press on kernel links (netns) has none and calls
// InjectNet. A black box gets kernel rules, never a proxy it does not use.
var kernelSystems = []string{testbed.CommandSystem, "static", "container"} // container: backend docker's user image

func init() {
	netfilter := fault.Support{Levers: []string{LeverNetfilter}, Systems: kernelSystems}
	for _, typ := range []string{"link-down", "partition", "switch-down"} {
		fault.Register(typ, fault.WithParams(func() *faultnet.DownParams { return faultnet.NewDownParams().(*faultnet.DownParams) }, injectDown), netfilter)
	}
	fault.Register("loss", fault.WithParams(func() *faultnet.LossParams { return faultnet.NewLossParams().(*faultnet.LossParams) }, injectLoss), netfilter)
	fault.Register("bandwidth", fault.WithParams(func() *faultnet.BandwidthParams { return faultnet.NewBandwidthParams().(*faultnet.BandwidthParams) }, injectBandwidth),
		fault.Support{Levers: []string{LeverQdisc}, Systems: kernelSystems})
	registerQueueFaults() // delay, link-flaky: delay_inject.go
	cg := fault.Support{Levers: []string{LeverCgroup}}
	fault.Register("cpu-hog", fault.WithParams(NewHogParams, injectHog), cg)
	fault.Register("mem-pressure", fault.WithParams(NewPressureParams, injectPressure), cg)
}

func label(o fault.Occurrence) Label { return Label{Fault: o.Type, ID: o.ID} }

// lever finds L on t or fails naming the fault and the lever.
func lever[L any](t fault.Target, o fault.Occurrence, name string) (L, error) {
	l, ok := fault.As[L](t)
	if !ok {
		return l, fmt.Errorf("%s: the target has no %s lever (use backend: netns): %w", o.Type, name, fault.ErrUnsupported)
	}
	return l, nil
}

// blocks is where each rule of a network fault goes: node -> what it
// blocks.
type site struct {
	node  int
	peers Peers
}

// sites maps a network occurrence to the nodes whose namespace gets a
// rule: a link [a, b] is cut at a (both directions), node N's every link
// at N, a partition at every node for the nodes of the other sides, a
// switch at every node. scope: client blocks the users' side instead.
//
// With intra (a system whose users reach the nodes apart from their
// intra-cluster links, like press), a node's or the switch's fault cuts
// the node's links to every other node and leaves the users' traffic
// alone, as the system's own proxies did.
func sites(t fault.Target, o fault.Occurrence, intra bool) ([]site, error) {
	client := o.Scope == "client"
	one := func(n int, peers ...int) site {
		if client {
			return site{node: n, peers: Peers{Client: true}}
		}
		if len(peers) == 0 && intra {
			for m := 1; m <= t.Size(); m++ {
				if m != n {
					peers = append(peers, m)
				}
			}
		}
		if len(peers) == 0 {
			return site{node: n, peers: Peers{All: true}}
		}
		return site{node: n, peers: Peers{Nodes: peers}}
	}
	switch {
	case len(o.Group) > 0:
		var out []site
		for gi, g := range o.Group {
			var others []int
			for gj, h := range o.Group {
				if gj != gi {
					others = append(others, h...)
				}
			}
			for _, n := range g {
				out = append(out, site{node: n, peers: Peers{Nodes: others}})
			}
		}
		return out, nil
	case len(o.Link) == 2:
		return []site{one(o.Link[0], o.Link[1])}, nil
	case o.Node > 0:
		return []site{one(o.Node)}, nil
	case o.Type == "switch-down":
		var out []site
		for n := 1; n <= t.Size(); n++ {
			out = append(out, one(n))
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: no target (link, node or group)", o.Type)
}

// undoAll reverts every undo, in reverse order, and joins the errors.
func undoAll(undos []Undo) error {
	var errs []error
	for _, u := range slices.Backward(undos) {
		if err := u(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// applyAll runs apply at every site; on an error it reverts what it did.
func applyAll(ss []site, apply func(site) (Undo, error)) (fault.Revert, error) {
	var undos []Undo
	for _, s := range ss {
		u, err := apply(s)
		if err != nil {
			return nil, errors.Join(err, undoAll(undos))
		}
		undos = append(undos, u)
	}
	return fault.Once(func() error { return undoAll(undos) }), nil
}

func injectDown(_ context.Context, t fault.Target, o fault.Occurrence, p *faultnet.DownParams) (fault.Revert, error) {
	return down(t, o, p, false)
}

func down(t fault.Target, o fault.Occurrence, p *faultnet.DownParams, intra bool) (fault.Revert, error) {
	nf, err := lever[NetfilterLever](t, o, LeverNetfilter)
	if err != nil {
		return nil, err
	}
	ss, err := sites(t, o, intra)
	if err != nil {
		return nil, err
	}
	return applyAll(ss, func(s site) (Undo, error) {
		return nf.Filter(label(o), s.node, Block{Peers: s.peers, Reject: p.Mode == faultnet.Cut})
	})
}

func injectLoss(_ context.Context, t fault.Target, o fault.Occurrence, p *faultnet.LossParams) (fault.Revert, error) {
	return loss(t, o, p, false)
}

func loss(t fault.Target, o fault.Occurrence, p *faultnet.LossParams, intra bool) (fault.Revert, error) {
	nf, err := lever[NetfilterLever](t, o, LeverNetfilter)
	if err != nil {
		return nil, err
	}
	if p.Loss == 0 {
		return func() error { return nil }, nil
	}
	ss, err := sites(t, o, intra)
	if err != nil {
		return nil, err
	}
	// A link loses packets both ways: rule at both ends.
	if len(o.Link) == 2 && o.Scope != "client" {
		ss = append(ss, site{node: o.Link[1], peers: Peers{Nodes: []int{o.Link[0]}}})
	}
	return applyAll(ss, func(s site) (Undo, error) {
		b := Block{Peers: s.peers}
		if p.Loss < 1 {
			b.Loss = p.Loss
		}
		return nf.Filter(label(o), s.node, b)
	})
}

func injectBandwidth(_ context.Context, t fault.Target, o fault.Occurrence, p *faultnet.BandwidthParams) (fault.Revert, error) {
	return bandwidth(t, o, p, false)
}

func bandwidth(t fault.Target, o fault.Occurrence, p *faultnet.BandwidthParams, intra bool) (fault.Revert, error) {
	q, err := lever[QdiscLever](t, o, LeverQdisc)
	if err != nil {
		return nil, err
	}
	ss, err := sites(t, o, intra)
	if err != nil {
		return nil, err
	}
	// A qdisc shapes what leaves a node: cap both ends of a link.
	if len(o.Link) == 2 && o.Scope != "client" {
		ss = append(ss, site{node: o.Link[1], peers: Peers{Nodes: []int{o.Link[0]}}})
	}
	return applyAll(ss, func(s site) (Undo, error) {
		return q.Shape(label(o), s.node, s.peers, int64(p.Rate))
	})
}

// injectNetem is reached only when a backend offers the netem lever,
// which none does yet.
func injectNetem[P fault.Params](_ context.Context, _ fault.Target, o fault.Occurrence, _ P) (fault.Revert, error) {
	return nil, fmt.Errorf("%s: the kernel's netem qdisc is needed and no backend offers it: %w", o.Type, fault.ErrUnsupported)
}

func injectHog(_ context.Context, t fault.Target, o fault.Occurrence, p *HogParams) (fault.Revert, error) {
	cg, err := lever[CgroupLever](t, o, LeverCgroup)
	if err != nil {
		return nil, err
	}
	u, err := cg.Burn(label(o), o.Node, p.CPUs)
	if err != nil {
		return nil, err
	}
	return fault.Once(u), nil
}

func injectPressure(_ context.Context, t fault.Target, o fault.Occurrence, p *PressureParams) (fault.Revert, error) {
	cg, err := lever[CgroupLever](t, o, LeverCgroup)
	if err != nil {
		return nil, err
	}
	u, err := cg.Balloon(label(o), o.Node, int64(p.Size))
	if err != nil {
		return nil, err
	}
	return fault.Once(u), nil
}

// InjectNet serves a network fault of a system whose own registration
// takes faultnet.Params (press) on a target that offers the kernel's
// levers: link-down, partition and switch-down by netfilter DROP (REJECT
// for mode cut), loss by a statistic rule, bandwidth by a tbf. A node's or
// the switch's fault cuts intra-cluster links only (rules naming the
// other nodes), so the users' traffic passes as on the system's proxies. Each proves
// its effect and revert with fault.effective / fault.reverted events, as
// for a black box. delay and link-flaky need netem, which no backend
// offers: ErrUnsupported naming it.
func InjectNet(ctx context.Context, t fault.Target, o fault.Occurrence, p faultnet.Params) (fault.Revert, error) {
	switch p := p.(type) {
	case *faultnet.DownParams:
		return down(t, o, p, true)
	case *faultnet.LossParams:
		return loss(t, o, p, true)
	case *faultnet.BandwidthParams:
		return bandwidth(t, o, p, true)
	case *faultnet.DelayParams:
		return injectNetem(ctx, t, o, p)
	case *faultnet.FlakyParams:
		return injectNetem(ctx, t, o, p)
	}
	return nil, fmt.Errorf("%s: no kernel mechanism for params %T: %w", o.Type, p, fault.ErrUnsupported)
}

// NeedsNetem reports whether a network fault type needs the kernel's netem
// qdisc to be served by the kernel (delay, link-flaky).
func NeedsNetem(typ string) bool { return typ == "delay" || typ == "link-flaky" }
