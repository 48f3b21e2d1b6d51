package knee

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"
)

// Config says how to search. Every field must be set; Default gives the
// documented defaults (docs/scenario.md, workload.knee).
type Config struct {
	Start    float64       // first rate offered, attempts per second
	Max      float64       // highest rate offered
	Factor   float64       // growth from one ramp step to the next (> 1)
	Refine   int           // bisection steps after the ramp (0: none)
	StepTime time.Duration // how long each rate is offered
	Goodput  float64       // a step passes with ok/attempts at least this ...
	P99      time.Duration // ... and p99 latency at most this
	Fraction float64       // the run's rate is Fraction × knee
}

// Default is the search of docs/scenario.md when the scenario gives only
// `knee: {}`.
var Default = Config{Start: 50, Max: 20000, Factor: 1.5, Refine: 3, StepTime: 5 * time.Second,
	Goodput: 0.99, P99: time.Second, Fraction: 0.9}

// Limit on the number of steps a search may take; Validate refuses
// configurations that could need more.
const Limit = 64

// ErrConfig is wrapped by every error Validate returns.
var ErrConfig = errors.New("knee search")

// ErrNoPass is returned by Search when even the first rate failed: the
// system is saturated below Config.Start.
var ErrNoPass = errors.New("the first step already failed")

// ErrUnconfirmed is returned by Search when no confirmation step passed:
// the system does not hold even Fraction^Confirms × knee after the search,
// which usually means the overloaded steps left it worse than they found it.
var ErrUnconfirmed = errors.New("the run's rate did not hold after the search")

// Confirms is how many confirmation steps a search may take: after the
// ramp and the bisection, the run's rate itself is offered once more; if
// it fails, the rate is lowered by Fraction and offered again.
const Confirms = 3

// Validate checks cfg; the error names the field.
func (cfg Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...))
	}
	if !(cfg.Start > 0 && cfg.Start <= 1e6) {
		bad("start %v: want a rate above 0 (at most 1000000)", cfg.Start)
	}
	if !(cfg.Max >= cfg.Start && cfg.Max <= 1e6) {
		bad("max %v: want a rate from start (%v) to 1000000", cfg.Max, cfg.Start)
	}
	if !(cfg.Factor > 1 && cfg.Factor <= 10) {
		bad("factor %v: want a growth factor above 1 (at most 10)", cfg.Factor)
	}
	if cfg.Refine < 0 || cfg.Refine > 10 {
		bad("refine %d: want 0 to 10 bisection steps", cfg.Refine)
	}
	if cfg.StepTime <= 0 {
		bad("step_time %v: want a positive duration", cfg.StepTime)
	}
	if !(cfg.Goodput > 0 && cfg.Goodput <= 1) {
		bad("goodput %v: want a fraction above 0, at most 1", cfg.Goodput)
	}
	if cfg.P99 <= 0 {
		bad("p99 %v: want a positive latency bound", cfg.P99)
	}
	if !(cfg.Fraction > 0 && cfg.Fraction <= 1) {
		bad("fraction %v: want a fraction above 0, at most 1", cfg.Fraction)
	}
	if len(errs) == 0 && cfg.MaxSteps() > Limit {
		bad("start %v, max %v, factor %v and refine %d could take %d steps (at most %d): raise start or factor, or lower max",
			cfg.Start, cfg.Max, cfg.Factor, cfg.Refine, cfg.MaxSteps(), Limit)
	}
	return errors.Join(errs...)
}

// MaxSteps is the most steps Search takes with cfg: the ramp from Start to
// Max, Refine bisections, a retry of the ramp's failing step and of each
// failing bisection, then up to Confirms confirmations.
func (cfg Config) MaxSteps() int {
	return len(cfg.ramp()) + 1 + 2*cfg.Refine + Confirms
}

// MaxTime bounds the time the steps offer load (each step's drain, bounded
// by the workload's timeouts, comes on top).
func (cfg Config) MaxTime() time.Duration { return time.Duration(cfg.MaxSteps()) * cfg.StepTime }

// ramp is the rates of the ramp: Start, Start×Factor, ..., then Max.
func (cfg Config) ramp() []float64 {
	var rates []float64
	for r := cfg.Start; len(rates) <= 4*Limit; r *= cfg.Factor {
		if r >= cfg.Max*(1-1e-9) {
			rates = append(rates, cfg.Max)
			break
		}
		rates = append(rates, r)
	}
	return rates
}

// Measure is what a probe observed while offering one rate: every attempt
// the generator sent during the step, with its outcome settled, and apart
// from them the arrivals the generator itself refused.
type Measure struct {
	Attempts int
	OK       int
	P50, P99 time.Duration // over every attempt, whatever its outcome
	// Refused counts the step's arrivals the generator did not send (its
	// max_in_flight, no free user or connection). They are not in
	// Attempts: they say nothing of the service, and a step with any is
	// not a measurement of it (Step.Invalid).
	Refused int
}

// Probe offers rate attempts per second, open loop, for d and returns what
// it measured once every attempt of the step has its outcome. It returns
// ctx's error when ctx ends first. Search calls it from its own goroutine,
// one step at a time.
type Probe interface {
	Probe(ctx context.Context, rate float64, d time.Duration) (Measure, error)
}

// ProbeFunc adapts a function to a Probe.
type ProbeFunc func(ctx context.Context, rate float64, d time.Duration) (Measure, error)

// Probe calls f.
func (f ProbeFunc) Probe(ctx context.Context, rate float64, d time.Duration) (Measure, error) {
	return f(ctx, rate, d)
}

// Step is one judged step of a search.
type Step struct {
	N     int    // 1-based
	Stage string // "ramp", "refine", "retry" or "confirm"
	Rate  float64
	Measure
	Goodput float64 // OK / Attempts; NaN without attempts
	Pass    bool
	// Invalid is true when the generator refused some of the step's
	// arrivals: the step measured the generator's limit, not the service's,
	// so it does not pass (the rate was not offered), but it is no evidence
	// that the service saturated either (Result.GenLimit).
	Invalid bool
	Why     string // what failed ("goodput 0.93 < 0.99", "p99 1.2s > 1s"), "" when passed
}

// Result is a search's outcome.
type Result struct {
	Steps []Step
	Knee  float64 // highest passing rate of the ramp and bisection; 0 if none passed
	// Rate is the rate to run at: Fraction × Knee, lowered by Fraction for
	// each failed confirmation step; 0 when none passed.
	Rate float64
	// Lowered counts the confirmation steps that failed before one passed.
	Lowered int
	// Unsaturated is true when Max passed: the knee is at least Max and
	// was not observed.
	Unsaturated bool
	// Above is the lowest failing rate above the knee (+Inf when none).
	Above float64
	// GenLimit is the lowest rate the generator itself could not offer
	// (its steps were invalid twice, Step.Invalid); 0 when it offered
	// every rate. When GenLimit equals Above, the knee found is the
	// generator's, not the service's: the service may hold more.
	GenLimit float64
}

// judge decides whether a step passed.
func (cfg Config) judge(s *Step) {
	s.Goodput = math.NaN()
	if s.Attempts > 0 {
		s.Goodput = float64(s.OK) / float64(s.Attempts)
	}
	var why []string
	s.Invalid = s.Refused > 0
	switch {
	case s.Invalid:
		why = append(why, fmt.Sprintf("invalid: the generator refused %d of %d arrivals (raise max_in_flight, clients or max_conns)",
			s.Refused, s.Refused+s.Attempts))
	case s.Attempts == 0:
		why = append(why, "no attempts (step_time × rate below 1)")
	case s.Goodput < cfg.Goodput:
		why = append(why, fmt.Sprintf("goodput %.4f < %g", s.Goodput, cfg.Goodput))
	}
	if s.Attempts > 0 && s.P99 > cfg.P99 {
		why = append(why, fmt.Sprintf("p99 %v > %v", s.P99.Round(time.Microsecond), cfg.P99))
	}
	s.Pass = len(why) == 0
	s.Why = strings.Join(why, ", ")
}

// Search runs the search with probe. It returns the steps taken so far with
// any error: ctx's error when interrupted, ErrNoPass when the first step
// failed, or the probe's error.
func Search(ctx context.Context, cfg Config, probe Probe) (Result, error) {
	res := Result{Above: math.Inf(1)}
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	step := func(stage string, rate float64) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		m, err := probe.Probe(ctx, rate, cfg.StepTime)
		if err != nil {
			return false, err
		}
		s := Step{N: len(res.Steps) + 1, Stage: stage, Rate: rate, Measure: m}
		cfg.judge(&s)
		res.Steps = append(res.Steps, s)
		return s.Pass, nil
	}
	lastInvalid := func() bool { return len(res.Steps) > 0 && res.Steps[len(res.Steps)-1].Invalid }
	// judged judges a rate of the ramp or the bisection. On a shared machine
	// one step can fail by bad luck (another job took the cores for a
	// moment), and a failure ends the ramp or moves the bisection down for
	// good, so a failing rate is offered once more and fails only if it
	// fails again. A rate that passes once passes: the confirmation step
	// checks the run's rate after the search. A step the generator could
	// not offer in full (Step.Invalid) is retried the same way; invalid
	// again, the rate is out of the search's reach: it bounds the knee
	// from above like a failure, and GenLimit says it was the generator's.
	judged := func(stage string, rate float64) (bool, error) {
		pass, err := step(stage, rate)
		if err == nil && !pass {
			pass, err = step("retry", rate)
		}
		if err != nil {
			return false, err
		}
		if pass {
			res.Knee = math.Max(res.Knee, rate)
		} else {
			res.Above = math.Min(res.Above, rate)
			if lastInvalid() && (res.GenLimit == 0 || rate < res.GenLimit) {
				res.GenLimit = rate
			}
		}
		return pass, nil
	}
	ramp := cfg.ramp()
	for i, rate := range ramp {
		pass, err := judged("ramp", rate)
		if err != nil {
			return res.finish(cfg), err
		}
		if !pass {
			if i == 0 {
				return res.finish(cfg), fmt.Errorf("%w: %v attempts/s, twice (%s): lower start", ErrNoPass, rate, res.Steps[len(res.Steps)-1].Why)
			}
			break
		}
		res.Unsaturated = i == len(ramp)-1
	}
	for range cfg.Refine {
		if res.Unsaturated || math.IsInf(res.Above, 1) {
			break
		}
		if _, err := judged("refine", (res.Knee+res.Above)/2); err != nil {
			return res.finish(cfg), err
		}
	}
	// Confirm: a short step sees neither slow trouble nor the harm the
	// overloaded steps may have done (connections and memory still held),
	// so offer the run's rate itself once before the run depends on it.
	knee := res.Knee
	rate := cfg.Fraction * knee
	for i := range Confirms {
		// A confirmation judges the run's rate, not the knee: step leaves
		// Knee and Above alone. Its failure is not retried: it lowers the rate.
		pass, err := step("confirm", rate)
		if err != nil {
			return res.finish(cfg), err
		}
		if pass {
			res.Rate, res.Lowered = rate, i
			return res, nil
		}
		rate *= cfg.Fraction
	}
	res.Lowered = Confirms
	return res, fmt.Errorf("%w: %d confirmation step(s) from %.4g/s down to %.4g/s failed (%s): the overloaded steps may have left the system worse (restart it, or lower max), or lengthen step_time",
		ErrUnconfirmed, Confirms, cfg.Fraction*knee, rate/cfg.Fraction, res.Steps[len(res.Steps)-1].Why)
}

// finish gives a search that ended before its confirmation the rate it
// would have confirmed.
func (r Result) finish(cfg Config) Result {
	r.Rate = cfg.Fraction * r.Knee
	return r
}

// Tally accumulates one step's attempts for a Measure. It is safe for
// concurrent use (a load generator's sink calls Add from many goroutines).
// It keeps every latency, 8 bytes an attempt (a 5 s step at 20 000/s is
// 800 kB), so the p99 is exact.
type Tally struct {
	mu       sync.Mutex
	ok       int
	refused  int
	latencyS []float64
}

// Refuse counts one arrival the generator itself did not send.
func (t *Tally) Refuse() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refused++
}

// Add counts one attempt.
func (t *Tally) Add(ok bool, latency time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ok {
		t.ok++
	}
	t.latencyS = append(t.latencyS, latency.Seconds())
}

// Measure returns what was added so far.
func (t *Tally) Measure() Measure {
	t.mu.Lock()
	lat := append([]float64(nil), t.latencyS...)
	m := Measure{Attempts: len(lat), OK: t.ok, Refused: t.refused}
	t.mu.Unlock()
	sort.Float64s(lat)
	m.P50, m.P99 = quantile(lat, 0.50), quantile(lat, 0.99)
	return m
}

// quantile is the nearest-rank q-quantile of sorted (0 when empty).
func quantile(sorted []float64, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	i = max(0, min(i, len(sorted)-1))
	return time.Duration(sorted[i] * float64(time.Second))
}
