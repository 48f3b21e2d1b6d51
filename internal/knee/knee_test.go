package knee

import (
	"bytes"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"
)

// queue is a simulated system in memory: servers serve attempts first come
// first served, each taking an exponential time of mean service; arrivals
// are Poisson. Its capacity is servers/service attempts per second. An
// attempt still waiting after timeout gives up (not ok, latency = timeout);
// one that finds maxQueue attempts waiting is refused at once (not ok).
// Time is simulated: a probe returns at once, and the same seed gives the
// same answers.
type queue struct {
	servers  int
	service  time.Duration
	timeout  time.Duration
	maxQueue int
	seed     uint64
	steps    int
}

func (q *queue) capacity() float64 { return float64(q.servers) / q.service.Seconds() }

func (q *queue) Probe(ctx context.Context, rate float64, d time.Duration) (Measure, error) {
	if err := ctx.Err(); err != nil {
		return Measure{}, err
	}
	q.steps++
	rng := rand.New(rand.NewPCG(q.seed, uint64(q.steps)))
	free := make(freeAt, q.servers) // when each server is next free, seconds
	var t Tally
	var waiting []float64 // start times of attempts in service or queued, for maxQueue
	for at := rng.ExpFloat64() / rate; at < d.Seconds(); at += rng.ExpFloat64() / rate {
		// Attempts whose service started before at have left the queue.
		n := 0
		for _, start := range waiting {
			if start > at {
				waiting[n] = start
				n++
			}
		}
		waiting = waiting[:n]
		if len(waiting) >= q.maxQueue {
			t.Add(false, 0)
			continue
		}
		start := math.Max(at, free[0])
		if start-at > q.timeout.Seconds() {
			t.Add(false, q.timeout)
			continue // gave up before being served: the server is not taken
		}
		end := start + rng.ExpFloat64()*q.service.Seconds()
		free[0] = end
		heap.Fix(&free, 0)
		waiting = append(waiting, start)
		lat := end - at
		if lat > q.timeout.Seconds() {
			t.Add(false, q.timeout)
			continue
		}
		t.Add(true, time.Duration(lat*float64(time.Second)))
	}
	return t.Measure(), nil
}

type freeAt []float64

func (f freeAt) Len() int           { return len(f) }
func (f freeAt) Less(i, j int) bool { return f[i] < f[j] }
func (f freeAt) Swap(i, j int)      { f[i], f[j] = f[j], f[i] }
func (f *freeAt) Push(x any)        { *f = append(*f, x.(float64)) }
func (f *freeAt) Pop() any          { old := *f; x := old[len(old)-1]; *f = old[:len(old)-1]; return x }

func TestSearchFindsTheKneeOfASimulatedQueue(t *testing.T) {
	for _, q := range []*queue{
		{servers: 4, service: 10 * time.Millisecond, timeout: 6 * time.Second, maxQueue: 1 << 30, seed: 1}, // 400/s
		{servers: 1, service: 5 * time.Millisecond, timeout: 6 * time.Second, maxQueue: 1 << 30, seed: 2},  // 200/s
		{servers: 8, service: 4 * time.Millisecond, timeout: time.Second, maxQueue: 50, seed: 3},           // 2000/s, sheds load
	} {
		cfg := Default
		cfg.P99 = 100 * time.Millisecond
		res, err := Search(context.Background(), cfg, q)
		if err != nil {
			t.Fatal(err)
		}
		c := q.capacity()
		t.Logf("capacity %v/s: %s", c, res.Summary(cfg))
		if res.Knee < 0.7*c || res.Knee > c || res.Unsaturated {
			t.Errorf("capacity %v/s: knee %v/s, want within [0.7, 1] × capacity (%s)", c, res.Knee, res.Summary(cfg))
		}
		if res.Rate != cfg.Fraction*res.Knee {
			t.Errorf("rate %v, want %v × %v", res.Rate, cfg.Fraction, res.Knee)
		}
		if len(res.Steps) > cfg.MaxSteps() || q.steps != len(res.Steps) {
			t.Errorf("%d steps (probed %d), bound %d", len(res.Steps), q.steps, cfg.MaxSteps())
		}
		if res.Above <= res.Knee || res.Above > res.Knee*(1+(cfg.Factor-1)/8)+1e-9 {
			t.Errorf("knee %v, lowest failing %v: three bisections should leave at most 1/8 of a ramp step between them", res.Knee, res.Above)
		}
		if last, before := res.Steps[len(res.Steps)-1], res.Steps[len(res.Steps)-2]; last.Stage != "confirm" || last.Rate != res.Rate || !last.Pass || (before.Stage != "refine" && before.Stage != "retry") {
			t.Errorf("last steps %+v, %+v: want a refine step (or its retry), then the run's rate confirmed", before, last)
		}
	}
}

// TestSearchAgreesWithMM1 checks the simulated knee against queueing
// theory: in an M/M/1 queue of service rate μ the sojourn time is
// exponential with rate μ − λ, so p99 ≤ B holds up to λ = μ − ln(100)/B.
func TestSearchAgreesWithMM1(t *testing.T) {
	q := &queue{servers: 1, service: 5 * time.Millisecond, timeout: 6 * time.Second, maxQueue: 1 << 30, seed: 2}
	cfg := Default
	cfg.P99 = 100 * time.Millisecond
	cfg.StepTime = 20 * time.Second // simulated: a long step keeps the p99 estimate close
	cfg.Refine = 5
	res, err := Search(context.Background(), cfg, q)
	if err != nil {
		t.Fatal(err)
	}
	theory := q.capacity() - math.Log(100)/cfg.P99.Seconds() // 153.9/s
	if math.Abs(res.Knee-theory) > 0.1*theory {
		t.Errorf("knee %v/s, theory %v/s (%s)", res.Knee, theory, res.Summary(cfg))
	}
}

// TestSearchBracketsAThreshold checks the search against a system that
// passes exactly up to a known rate, over many configurations: the knee is
// the highest passing rate offered, the lowest failing one lies above the
// threshold, and bisection shrinks the gap as it should.
func TestSearchBracketsAThreshold(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for range 500 {
		cfg := Default
		cfg.Start = 1 + rng.Float64()*100
		cfg.Max = cfg.Start * (1 + rng.Float64()*1000)
		cfg.Factor = 1.1 + rng.Float64()*2
		cfg.Refine = rng.IntN(6)
		if cfg.Validate() != nil {
			continue
		}
		threshold := cfg.Start * (1 + rng.Float64()*1200)
		var offered []float64
		probe := ProbeFunc(func(_ context.Context, rate float64, _ time.Duration) (Measure, error) {
			offered = append(offered, rate)
			if rate <= threshold {
				return Measure{Attempts: 100, OK: 100, P99: time.Millisecond}, nil
			}
			return Measure{Attempts: 100, OK: 50, P99: time.Millisecond}, nil
		})
		res, err := Search(context.Background(), cfg, probe)
		if err != nil {
			t.Fatalf("%+v threshold %v: %v", cfg, threshold, err)
		}
		if len(offered) > cfg.MaxSteps() {
			t.Fatalf("%d steps, bound %d", len(offered), cfg.MaxSteps())
		}
		if threshold >= cfg.Max {
			if !res.Unsaturated || res.Knee != cfg.Max {
				t.Fatalf("%+v threshold %v ≥ max: %+v, want unsaturated at max", cfg, threshold, res)
			}
			continue
		}
		if !(res.Knee <= threshold && threshold < res.Above) || res.Unsaturated {
			t.Fatalf("%+v threshold %v: knee %v, above %v", cfg, threshold, res.Knee, res.Above)
		}
		rampGap := res.Knee * (cfg.Factor - 1)
		if gap := res.Above - res.Knee; gap > rampGap/math.Pow(2, float64(cfg.Refine))*(1+1e-9)+1e-9 && res.Above != cfg.Max {
			t.Fatalf("%+v threshold %v: gap %v after %d bisections of %v", cfg, threshold, gap, cfg.Refine, rampGap)
		}
	}
}

func TestSearchFailsWhenTheStartRateFails(t *testing.T) {
	q := &queue{servers: 1, service: 100 * time.Millisecond, timeout: time.Second, maxQueue: 1 << 30, seed: 1} // 10/s
	res, err := Search(context.Background(), Default, q)
	if !errors.Is(err, ErrNoPass) || len(res.Steps) != 2 || res.Steps[1].Stage != "retry" || res.Knee != 0 || res.Rate != 0 {
		t.Fatalf("err %v, result %+v: want ErrNoPass after the first step and its retry", err, res)
	}
	if !strings.Contains(err.Error(), "lower start") {
		t.Errorf("error %q should say what to do", err)
	}
}

func TestSearchStopsAtMax(t *testing.T) {
	q := &queue{servers: 8, service: time.Millisecond, timeout: time.Second, maxQueue: 1 << 30, seed: 1} // 8000/s
	cfg := Default
	cfg.Max = 1000
	res, err := Search(context.Background(), cfg, q)
	if err != nil || !res.Unsaturated || res.Knee != 1000 || res.Steps[len(res.Steps)-2].Stage != "ramp" {
		t.Fatalf("err %v, result %+v: want unsaturated at max 1000 without refining", err, res)
	}
	if !strings.Contains(res.Summary(cfg), "not saturated at max 1000/s") {
		t.Errorf("summary %q", res.Summary(cfg))
	}
}

// scarred is a system that overload harms: once offered more than its
// capacity, it holds only after × capacity from then on (connections or
// memory it never gives back).
type scarred struct {
	capacity, after float64
	harmed          bool
}

func (s *scarred) Probe(_ context.Context, rate float64, _ time.Duration) (Measure, error) {
	c := s.capacity
	if s.harmed {
		c *= s.after
	}
	if rate > s.capacity {
		s.harmed = true
	}
	if rate <= c {
		return Measure{Attempts: 100, OK: 100, P99: time.Millisecond}, nil
	}
	return Measure{Attempts: 100, OK: 100, P99: 5 * time.Second}, nil
}

// TestSearchConfirmsTheRunRate: a system that the overloaded steps left
// weaker fails the confirmation; the search lowers the run's rate until
// one holds, and gives up with ErrUnconfirmed after Confirms failures.
func TestSearchConfirmsTheRunRate(t *testing.T) {
	cfg := Default
	res, err := Search(context.Background(), cfg, &scarred{capacity: 1000, after: 0.75})
	if err != nil {
		t.Fatal(err)
	}
	// The ramp overloads it at 1281/s, so the bisection already sees 750/s
	// and finds a knee of 854/s that no longer holds: the confirmation at
	// 0.9 × 854 fails, 0.81 × 854 = 692/s holds.
	if res.Knee != 854.296875 || res.Lowered != 1 || math.Abs(res.Rate-0.81*res.Knee) > 1e-9 || res.Rate > 750 {
		t.Errorf("knee %v, rate %v, lowered %d: want knee 854.3, the rate lowered once to 0.81 × knee", res.Knee, res.Rate, res.Lowered)
	}
	if s := res.Summary(cfg); !strings.Contains(s, "run rate 0.9 × knee = 768.9/s did not hold; lowered 1 time(s) by 0.9 to 692/s") {
		t.Errorf("summary %q", s)
	}
	res, err = Search(context.Background(), cfg, &scarred{capacity: 1000, after: 0.1})
	if !errors.Is(err, ErrUnconfirmed) || res.Lowered != Confirms || len(res.Steps) > cfg.MaxSteps() {
		t.Errorf("err %v, lowered %d, %d steps: want ErrUnconfirmed after %d confirmations", err, res.Lowered, len(res.Steps), Confirms)
	}
}

func TestSearchHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := &queue{servers: 4, service: 10 * time.Millisecond, timeout: time.Second, maxQueue: 1 << 30, seed: 1}
	probe := ProbeFunc(func(ctx context.Context, rate float64, d time.Duration) (Measure, error) {
		if q.steps == 2 {
			cancel() // Ctrl-C during the third step
		}
		return q.Probe(ctx, rate, d)
	})
	res, err := Search(ctx, Default, probe)
	if !errors.Is(err, context.Canceled) || len(res.Steps) != 2 {
		t.Fatalf("err %v after %d steps, want context.Canceled after 2", err, len(res.Steps))
	}
}

func TestJudgeBoundaries(t *testing.T) {
	cfg := Default // goodput ≥ 0.99, p99 ≤ 1s
	cases := []struct {
		m    Measure
		pass bool
		why  string
	}{
		{Measure{Attempts: 100, OK: 99, P99: time.Second}, true, ""},
		{Measure{Attempts: 100, OK: 98, P99: time.Second}, false, "goodput 0.9800 < 0.99"},
		{Measure{Attempts: 100, OK: 100, P99: time.Second + time.Millisecond}, false, "p99 1.001s > 1s"},
		{Measure{Attempts: 100, OK: 0, P99: 2 * time.Second}, false, "goodput 0.0000 < 0.99, p99 2s > 1s"},
		{Measure{}, false, "no attempts (step_time × rate below 1)"},
	}
	for _, c := range cases {
		s := Step{Measure: c.m}
		cfg.judge(&s)
		if s.Pass != c.pass || s.Why != c.why {
			t.Errorf("%+v: pass %v %q, want %v %q", c.m, s.Pass, s.Why, c.pass, c.why)
		}
	}
}

func TestValidate(t *testing.T) {
	if err := Default.Validate(); err != nil {
		t.Fatal(err)
	}
	if n := Default.MaxSteps(); n != 26 {
		t.Errorf("default search: %d steps at most, want 26 (16 ramp + 1 retry + 3 refine + 3 retries + 3 confirm)", n)
	}
	for _, c := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Start = 0 }, "start 0"},
		{func(c *Config) { c.Max = 10 }, "max 10"},
		{func(c *Config) { c.Factor = 1 }, "factor 1"},
		{func(c *Config) { c.Refine = -1 }, "refine -1"},
		{func(c *Config) { c.StepTime = 0 }, "step_time 0s"},
		{func(c *Config) { c.Goodput = 1.5 }, "goodput 1.5"},
		{func(c *Config) { c.P99 = 0 }, "p99 0s"},
		{func(c *Config) { c.Fraction = 0 }, "fraction 0"},
		{func(c *Config) { c.Start, c.Max, c.Factor = 1, 1e6, 1.1 }, "could take"},
	} {
		cfg := Default
		c.change(&cfg)
		err := cfg.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", cfg, err, c.want)
		}
	}
}

func TestCSVRoundTrip(t *testing.T) {
	q := &queue{servers: 4, service: 10 * time.Millisecond, timeout: 6 * time.Second, maxQueue: 1 << 30, seed: 1}
	res, err := Search(context.Background(), Default, q)
	if err != nil {
		t.Fatal(err)
	}
	res.Steps = append(res.Steps, Step{N: len(res.Steps) + 1, Stage: "ramp", Rate: 1, Goodput: math.NaN(), Why: "no attempts, \"quoted\""},
		Step{N: len(res.Steps) + 2, Stage: "retry", Rate: 9, Measure: Measure{Attempts: 40, OK: 40, Refused: 5}, Goodput: 1, Invalid: true, Why: "invalid"})
	var buf bytes.Buffer
	if err := WriteCSV(&buf, Default, res.Steps); err != nil {
		t.Fatal(err)
	}
	got, bounds, err := ReadCSV(&buf, "knee.csv")
	if err != nil {
		t.Fatal(err)
	}
	if bounds.Goodput != Default.Goodput || bounds.P99 != Default.P99 {
		t.Errorf("bounds %+v back, want goodput %v p99 %v", bounds, Default.Goodput, Default.P99)
	}
	if len(got) != len(res.Steps) {
		t.Fatalf("%d steps back, want %d", len(got), len(res.Steps))
	}
	for i, s := range res.Steps {
		g := got[i]
		close := func(a, b float64) bool {
			return a == b || math.Abs(a-b) <= 1e-5*math.Abs(a) || (math.IsNaN(a) && math.IsNaN(b))
		}
		if g.N != s.N || g.Stage != s.Stage || !close(g.Rate, s.Rate) || g.Attempts != s.Attempts || g.OK != s.OK ||
			!close(g.Goodput, s.Goodput) || !close(g.P99.Seconds(), s.P99.Seconds()) || g.Pass != s.Pass || g.Why != s.Why ||
			g.Refused != s.Refused || g.Invalid != s.Invalid {
			t.Errorf("step %d: %+v back as %+v", i, s, g)
		}
	}
	// A knee.csv from before gen_refused and valid reads with none refused.
	old := "step,stage,rate_per_s,attempts,ok,goodput,latency_p50_s,latency_p99_s,pass,why,goodput_min,latency_p99_max_s\n" +
		"1,ramp,50,250,250,1,0.001,0.002,true,,0.99,1\n"
	if got, _, err := ReadCSV(strings.NewReader(old), "old.csv"); err != nil || len(got) != 1 || got[0].Attempts != 250 || got[0].Refused != 0 || got[0].Invalid {
		t.Errorf("old knee.csv: %+v, %v", got, err)
	}
	if _, _, err := ReadCSV(strings.NewReader("a,b\n"), "x.csv"); err == nil {
		t.Error("a file that is not knee.csv was accepted")
	}
}

// TestTallyQuantiles compares Tally with a direct nearest-rank computation.
func TestTallyQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for n := 1; n < 300; n += 7 {
		var tally Tally
		var lat []float64
		ok := 0
		for range n {
			d := time.Duration(rng.IntN(1e9))
			good := rng.IntN(10) > 0
			if good {
				ok++
			}
			tally.Add(good, d)
			lat = append(lat, d.Seconds())
		}
		sort.Float64s(lat)
		m := tally.Measure()
		rank := func(q float64) float64 { return lat[int(math.Ceil(q*float64(n)))-1] }
		if m.Attempts != n || m.OK != ok || math.Abs(m.P99.Seconds()-rank(0.99)) > 1e-9 || math.Abs(m.P50.Seconds()-rank(0.5)) > 1e-9 {
			t.Fatalf("n=%d: %+v, want p50 %v p99 %v", n, m, rank(0.5), rank(0.99))
		}
	}
}

// TestSearchRetriesAFailedStep: one unlucky step (another job took the
// cores) neither ends the ramp nor moves the bisection for good; a rate
// that fails twice is the knee's upper side.
func TestSearchRetriesAFailedStep(t *testing.T) {
	const capacity = 1000.0
	calls := 0
	probe := ProbeFunc(func(_ context.Context, rate float64, d time.Duration) (Measure, error) {
		calls++
		n := int(rate * d.Seconds())
		m := Measure{Attempts: n, OK: n, P50: time.Millisecond, P99: 10 * time.Millisecond}
		if rate > capacity || calls == 2 || calls == 10 { // calls 2 and 10: a ramp and a refine step, unlucky once
			m.P99 = 5 * time.Second
		}
		return m, nil
	})
	cfg := Config{Start: 100, Max: 10000, Factor: 2, Refine: 3, StepTime: time.Second, Goodput: 0.99, P99: time.Second, Fraction: 0.9}
	res, err := Search(context.Background(), cfg, probe)
	if err != nil {
		t.Fatal(err)
	}
	var stages []string
	for _, s := range res.Steps {
		stages = append(stages, fmt.Sprintf("%s %g %v", s.Stage, s.Rate, s.Pass))
	}
	got := strings.Join(stages, ", ")
	want := "ramp 100 true, ramp 200 false, retry 200 true, ramp 400 true, ramp 800 true, ramp 1600 false, retry 1600 false, " +
		"refine 1200 false, retry 1200 false, refine 1000 false, retry 1000 true, refine 1100 false, retry 1100 false, confirm 900 true"
	if got != want {
		t.Errorf("steps:\n got %s\nwant %s", got, want)
	}
	if res.Knee != 1000 || res.Above != 1100 || res.Rate != 900 {
		t.Errorf("knee %v, above %v, rate %v: want 1000, 1100, 900", res.Knee, res.Above, res.Rate)
	}
	if len(res.Steps) > cfg.MaxSteps() {
		t.Errorf("%d steps, bound %d", len(res.Steps), cfg.MaxSteps())
	}
}

// genLimited is a service of capacity capacity behind a generator that
// cannot offer more than limit attempts per second: above it, the excess
// arrivals are refused by the generator, and the attempts it does send are
// served well (the service is not saturated).
type genLimited struct{ capacity, limit float64 }

func (g genLimited) Probe(_ context.Context, rate float64, d time.Duration) (Measure, error) {
	n := int(rate * d.Seconds())
	sent := min(n, int(g.limit*d.Seconds()))
	m := Measure{Attempts: sent, OK: sent, P50: time.Millisecond, P99: 2 * time.Millisecond, Refused: n - sent}
	if rate > g.capacity {
		m.OK = int(float64(sent) * g.capacity / rate)
	}
	return m, nil
}

// TestSearchDoesNotChargeTheGeneratorsRefusals: a step whose arrivals the
// generator refused is invalid, not a service failure: the knee found
// below it is said to be the generator's.
func TestSearchDoesNotChargeTheGeneratorsRefusals(t *testing.T) {
	cfg := Config{Start: 100, Max: 10000, Factor: 2, Refine: 2, StepTime: time.Second, Goodput: 0.99, P99: time.Second, Fraction: 0.9}
	res, err := Search(context.Background(), cfg, genLimited{capacity: 5000, limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if res.GenLimit == 0 || res.GenLimit > 1600 || res.Knee > 1000 || res.Knee < 800 {
		t.Fatalf("knee %v, generator limit %v: want a knee just under the generator's 1000/s and the limit said", res.Knee, res.GenLimit)
	}
	invalid := 0
	for _, s := range res.Steps {
		if s.Invalid {
			invalid++
			if s.Pass || !strings.Contains(s.Why, "generator refused") || strings.Contains(s.Why, "goodput") {
				t.Errorf("invalid step %+v: want not passed, why naming the generator and not goodput", s)
			}
			if s.Attempts+s.Refused != int(s.Rate*cfg.StepTime.Seconds()) {
				t.Errorf("step %+v: attempts + refused should be every arrival", s)
			}
		} else if s.Refused != 0 {
			t.Errorf("step %+v has refusals but is valid", s)
		}
	}
	if invalid < 2 {
		t.Errorf("%d invalid step(s): the first invalid rate is retried", invalid)
	}
	if sum := res.Summary(cfg); !strings.Contains(sum, "generator could not offer") || !strings.Contains(sum, ":invalid") {
		t.Errorf("summary %q does not say the generator limited the search", sum)
	}
	// A service that saturates first is still found as the service's knee.
	res, err = Search(context.Background(), cfg, genLimited{capacity: 700, limit: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	if res.GenLimit != 0 || res.Knee > 700 {
		t.Errorf("service-bound search: knee %v, generator limit %v", res.Knee, res.GenLimit)
	}
}
