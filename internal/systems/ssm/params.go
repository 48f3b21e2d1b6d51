package ssm

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/faultnet"
	"github.com/faultbench/faultbench/internal/systems/ssm/brick"
)

// The params each SSM fault type takes. They are parsed by the same code
// when the scenario is checked (Check, with file:line) and when the fault
// is injected, so nothing the check let through fails at run time, and a
// typo in a param name is an error rather than a silently ignored default.
var faultParamKeys = map[string][]string{
	"bitflip":   {"count", "target", "which"},
	"slow":      {"delay"},
	"loss":      {"loss", "rto"},
	"delay":     {"delay"},
	"link-down": {"mode"},
}

// paramError is a problem with one param of a fault.
type paramError struct {
	key string
	err error
}

func (e paramError) Error() string {
	if e.key == "" {
		return fmt.Sprintf("params: %v", e.err)
	}
	return fmt.Sprintf("params.%s: %v", e.key, e.err)
}

// checkParamKeys reports every param of typ that it does not take.
func checkParamKeys(typ string, params map[string]string) []paramError {
	known, ok := faultParamKeys[typ]
	if !ok {
		return nil
	}
	var errs []paramError
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if !slices.Contains(known, k) {
			errs = append(errs, paramError{k, fmt.Errorf("no such param (%s takes %s)", typ, strings.Join(known, ", "))})
		}
	}
	return errs
}

// bitflipRequest turns a bitflip fault's params into its control request;
// stack is set for target stack (§5.5: the brick crashes at once).
func bitflipRequest(params map[string]string) (req brick.ControlRequest, stack bool, errs []paramError) {
	req = brick.ControlRequest{Action: "bitflip", Target: params["target"], Which: params["which"], Count: 1}
	switch req.Target {
	case "":
		req.Target = string(brick.FlipValue)
	case "stack":
		stack = true
	case string(brick.FlipValue), string(brick.FlipKey), string(brick.FlipChecksum), string(brick.FlipExpiry):
	default:
		errs = append(errs, paramError{"target", fmt.Errorf("%q is unknown (want value, checksum, expiry, key or stack)", req.Target)})
	}
	switch req.Which {
	case "", "latest", "random":
	default:
		errs = append(errs, paramError{"which", fmt.Errorf("%q is unknown (want latest or random)", req.Which)})
	}
	if v, ok := params["count"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			errs = append(errs, paramError{"count", fmt.Errorf("%q: want 1 to 1000", v)})
		} else {
			req.Count = n
		}
	}
	return req, stack, errs
}

// slowDelay is a slow fault's per-message delay (param delay, default 1ms).
func slowDelay(params map[string]string) (time.Duration, []paramError) {
	v, ok := params["delay"]
	if !ok {
		return time.Millisecond, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || d > time.Second {
		return 0, []paramError{{"delay", fmt.Errorf("%q: want a duration above 0, at most 1s", v)}}
	}
	return d, nil
}

// netState is the faultnet state of a loss, delay or link-down fault.
// Params: loss (p, default 0.1) and rto (default 200ms) for loss; delay
// (default 100ms) for delay; mode (hold | cut, default hold) for link-down.
func netState(typ string, params map[string]string) (faultnet.State, []paramError) {
	var st faultnet.State
	var errs []paramError
	dur := func(key string, def time.Duration) time.Duration {
		v, ok := params[key]
		if !ok {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, paramError{key, fmt.Errorf("%q is not a positive duration", v)})
		}
		return d
	}
	switch typ {
	case "loss":
		st.Loss = 0.1
		if v, ok := params["loss"]; ok {
			p, err := strconv.ParseFloat(v, 64)
			if err != nil || p < 0 || p > 1 {
				errs = append(errs, paramError{"loss", fmt.Errorf("%q is not a probability in [0, 1]", v)})
			}
			st.Loss = p
		}
		st.RTO = dur("rto", faultnet.DefaultRTO)
	case "delay":
		st.Delay = dur("delay", 100*time.Millisecond)
	case "link-down":
		m, err := faultnet.ParseDownMode(params["mode"])
		if err != nil {
			errs = append(errs, paramError{"mode", err})
		}
		st.Down = m
	}
	if len(errs) == 0 {
		if err := st.Validate(); err != nil {
			errs = append(errs, paramError{"", err})
		}
	}
	return st, errs
}

// faultParamErrors checks the params of one fault of an SSM scenario.
func faultParamErrors(typ string, params map[string]string) []paramError {
	errs := checkParamKeys(typ, params)
	switch typ {
	case "bitflip":
		_, _, e := bitflipRequest(params)
		errs = append(errs, e...)
	case "slow":
		_, e := slowDelay(params)
		errs = append(errs, e...)
	case "loss", "delay", "link-down":
		_, e := netState(typ, params)
		errs = append(errs, e...)
	}
	return errs
}

// paramsError is the injection-time form of faultParamErrors: one error
// for a fault, from its unknown params and the errors its parser (passed
// in, so the params are parsed once) found.
func paramsError(typ string, params map[string]string, parsed []paramError) error {
	errs := append(checkParamKeys(typ, params), parsed...)
	if len(errs) == 0 {
		return nil
	}
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = e.Error()
	}
	return fmt.Errorf("%s: %s", typ, strings.Join(parts, "; "))
}
