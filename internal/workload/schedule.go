package workload

import (
	"math/rand"
	"time"
)

// arrival is one scheduled attempt of one client.
type arrival struct {
	at     time.Duration // since run start
	target int           // index into the run's targets
	path   string
}

// schedule is one client's arrival process: a pure function of the seed, so
// tests and benchmarks can walk it without a network. Only the client's
// scheduling goroutine touches it.
type schedule struct {
	rng      *rand.Rand
	paths    PathSource
	client   int
	clients  int
	targets  int
	rate     float64 // this client's arrivals per second
	poisson  bool
	count    int           // arrivals handed out so far
	at       time.Duration // time of the last arrival (poisson)
	from     time.Duration // the schedule starts here (a load spike's inject time)
	replay   *clfTrace     // arrivals: trace
	replayAt int           // next line of replay for this client
}

// clientSeed derives client c's stream from the run seed (splitmix64), so
// that streams are independent and adding a client does not shift the others.
func clientSeed(seed int64, c int) int64 {
	z := uint64(seed) + uint64(c+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return int64(z ^ (z >> 31))
}

func newSchedule(cfg Config, trace Trace, c int) *schedule {
	s := &schedule{
		rng:     rand.New(rand.NewSource(clientSeed(cfg.Seed, c))),
		paths:   trace.Source(c, cfg.Clients),
		client:  c,
		clients: cfg.Clients,
		targets: len(cfg.Targets),
		rate:    cfg.Rate / float64(cfg.Clients),
		poisson: cfg.Arrivals == "poisson",
	}
	if cfg.Arrivals == "trace" {
		s.replay = trace.(*clfTrace) // Validate insists on a clf trace
		s.replayAt = c
	}
	return s
}

// next returns the client's next arrival, or false when the schedule has no
// more (only a replayed log runs out; callers stop at the run's end).
func (s *schedule) next() (arrival, bool) {
	var at time.Duration
	var path string
	switch {
	case s.replay != nil:
		if s.replayAt >= len(s.replay.paths) {
			return arrival{}, false
		}
		at, path = s.replay.offsets[s.replayAt], s.replay.paths[s.replayAt]
		s.replayAt += s.clients
	case s.poisson:
		s.at += time.Duration(s.rng.ExpFloat64() / s.rate * 1e9)
		at = s.at
	default:
		// Clients interleave evenly: client c sends at (c + k·clients)/Rate.
		// Computed from k, not summed, so rounding never drifts.
		at = s.from + time.Duration(float64(s.client+s.count*s.clients)/(s.rate*float64(s.clients))*1e9)
	}
	if s.replay == nil {
		path = s.paths.Next(s.rng)
	}
	a := arrival{at: at, target: (s.client + s.count) % s.targets, path: path}
	s.count++
	return a, true
}

// PlannedArrivals is how many attempts a run of cfg offers in length: the
// number of records Run will deliver if it runs to its end. It walks every
// client's schedule, so it costs as much as the schedule itself (under
// 100 ns an arrival) and allocates nothing per arrival.
func PlannedArrivals(cfg Config, length time.Duration) (int, error) {
	cfg = WithDefaults(cfg)
	if err := Validate(cfg); err != nil {
		return 0, err
	}
	trace, err := loadTrace(cfg)
	if err != nil {
		return 0, err
	}
	n := 0
	for c := range cfg.Clients {
		s := newSchedule(cfg, trace, c)
		for {
			a, ok := s.next()
			if !ok || a.at >= length {
				break
			}
			n++
		}
	}
	return n, nil
}
