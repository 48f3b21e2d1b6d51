package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/record"
)

// A load spike (fault type load-spike) is a workload fault, not a node
// fault: for its duration the emulated users offer more load than the
// scenario's rate. It works the same on every backend, since it acts on
// the load generator, never on a node.
//
// Open loop: extra client emulators, one per client, run a schedule of
// their own (the workload's arrivals law, seeded from the scenario seed
// and the fault's id) from the moment of the inject to the revert; their
// attempts are recorded like every other. Closed loop: extra users per
// client, who think and send like the others. The spike's own arrivals
// are therefore as independent of the base load as a second crowd of
// users would be: factor 3 is the base load plus twice as much again.

// SpikeParams are load-spike's parameters. Give factor or rate, not both.
type SpikeParams struct {
	// Factor multiplies the offered load for the spike's duration: the
	// open loop's rate, the closed loop's users per client. Default 2.
	Factor float64 `param:"factor"`
	// Rate adds this many arrivals per second (open loop only; also the
	// only way to spike a replayed trace, whose rate is the log's).
	Rate float64 `param:"rate"`
}

// NewSpikeParams returns the defaults: factor 2.
func NewSpikeParams() *SpikeParams { return &SpikeParams{Factor: 2} }

// maxSpikeFactor bounds factor: a spike is a surge, not a new workload.
const maxSpikeFactor = 1000

// Validate checks factor is in (1, 1000] and rate is 0 or in (0, maxRate];
// a rate replaces the default factor.
func (p *SpikeParams) Validate() error {
	if p.Rate != 0 {
		if !(p.Rate > 0) || p.Rate > maxRate {
			return &fault.ParamError{Key: "rate", Err: fmt.Errorf("rate %v: want extra arrivals per second above 0 and at most %d", p.Rate, maxRate)}
		}
		if p.Factor != 2 && p.Factor != 0 {
			return &fault.ParamError{Key: "factor", Err: fmt.Errorf("give factor or rate, not both (factor %v, rate %v)", p.Factor, p.Rate)}
		}
		p.Factor = 0
		return nil
	}
	if !(p.Factor > 1) || p.Factor > maxSpikeFactor {
		return &fault.ParamError{Key: "factor", Err: fmt.Errorf("factor %v: want more than 1 (the load it multiplies) and at most %d", p.Factor, maxSpikeFactor)}
	}
	return nil
}

func init() {
	// No lever of a backend or system: every run has a load generator,
	// which Generator.Target puts in the target chain.
	fault.Register("load-spike", fault.WithParams(NewSpikeParams, injectSpike), fault.Support{})
}

// Spiker is the lever of a load spike: the load generator of the run.
type Spiker interface {
	// Spike starts extra load now and returns once the first of it was
	// handed out (or proved scheduled); the Undo stops it. Both emit a
	// fault.effective / fault.reverted event with the measured offered
	// rate.
	Spike(o fault.Occurrence, p *SpikeParams) (fault.Revert, error)
}

func injectSpike(_ context.Context, t fault.Target, o fault.Occurrence, p *SpikeParams) (fault.Revert, error) {
	s, ok := fault.As[Spiker](t)
	if !ok {
		return nil, fmt.Errorf("%s: the target has no load generator in its chain (runner: wrap it with Generator.Target): %w", o.Type, fault.ErrUnsupported)
	}
	return s.Spike(o, p)
}

// Target returns t with the generator added as its Spiker, for the fault
// scheduler (load-spike). The generator does not embed t: other levers are
// found on t by fault.As.
func (g *Generator) Target(t fault.Target) fault.Target { return spikeTarget{inner: t, g: g} }

type spikeTarget struct {
	inner fault.Target
	g     *Generator
}

func (s spikeTarget) Size() int            { return s.inner.Size() }
func (s spikeTarget) Unwrap() fault.Target { return s.inner }
func (s spikeTarget) Spike(o fault.Occurrence, p *SpikeParams) (fault.Revert, error) {
	return s.g.Spike(o, p)
}

// SetEvents gives the generator the run's event sink and clock, for the
// fault.effective and fault.reverted events of load spikes. Call it before
// Run; without it those events are not emitted (the spike still runs).
func (g *Generator) SetEvents(emit func(record.Event), now func() time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.spikes.emit, g.spikes.now = emit, now
}

// runBounds are what Run hands its clients, kept for spikes started later.
type runBounds struct {
	sched, attempts context.Context
	start           time.Time
	length          time.Duration
}

// spikeState is the generator's bookkeeping of load spikes (under g.mu).
type spikeState struct {
	wg    sync.WaitGroup // every spike's clients or users; Run waits
	ended bool           // Run's clients ended: no spike may start
	emit  func(record.Event)
	now   func() time.Duration
}

// endSpikes stops new spikes and waits for the running ones (which end
// with the run's scheduling context or their revert).
func (g *Generator) endSpikes() {
	g.mu.Lock()
	g.spikes.ended = true
	g.mu.Unlock()
	g.spikes.wg.Wait()
}

// ErrSpikeAfterRun is returned by Spike when the run is not (or no longer)
// sending.
var ErrSpikeAfterRun = errors.New("load-spike: the load generator is not running")

// spikeStream offsets a spike's seeds from the clients' and users' own.
const spikeStream = 0x5ca1ab1e

// Spike starts a load spike: extra load from now until the returned
// Revert (or the end of the run). It returns once the first extra arrival
// was handed out, or the wait for it (at most maxSpikeProof) showed the
// extra rate is too low to expect one yet, and emits fault.effective with
// the offered rate measured meanwhile; the revert emits fault.reverted with
// the offered rate over the whole spike. Safe from any goroutine.
func (g *Generator) Spike(o fault.Occurrence, p *SpikeParams) (fault.Revert, error) {
	g.mu.Lock()
	rb, st := g.run, &g.spikes
	if rb.sched == nil || st.ended || rb.sched.Err() != nil {
		g.mu.Unlock()
		return nil, ErrSpikeAfterRun
	}
	from := time.Since(rb.start)
	extra, users, err := g.spikeSize(p)
	if err != nil {
		g.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", o.Type, err)
	}
	ctx, stop := context.WithCancel(rb.sched)
	sent := &spikeCount{}
	st.wg.Add(1)
	g.mu.Unlock()

	t0, offered0 := time.Now(), g.offered.Load()
	go func() {
		defer st.wg.Done()
		g.runSpike(ctx, rb, o.ID, from, extra, users, sent)
	}()
	expected := g.proveSpike(sent, extra, users)
	el := time.Since(t0)
	rate := float64(g.offered.Load()-offered0) / max(el.Seconds(), 1e-9)
	if expected >= 5 && sent.n.Load() == 0 {
		stop()
		return nil, fmt.Errorf("%s: no extra arrival sent within %s though %.0f were due: the generator is saturated (see send lag)", o.Type, ms(el), expected)
	}
	what := fmt.Sprintf("%.6g extra arrivals/s", extra)
	if users > 0 {
		what = fmt.Sprintf("%d extra users per client", users)
	}
	g.spikeEvent("fault.effective", o, fmt.Sprintf("load spike of %s from t=%.3fs: %d extra arrivals handed out in the first %s; offered %.0f/s meanwhile (%s)",
		what, from.Seconds(), sent.n.Load(), ms(el), rate, g.baseLoad()))
	return fault.Once(func() error {
		stop()
		d := time.Since(t0)
		n := g.offered.Load() - offered0
		g.spikeEvent("fault.reverted", o, fmt.Sprintf("load spike of %s stopped after %s: offered %.0f/s during it (%d arrivals, %d of them extra; %s)",
			what, ms(d), float64(n)/max(d.Seconds(), 1e-9), n, sent.n.Load(), g.baseLoad()))
		return nil
	}), nil
}

// CheckSpike checks a load-spike's raw params against the workload they
// will act on (model, arrivals), which the params alone cannot: a closed
// loop takes no rate, a replayed trace no factor. It returns the key at
// fault and the problem, or "" and nil. Params that do not decode are
// fault.Validate's to report.
func CheckSpike(model, arrivals string, raw map[string]string) (string, error) {
	p := NewSpikeParams()
	if fault.DecodeParams(p, raw) != nil {
		return "", nil
	}
	g := &Generator{cfg: Config{Model: model, Arrivals: arrivals, Rate: 1, Users: 1}}
	if _, _, err := g.spikeSize(p); err != nil {
		key := "factor"
		if p.Rate > 0 {
			key = "rate"
		}
		return key, fmt.Errorf("load-spike: %w", err)
	}
	return "", nil
}

// baseLoad describes the scenario's own load, for a spike's evidence.
func (g *Generator) baseLoad() string {
	switch {
	case g.cfg.Model == ModelClosed:
		return fmt.Sprintf("scenario: %d closed-loop users per client", max(g.cfg.Users, 1))
	case g.cfg.Arrivals == "trace":
		return "scenario: a replayed trace"
	}
	return fmt.Sprintf("scenario rate %.6g/s", g.cfg.Rate)
}

// spikeCount counts a spike's own arrivals.
type spikeCount struct{ n atomic.Int64 }

// spikeSize is a spike's extra open-loop rate, or its extra users per
// client (closed loop).
func (g *Generator) spikeSize(p *SpikeParams) (extra float64, users int, err error) {
	switch {
	case g.cfg.Model == ModelClosed && p.Rate > 0:
		return 0, 0, fmt.Errorf("params.rate adds arrivals to an open loop; closed-loop users pace themselves: use factor (users per client × factor)")
	case g.cfg.Model == ModelClosed:
		base := max(g.cfg.Users, 1)
		return 0, max(1, int(math.Round(float64(base)*(p.Factor-1)))), nil
	case p.Rate > 0:
		return p.Rate, 0, nil
	case g.cfg.Arrivals == "trace":
		return 0, 0, fmt.Errorf("a replayed trace has no rate to multiply: give params.rate (extra arrivals per second)")
	}
	return g.cfg.Rate * (p.Factor - 1), 0, nil
}

// maxSpikeProof bounds how long Spike waits for its evidence.
const maxSpikeProof = 2 * time.Second

// spikeProofArrivals is how many extra arrivals Spike waits for before it
// measures the offered rate (a rate from 20 Poisson arrivals is within
// about 22 % of the true one).
const spikeProofArrivals = 20

// proveSpike waits until the spike handed out spikeProofArrivals
// arrivals, or maxSpikeProof passed; it returns how many were due by
// then (0 when they all came).
func (g *Generator) proveSpike(sent *spikeCount, extra float64, users int) float64 {
	t0 := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(maxSpikeProof)
	defer deadline.Stop()
	for sent.n.Load() < spikeProofArrivals {
		select {
		case <-tick.C:
		case <-deadline.C:
			if users > 0 {
				return float64(users) // each user sends after one think time
			}
			return extra * time.Since(t0).Seconds()
		}
	}
	return 0
}

// runSpike runs a spike's clients (open loop) or users (closed loop)
// until ctx ends or the run's length.
func (g *Generator) runSpike(ctx context.Context, rb runBounds, id int, from time.Duration, extra float64, users int, sent *spikeCount) {
	var wg sync.WaitGroup
	for c := range g.cfg.Clients {
		if users > 0 {
			wg.Go(func() { g.spikeUsers(ctx, rb, c, id, from, users, sent) })
			continue
		}
		s := newSpikeSchedule(g.cfg, g.trace, c, extra, from, id)
		wg.Go(func() { g.client(ctx, rb.attempts, c, rb.start, rb.length, s, &sent.n) })
	}
	wg.Wait()
}

// spikeUsers runs client c's extra users of spike id, with a driver of
// their own, until ctx ends or the run's length.
func (g *Generator) spikeUsers(ctx context.Context, rb runBounds, c, id int, from time.Duration, users int, sent *spikeCount) {
	think, _ := ParseThink(g.cfg.Think) // Validate parsed it
	driver := g.newDriverUsers(c, users)
	if closer, ok := driver.(io.Closer); ok {
		defer closer.Close()
	}
	var wg sync.WaitGroup
	for u := range users {
		wg.Go(func() {
			g.user(ctx, rb.attempts, driver, think, c, spikeUser(g.cfg.Users, id, u), rb.start, from, rb.length, &sent.n)
		})
	}
	g.drain(&wg, rb.start, rb.length)
}

// spikeUser numbers user u of spike id apart from every base user (their
// seeds and first targets derive from the number).
func spikeUser(base, id, u int) int { return max(base, 1) + (id+1)*maxUsers + u }

// newSpikeSchedule is client c's share of a spike of extra arrivals per
// second, starting at from: the workload's arrivals law (constant or
// poisson; a replayed trace's spike is poisson) and paths, on a stream of
// its own.
func newSpikeSchedule(cfg Config, trace Trace, c int, extra float64, from time.Duration, id int) *schedule {
	s := &schedule{
		rng:     rand.New(rand.NewSource(clientSeed(cfg.Seed^int64(spikeStream+id), c))),
		paths:   trace.Source(c, cfg.Clients),
		client:  c,
		clients: cfg.Clients,
		targets: len(cfg.Targets),
		rate:    extra / float64(cfg.Clients),
		poisson: cfg.Arrivals != "constant",
		from:    from,
		at:      from,
	}
	return s
}

func (g *Generator) spikeEvent(kind string, o fault.Occurrence, detail string) {
	g.mu.Lock()
	emit, now := g.spikes.emit, g.spikes.now
	g.mu.Unlock()
	if emit == nil {
		return
	}
	ts := 0.0
	if now != nil {
		ts = now().Seconds()
	}
	emit(record.Event{TS: ts, Kind: kind, Fault: o.Type, ID: o.ID, Detail: detail})
}

func ms(d time.Duration) string { return d.Round(10 * time.Microsecond).String() }
