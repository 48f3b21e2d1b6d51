package press

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/control"
	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/faultnet"
	"github.com/faultbench/faultbench/internal/kernelfault"
)

// NetLever is the network lever, fault.NetLever: press's rig puts a
// faultnet.Net on the intra-cluster links and gives node i the addresses
// Net.PeersOf(i) as its peer.J options.
type NetLever = fault.NetLever

// ControlLever is implemented by a fault.Target that started its press nodes
// with a control endpoint (--option control=ADDR --option token=TOKEN).
type ControlLever interface {
	PressControl(node int) (addr, token string, err error)
}

// The network faults (on faultnet) and comm faults (on the control
// endpoint) a press cluster supports, with the levers its rig offers.
var (
	pressNet     = fault.Support{Levers: []string{fault.LeverNetwork}, Systems: []string{Kind}}
	pressControl = fault.Support{Levers: []string{fault.LeverControl}, Systems: []string{Kind}}
)

func init() {
	for _, typ := range []string{"link-down", "link-flaky", "switch-down", "partition", "delay", "loss", "bandwidth"} {
		fault.Register(typ, fault.WithParams(func() faultnet.Params { return faultnet.NewParams(typ) }, injectNet), pressNet)
	}
	for _, typ := range []CommFault{MemAllocFail, MemPinFail, BadParamNull, BadParamOffset, BadParamSize, Slow} {
		fault.Register(string(typ), fault.WithParams(func() CommParams { return NewCommParams(typ) }, injectComm), pressControl)
	}
}

// injectNet applies a network fault to the faultnet links between the
// nodes, with the parameters of faultnet.Params (mode for link-down,
// switch-down and partition; up, down and mode for link-flaky; delay; loss
// and rto; rate for bandwidth). A link fault without link: applies to
// every link of node:, or to every link. On kernel links (no proxies, the
// backend offers netfilter) kernelfault.InjectNet serves it instead; the
// mechanism is fault.InjectNet, shared with ssm.
var injectNet = fault.InjectNet(kernelfault.InjectNet)

// injectComm posts a comm fault to the node's control endpoint; the revert
// deletes it again. A fault until repaired lasts MaxFaultDuration at most,
// so the node reverts it even if the controller is gone. Parameters: see
// CommParams.
func injectComm(ctx context.Context, t fault.Target, o fault.Occurrence, p CommParams) (fault.Revert, error) {
	cl, ok := fault.As[ControlLever](t)
	if !ok {
		return nil, fmt.Errorf("%s on node %d: the cluster has no press control endpoints: %w", o.Type, o.Node, fault.ErrUnsupported)
	}
	addr, token, err := cl.PressControl(o.Node)
	if err != nil {
		return nil, fmt.Errorf("%s on node %d: %w", o.Type, o.Node, err)
	}
	d := o.Duration
	if d <= 0 || d > MaxFaultDuration {
		d = MaxFaultDuration
	}
	spec := p.Spec(CommFault(o.Type), d)
	c := control.NewClient(addr, token, 5*time.Second)
	var created activeFault
	if err := c.Do(ctx, http.MethodPost, "/faults", spec, &created); err != nil {
		return nil, fmt.Errorf("%s on node %d: %w", o.Type, o.Node, err)
	}
	path := fmt.Sprintf("/faults/%d", created.ID)
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := c.Do(ctx, http.MethodDelete, path, nil, nil)
		if errors.Is(err, syscall.ECONNREFUSED) {
			// The process that held the fault is gone (a VIA node that
			// failed fast, or a crash): its faults went with it, and a
			// restarted node starts without any.
			return nil
		}
		return err
	}, nil
}
