package ssm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/control"
	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/faultnet"
	"github.com/faultbench/faultbench/internal/kernelfault"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/systems/ssm/brick"
)

// ControlLever is implemented by a fault.Target whose bricks run with a
// control endpoint and the run's token (the ssm rig's target). SSMControl
// returns an error wrapping ErrBrickOffline for a brick taken out of service.
type ControlLever interface {
	SSMControl(node int) (addr, token string, err error)
}

// ErrBrickOffline: Pinpoint took the brick out of service after too many
// restarts (Ling, Kiciman and Fox 2004, §4); it is stopped for the rest of the run.
var ErrBrickOffline = errors.New("brick is offline: Pinpoint took it out of service after too many restarts")

// Noter is an optional capability of a fault.Target: it adds an event to
// the run's timeline, false when it cannot.
type Noter interface {
	Note(record.Event) bool
}

// offlineNoOp handles a brick-memory fault aimed at a brick Pinpoint has
// taken offline. Its process is gone, so there is no memory to damage: as
// killing an application that no longer runs, the fault acts on nothing —
// which is the point of taking a brick with a persistent fault out of
// service, not a failure of the run. It says so in the timeline; where it
// cannot (no timeline), the injection fails as before.
func offlineNoOp(t fault.Target, o fault.Occurrence, err error) (fault.Revert, bool) {
	n, ok := fault.As[Noter](t)
	if !errors.Is(err, ErrBrickOffline) || !ok {
		return nil, false
	}
	if !n.Note(record.Event{Kind: "system.ssm.fault_on_offline", Node: o.Node, Fault: o.Type,
		Detail: fmt.Sprintf("%s not injected: brick %d is offline (Pinpoint took it out of service after too many restarts); nothing left to damage", o.Type, o.Node)}) {
		return nil, false
	}
	return func() error { return nil }, true
}

// NetLever is the network lever, fault.NetLever: ssm's rig runs the
// front end → brick links through a faultnet.Net.
type NetLever = fault.NetLever

// The faults an SSM cluster run by `faultbench run` supports beyond the
// process faults of the backend, with the levers its rig offers: the
// bricks' control endpoints and the front end → brick links.
var (
	ssmControl = fault.Support{Levers: []string{fault.LeverControl}, Systems: []string{ClusterKind}}
	ssmNet     = fault.Support{Levers: []string{fault.LeverNetwork}, Systems: []string{ClusterKind}}
)

func init() {
	fault.Register("bitflip", fault.WithParams(NewBitflipParams, injectBitflip), ssmControl)
	fault.Register("slow", fault.WithParams(NewSlowParams, injectSlow), ssmControl)
	for _, typ := range []string{"loss", "delay", "link-down"} {
		fault.Register(typ, fault.WithParams(func() faultnet.Params { return faultnet.NewParams(typ) }, injectNet), ssmNet)
	}
}

// controlTimeout bounds every control request: the endpoint answers at
// once unless the brick is stopped.
const controlTimeout = 2 * time.Second

// postControl posts req to brick n's /control. A request that got no
// answer at all wraps control.ErrNoAnswer.
func postControl(ctx context.Context, t fault.Target, o fault.Occurrence, n int, req brick.ControlRequest) (brick.ControlReply, error) {
	var reply brick.ControlReply
	cl, ok := fault.As[ControlLever](t)
	if !ok {
		return reply, fmt.Errorf("%s on node %d: the cluster has no brick control endpoints: %w", o.Type, n, fault.ErrUnsupported)
	}
	addr, token, err := cl.SSMControl(n)
	if err != nil {
		return reply, fmt.Errorf("%s: %w", o.Type, err)
	}
	err = control.NewClient(addr, token, controlTimeout).Do(ctx, http.MethodPost, "/control", req, &reply)
	var se *control.StatusError
	if errors.As(err, &se) {
		// The brick answers errors as a ControlReply too: its Error is
		// the message worth showing.
		if json.Unmarshal(se.Body, &reply) == nil && reply.Error != "" {
			return reply, fmt.Errorf("%s on brick %d: %d %s", o.Type, n, se.Status, reply.Error)
		}
	}
	if err != nil {
		return reply, fmt.Errorf("%s on brick %d: %w", o.Type, n, err)
	}
	if !reply.OK {
		return reply, fmt.Errorf("%s on brick %d: %s", o.Type, n, reply.Error)
	}
	return reply, nil
}

// injectBitflip flips one bit in count entries of the brick's tables
// (Ling et al. (2004) §5.6; parameters: BitflipParams). A bit flip is damage, not a condition: there is nothing to revert;
// the brick's restart (by Pinpoint, exit_on_corrupt, or the operator) is
// what removes it.
//
// target stack is §5.5's flip of the stack pointer: the process crashes at
// once (the paper's brick did; a Go brick cannot damage its own stack
// safely, so it exits through its control endpoint's crash, status 70).
func injectBitflip(ctx context.Context, t fault.Target, o fault.Occurrence, p *BitflipParams) (fault.Revert, error) {
	if p.Stack() {
		_, err := postControl(ctx, t, o, o.Node, brick.ControlRequest{Action: "crash"})
		if revert, ok := offlineNoOp(t, o, err); ok {
			return revert, nil
		}
		if err != nil {
			return nil, err
		}
		return func() error { return nil }, nil
	}
	reply, err := postControl(ctx, t, o, o.Node, p.Request())
	if revert, ok := offlineNoOp(t, o, err); ok {
		return revert, nil
	}
	if err != nil {
		return nil, err
	}
	if len(reply.Flipped) == 0 {
		// Never a silent no-op: an empty brick has nothing to damage.
		return nil, fmt.Errorf("bitflip on brick %d: it holds no entry to flip", o.Node)
	}
	return func() error { return nil }, nil
}

// injectSlow makes the brick sleep before every message (Ling et al.
// (2004) §5.8; parameters: SlowParams). The brick is also told the fault's duration,
// so it reverts by itself should the controller die; the clear asks it to
// clear. A brick that does not answer the clear is gone (restarted by
// Pinpoint, crashed: the fault went with its memory) or stopped (it
// reverts by itself when the duration it was given ends), so that is not
// an error; a brick that answers with an error is.
func injectSlow(ctx context.Context, t fault.Target, o fault.Occurrence, p *SlowParams) (fault.Revert, error) {
	req := brick.ControlRequest{Action: "slow", Delay: p.Delay.String()}
	if o.Duration > 0 && o.Duration <= time.Hour {
		req.Duration = o.Duration.String()
	}
	n := o.Node
	if _, err := postControl(ctx, t, o, n, req); err != nil {
		if revert, ok := offlineNoOp(t, o, err); ok {
			return revert, nil
		}
		return nil, err
	}
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			_, err = postControl(ctx, t, o, n, brick.ControlRequest{Action: "clear"})
			if errors.Is(err, control.ErrNoAnswer) {
				err = nil
			}
		})
		return err
	}, nil
}

// injectNet applies a network fault to the front end → brick links of a
// node (node: N, every link of it: its NIC) or of one pair (link: [a, b]).
// Parameters: faultnet.LossParams, DelayParams, DownParams. Ling et al.
// (2004) §5.7 is {type: loss, node: BRICK, params: {loss: "0.7"}}. On
// kernel links kernelfault.InjectNet serves it instead; the mechanism is
// fault.InjectNet, shared with press.
var injectNet = fault.InjectNet(kernelfault.InjectNet)
