package fault

import (
	"context"
	"fmt"

	"github.com/faultbench/faultbench/internal/faultnet"
)

// NetLever is the network lever (LeverNetwork): a Target whose
// intra-cluster links run through a faultnet.Net, as the rigs of press
// (node ↔ node) and ssm (front end → brick) set up on the local backend.
// FaultNet is nil on a cluster whose links are kernel links (backend
// netns), where the backend's kernel levers serve network faults instead.
type NetLever interface {
	FaultNet() *faultnet.Net
}

// NetInjectFunc injects a network fault whose parameters are
// faultnet.Params; it is what WithParams takes for the network fault
// types.
type NetInjectFunc func(ctx context.Context, t Target, o Occurrence, p faultnet.Params) (Revert, error)

// InjectNet returns the injector a system registers for its network
// faults (link-down, link-flaky, switch-down, partition, delay, loss,
// bandwidth) on its faultnet links: switch-down sets every link,
// partition cuts the links between its groups, link: [a, b] one pair (both
// directions), node: N every link of N, and no target every link; the
// fault's state is p.State(). On a target without proxies (no NetLever, or
// a nil FaultNet) it hands the fault to kernel, which serves it with the
// backend's kernel levers (kernelfault.InjectNet: this package cannot name
// it, as kernelfault builds on this one); with kernel nil it fails with
// ErrUnsupported.
func InjectNet(kernel NetInjectFunc) NetInjectFunc {
	return func(ctx context.Context, t Target, o Occurrence, p faultnet.Params) (Revert, error) {
		nl, ok := As[NetLever](t)
		if !ok || nl.FaultNet() == nil {
			if kernel != nil {
				return kernel(ctx, t, o, p)
			}
			return nil, fmt.Errorf("%s: the cluster has no faultnet proxies: %w", o.Type, ErrUnsupported)
		}
		fn := nl.FaultNet()
		st := p.State()
		var revert func()
		var err error
		switch {
		case o.Type == "switch-down":
			revert, err = fn.SetAll(st)
		case o.Type == "partition":
			revert, err = fn.Partition(o.Group, st.Down)
		case len(o.Link) == 2:
			revert, err = fn.SetLink(o.Link[0], o.Link[1], st)
		case o.Node > 0:
			revert, err = fn.SetNode(o.Node, st)
		default:
			revert, err = fn.SetAll(st)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.Type, err)
		}
		return Once(func() error { revert(); return nil }), nil
	}
}
