package scenario

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/faultbench/faultbench/internal/law"
)

// Ranges a run must stay within once every duration is scaled. Outside
// them a run is degenerate — it records nothing, or nothing a metric can
// use, or it spends its memory on empty windows — and `faultbench run`
// would find out only after the cluster started. docs/scenario.md lists them.
const (
	// MinWindow is the shortest aggregation window: below it a window
	// holds no request at any rate a loopback service can carry, and
	// every window costs a row and a histogram.
	MinWindow = time.Millisecond
	// MaxWindows bounds the windows of one run (run length / window).
	MaxWindows = 1_000_000
	// MinTimeout is the shortest connect_timeout and response_timeout:
	// below it every request times out however healthy the service.
	MinTimeout = time.Millisecond
	// MaxRecurrences bounds how many times one every: entry is expected to
	// strike in a run.
	MaxRecurrences = 10_000
	// MaxScale bounds --time-scale itself; how small it may be depends on
	// the scenario, and the ranges above say.
	MaxScale = 1000
)

// ErrScale is wrapped by ScaledChecked's error for a --time-scale factor
// that is not above 0 and at most MaxScale.
var ErrScale = errors.New("bad time scale")

// ScaledChecked returns the scenario as it will run at time scale f
// (Scaled) after checking it against the ranges above. `faultbench run
// --time-scale F` and `faultbench validate --time-scale F` both go through
// it, so a file validate accepts at a scale is one run can carry out at
// that scale. Errors name file:line and key, say the scale when it is not 1,
// and are all reported, joined.
func (sc *Scenario) ScaledChecked(f float64) (*Scenario, error) {
	if !(f > 0 && f <= MaxScale) {
		return nil, fmt.Errorf("%w: --time-scale %v: want a factor above 0 and at most %d (0.1 turns 5 minutes into 30 s)", ErrScale, f, MaxScale)
	}
	out := sc.Scaled(f)
	if err := out.checkBounds(f); err != nil {
		return nil, err
	}
	return out, nil
}

// checkBounds checks an already scaled scenario; f is only for messages.
func (sc *Scenario) checkBounds(f float64) error {
	var errs []error
	scale := ""
	if f != 1 {
		scale = fmt.Sprintf("at --time-scale %g, ", f)
	}
	bad := func(path []any, format string, args ...any) {
		errs = append(errs, sc.Errorf(path, "%s%s (ranges: docs/scenario.md)", scale, fmt.Sprintf(format, args...)))
	}
	w := sc.Workload
	length := sc.Length()
	window := w.Window.Duration

	switch {
	case window < MinWindow:
		bad([]any{"workload", "window"}, "window %s is shorter than %s: its windows would hold no requests", window, MinWindow)
	case window > length:
		bad([]any{"workload", "window"}, "window %s is longer than the whole run (%s): not one window would close; want at most the shortest phase", window, length)
	case length/window > MaxWindows:
		bad([]any{"workload", "window"}, "window %s cuts the %s run into %d windows (at most %d): lengthen the window", window, length, length/window, MaxWindows)
	default:
		for i, p := range sc.Phases {
			if p.Duration.Duration < window {
				bad([]any{"phases", i, "duration"}, "phase %q lasts %s, less than one window (%s): its metrics would come from no whole window; lengthen the phase or shorten workload.window", p.Name, p.Duration, window)
			}
		}
	}
	if w.ConnectTimeout.Duration < MinTimeout {
		bad([]any{"workload", "connect_timeout"}, "%s is shorter than %s: every connection would be given up", w.ConnectTimeout, MinTimeout)
	}
	if w.ResponseTimeout.Duration < MinTimeout {
		bad([]any{"workload", "response_timeout"}, "%s is shorter than %s: every response would time out", w.ResponseTimeout, MinTimeout)
	}

	// Open-loop arrivals: the expected count in the shortest phase at the
	// offered rate. Fewer than one leaves a phase with no attempts at all.
	if w.Knee == nil && w.Rate > 0 {
		for i, p := range sc.Phases {
			if n := w.Rate * p.Duration.Seconds(); n < 1 {
				bad([]any{"phases", i, "duration"}, "phase %q of %s offers %.3g requests at rate %v/s: fewer than one, so it would record nothing; lengthen it or raise workload.rate", p.Name, p.Duration, n, w.Rate)
			}
		}
	}
	if k := w.Knee; k != nil {
		if k.StepTime.Duration < window && window >= MinWindow {
			bad([]any{"workload", "knee", "step_time"}, "%s is shorter than one window (%s): a step's goodput and p99 would come from no whole window", k.StepTime, window)
		}
		if n := k.Start * k.StepTime.Seconds(); n < 1 {
			bad([]any{"workload", "knee", "step_time"}, "the first step offers %.3g requests (start %v/s for %s): fewer than one", n, k.Start, k.StepTime)
		}
	}

	for i, ft := range sc.Faults {
		at := func(k string) []any { return []any{"faults", i, k} }
		if ft.Mode == "transient" && ft.Duration.Duration > 0 && ft.Duration.Duration < MinTimeout {
			bad(at("duration"), "a fault of %s is shorter than %s: no request could see it", ft.Duration, MinTimeout)
		}
		if ft.Every == "" {
			continue
		}
		l, err := law.Parse(ft.Every)
		if err != nil || l.Mean <= 0 {
			continue // validate and the fault package say what is wrong
		}
		if err := recurrenceBounds(l, ft, length, window); err != "" {
			bad(at("every"), "%s", err)
		}
	}
	return errors.Join(errs...)
}

// recurrenceBounds says what is wrong with a recurring fault whose gaps
// follow l in a run of length cut into windows, or "" if nothing is. The
// gap runs from one occurrence's end to the next one's start.
func recurrenceBounds(l law.Law, ft Fault, length, window time.Duration) string {
	gap := l.Mean
	if gap < window {
		return fmt.Sprintf("%s: faults would recur faster than one window (%s), too fast to tell apart in the record; want a gap of at least one window", l, window)
	}
	left := length - ft.At.Duration
	if left <= 0 {
		return "" // validate reports an at past the end
	}
	cycle := gap + ft.Duration.Duration
	if n := float64(left) / float64(cycle); n > MaxRecurrences {
		return fmt.Sprintf("%s: about %.0f occurrences in the %s after at: (at most %d); lengthen the gap", l, math.Floor(n), left, MaxRecurrences)
	}
	// A fixed gap that ends after the run never recurs; a random one may,
	// unless its mean is longer than the whole run.
	if l.Is("fixed") && ft.At.Duration+cycle >= length {
		return fmt.Sprintf("%s never recurs: the first occurrence ends and the gap passes after the run's end (%s); leave every: out for one fault, or shorten the gap", l, length)
	}
	if gap > length {
		return fmt.Sprintf("%s: the mean gap is longer than the whole run (%s), so the fault would most likely strike once; leave every: out for one fault, or shorten the gap", l, length)
	}
	return ""
}
