package ssm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/faultnet"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/systems/ssm/brick"
)

// ControlLever is implemented by a fault.Target whose bricks run with a
// control endpoint and the run's token (the ssm rig's Cluster). SSMControl
// returns an error wrapping ErrBrickOffline for a brick taken out of service.
type ControlLever interface {
	SSMControl(node int) (addr, token string, err error)
}

// ErrBrickOffline: Pinpoint took the brick out of service after too many
// restarts (seed 004 §4); it is stopped for the rest of the run.
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
	n, ok := t.(Noter)
	if !errors.Is(err, ErrBrickOffline) || !ok {
		return nil, false
	}
	if !n.Note(record.Event{Kind: "system.ssm.fault_on_offline", Node: o.Node, Fault: o.Type,
		Detail: fmt.Sprintf("%s not injected: brick %d is offline (Pinpoint took it out of service after too many restarts); nothing left to damage", o.Type, o.Node)}) {
		return nil, false
	}
	return func() error { return nil }, true
}

// NetLever is implemented by a fault.Target whose front end → brick links
// run through a faultnet.Net.
type NetLever interface {
	FaultNet() *faultnet.Net
}

// ssmSupport: the faults an SSM cluster run by `faultbench run` supports
// beyond the process faults every local cluster has.
var ssmSupport = fault.Support{Backends: []string{"local"}, Systems: []string{ClusterKind}}

func init() {
	fault.Register("bitflip", fault.InjectorFunc(injectBitflip), ssmSupport)
	fault.Register("slow", fault.InjectorFunc(injectSlow), ssmSupport)
	for _, typ := range []string{"loss", "delay", "link-down"} {
		fault.Register(typ, fault.InjectorFunc(injectNet), ssmSupport)
	}
}

// controlClient bounds every control request: the endpoint answers at once
// unless the brick is stopped.
var controlClient = &http.Client{Timeout: 2 * time.Second}

// errNoAnswer wraps a control request that got no HTTP answer at all (the
// brick is down, restarting, or stopped).
var errNoAnswer = errors.New("brick did not answer")

// postControl posts req to brick n's /control.
func postControl(ctx context.Context, t fault.Target, o fault.Occurrence, n int, req brick.ControlRequest) (brick.ControlReply, error) {
	var reply brick.ControlReply
	cl, ok := t.(ControlLever)
	if !ok {
		return reply, fmt.Errorf("%s on node %d: the cluster has no brick control endpoints: %w", o.Type, n, fault.ErrUnsupported)
	}
	addr, token, err := cl.SSMControl(n)
	if err != nil {
		return reply, fmt.Errorf("%s: %w", o.Type, err)
	}
	body, _ := json.Marshal(req)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/control", bytes.NewReader(body))
	if err != nil {
		return reply, err
	}
	hr.Header.Set("Authorization", "Bearer "+token)
	hr.Header.Set("Content-Type", "application/json")
	resp, err := controlClient.Do(hr)
	if err != nil {
		return reply, fmt.Errorf("%s on brick %d: %w: %w", o.Type, n, errNoAnswer, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&reply); err != nil {
		return reply, fmt.Errorf("%s on brick %d: answer %d: %w", o.Type, n, resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusOK || !reply.OK {
		return reply, fmt.Errorf("%s on brick %d: %d %s", o.Type, n, resp.StatusCode, reply.Error)
	}
	return reply, nil
}

// injectBitflip flips one bit in count entries of the brick's tables
// (seed 004 §5.6). Params: target (value | key | checksum | expiry | stack,
// default value), which (latest | random, default latest), count (default
// 1). A bit flip is damage, not a condition: there is nothing to revert;
// the brick's restart (by Pinpoint, exit_on_corrupt, or the operator) is
// what removes it.
//
// target stack is §5.5's flip of the stack pointer: the process crashes at
// once (the paper's brick did; a Go brick cannot damage its own stack
// safely, so it exits through its control endpoint's crash, status 70).
func injectBitflip(ctx context.Context, t fault.Target, o fault.Occurrence) (fault.Revert, error) {
	req, stack, perrs := bitflipRequest(o.Params)
	if err := paramsError(o.Type, o.Params, perrs); err != nil {
		return nil, err
	}
	if stack {
		_, err := postControl(ctx, t, o, o.Node, brick.ControlRequest{Action: "crash"})
		if revert, ok := offlineNoOp(t, o, err); ok {
			return revert, nil
		}
		if err != nil {
			return nil, err
		}
		return func() error { return nil }, nil
	}
	reply, err := postControl(ctx, t, o, o.Node, req)
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

// injectSlow makes the brick sleep before every message (seed 004 §5.8).
// Params: delay (default 1ms). The brick is also told the fault's duration,
// so it reverts by itself should the controller die; the clear asks it to
// clear. A brick that does not answer the clear is gone (restarted by
// Pinpoint, crashed: the fault went with its memory) or stopped (it
// reverts by itself when the duration it was given ends), so that is not
// an error; a brick that answers with an error is.
func injectSlow(ctx context.Context, t fault.Target, o fault.Occurrence) (fault.Revert, error) {
	delay, perrs := slowDelay(o.Params)
	if err := paramsError(o.Type, o.Params, perrs); err != nil {
		return nil, err
	}
	req := brick.ControlRequest{Action: "slow", Delay: delay.String()}
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
			if errors.Is(err, errNoAnswer) {
				err = nil
			}
		})
		return err
	}, nil
}

// injectNet applies a network fault to the front end → brick links of a
// node (node: N, every link of it: its NIC) or of one pair (link: [a, b]).
// Params: loss (p, default 0.1) and rto (default 200ms) for loss; delay
// (default 100ms) for delay; mode (hold | cut, default hold) for link-down.
// seed 004 §5.7 is {type: loss, node: BRICK, params: {loss: "0.7"}}.
func injectNet(_ context.Context, t fault.Target, o fault.Occurrence) (fault.Revert, error) {
	nl, ok := t.(NetLever)
	if !ok || nl.FaultNet() == nil {
		return nil, fmt.Errorf("%s: the cluster has no faultnet proxies: %w", o.Type, fault.ErrUnsupported)
	}
	st, perrs := netState(o.Type, o.Params)
	if err := paramsError(o.Type, o.Params, perrs); err != nil {
		return nil, err
	}
	fn := nl.FaultNet()
	var revert func()
	var err error
	switch {
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
	return func() error { revert(); return nil }, nil
}
