package press

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/faultnet"
)

// NetLever is implemented by a fault.Target whose intra-cluster links run
// through a faultnet.Net (the testbed starts one per press cluster and
// gives node i the addresses Net.PeersOf(i) as its peer.J options).
type NetLever interface {
	FaultNet() *faultnet.Net
}

// ControlLever is implemented by a fault.Target that started its press nodes
// with a control endpoint (--option control=ADDR --option token=TOKEN).
type ControlLever interface {
	PressControl(node int) (addr, token string, err error)
}

// The network faults (on faultnet) and comm faults (on the control
// endpoint) a press cluster supports on the local backend.
var pressSupport = fault.Support{Backends: []string{"local"}, Systems: []string{Kind}}

func init() {
	for _, typ := range []string{"link-down", "link-flaky", "switch-down", "partition", "delay", "loss", "bandwidth"} {
		fault.Register(typ, fault.InjectorFunc(injectNet), pressSupport)
	}
	for _, typ := range []CommFault{MemAllocFail, BadParamNull, BadParamOffset, BadParamSize, Slow} {
		fault.Register(string(typ), fault.InjectorFunc(injectComm), pressSupport)
	}
}

// injectNet applies a network fault to the faultnet links. Params: mode
// (hold|cut, default hold) for link-down, switch-down and partition; up and
// down (default 1s each) for link-flaky; delay (default 100ms); loss (p,
// default 0.1) and rto (default 200ms); rate (bytes/s with optional K, M or G
// suffix, default 1M) for bandwidth. A link fault without link: applies to
// every link of node:, or to every link.
func injectNet(_ context.Context, t fault.Target, o fault.Occurrence) (fault.Revert, error) {
	nl, ok := t.(NetLever)
	if !ok || nl.FaultNet() == nil {
		return nil, fmt.Errorf("%s: the cluster has no faultnet proxies: %w", o.Type, fault.ErrUnsupported)
	}
	fn := nl.FaultNet()
	st, err := netState(o)
	if err != nil {
		return nil, err
	}
	var revert func()
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
	return func() error { revert(); return nil }, nil
}

func netState(o fault.Occurrence) (faultnet.State, error) {
	p := o.Params
	dur := func(key string, def time.Duration) (time.Duration, error) {
		v, ok := p[key]
		if !ok {
			return def, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("%s: params.%s %q is not a positive duration", o.Type, key, v)
		}
		return d, nil
	}
	mode, err := faultnet.ParseDownMode(p["mode"])
	if err != nil {
		return faultnet.State{}, fmt.Errorf("%s: params.mode: %w", o.Type, err)
	}
	var st faultnet.State
	switch o.Type {
	case "link-down", "switch-down", "partition":
		st.Down = mode
	case "link-flaky":
		up, err := dur("up", time.Second)
		if err != nil {
			return st, err
		}
		down, err := dur("down", time.Second)
		if err != nil {
			return st, err
		}
		st.Flaky = &faultnet.Flaky{Up: up, Down: down, Mode: mode}
	case "delay":
		if st.Delay, err = dur("delay", 100*time.Millisecond); err != nil {
			return st, err
		}
	case "loss":
		st.Loss = 0.1
		if v, ok := p["loss"]; ok {
			if st.Loss, err = strconv.ParseFloat(v, 64); err != nil || st.Loss < 0 || st.Loss > 1 {
				return st, fmt.Errorf("loss: params.loss %q is not a probability in [0, 1]", v)
			}
		}
		if st.RTO, err = dur("rto", faultnet.DefaultRTO); err != nil {
			return st, err
		}
	case "bandwidth":
		st.Bandwidth = 1 << 20
		if v, ok := p["rate"]; ok {
			if st.Bandwidth, err = parseRate(v); err != nil {
				return st, fmt.Errorf("bandwidth: params.rate: %w", err)
			}
		}
	}
	return st, st.Validate()
}

// parseRate reads bytes per second: "250000", "512K", "1M", "1MB", "2G".
func parseRate(s string) (int64, error) {
	v := strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B")
	mult := int64(1)
	switch {
	case strings.HasSuffix(v, "K"):
		mult, v = 1<<10, strings.TrimSuffix(v, "K")
	case strings.HasSuffix(v, "M"):
		mult, v = 1<<20, strings.TrimSuffix(v, "M")
	case strings.HasSuffix(v, "G"):
		mult, v = 1<<30, strings.TrimSuffix(v, "G")
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a positive byte rate (e.g. 1M)", s)
	}
	return n * mult, nil
}

// injectComm posts a comm fault to the node's control endpoint; the revert
// deletes it again. A fault until repaired lasts MaxFaultDuration at most,
// so the node reverts it even if the controller is gone. Params:
// probability, count, n, delay (see FaultSpec).
func injectComm(ctx context.Context, t fault.Target, o fault.Occurrence) (fault.Revert, error) {
	cl, ok := t.(ControlLever)
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
	spec := FaultSpec{Type: CommFault(o.Type), Duration: d.String(), Delay: o.Params["delay"]}
	if v, ok := o.Params["probability"]; ok {
		if spec.Probability, err = strconv.ParseFloat(v, 64); err != nil {
			return nil, fmt.Errorf("%s: params.probability %q: %w", o.Type, v, err)
		}
	}
	for key, dst := range map[string]*int{"count": &spec.Count, "n": &spec.N} {
		if v, ok := o.Params[key]; ok {
			if *dst, err = strconv.Atoi(v); err != nil {
				return nil, fmt.Errorf("%s: params.%s %q: %w", o.Type, key, v, err)
			}
		}
	}
	body, _ := json.Marshal(spec)
	var created activeFault
	if err := controlCall(ctx, http.MethodPost, "http://"+addr+"/faults", token, body, &created); err != nil {
		return nil, fmt.Errorf("%s on node %d: %w", o.Type, o.Node, err)
	}
	url := fmt.Sprintf("http://%s/faults/%d", addr, created.ID)
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return controlCall(ctx, http.MethodDelete, url, token, nil, nil)
	}, nil
}

var controlClient = &http.Client{Timeout: 5 * time.Second}

func controlCall(ctx context.Context, method, url, token string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := controlClient.Do(req)
	if err != nil {
		return fmt.Errorf("press control %s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var msg bytes.Buffer
		msg.ReadFrom(http.MaxBytesReader(nil, resp.Body, 512))
		return fmt.Errorf("press control %s %s: %s: %s", method, url, resp.Status, strings.TrimSpace(msg.String()))
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}
