package workload

import (
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/quick"
	"time"
)

func testConfig(arrivals, trace string) Config {
	return WithDefaults(Config{
		Rate: 1000, Arrivals: arrivals, Clients: 3, Trace: trace, Seed: 42,
		Targets: []Target{{1, "127.0.0.1:1"}, {2, "127.0.0.1:2"}},
	})
}

func walk(t *testing.T, cfg Config, c, n int) []arrival {
	t.Helper()
	spec, err := ParseTraceSpec(cfg.Trace)
	if err != nil {
		t.Fatal(err)
	}
	trace, err := LoadTrace(spec, cfg.BaseDir)
	if err != nil {
		t.Fatal(err)
	}
	s := newSchedule(cfg, trace, c)
	var out []arrival
	for range n {
		a, ok := s.next()
		if !ok {
			break
		}
		out = append(out, a)
	}
	return out
}

func TestScheduleDeterministic(t *testing.T) {
	for _, arrivals := range []string{"poisson", "constant"} {
		cfg := testConfig(arrivals, "zipf:100:1")
		a, b := walk(t, cfg, 1, 500), walk(t, cfg, 1, 500)
		if !slices.Equal(a, b) {
			t.Errorf("%s: same seed gave different schedules", arrivals)
		}
		other := walk(t, cfg, 2, 500)
		if slices.Equal(a, other) {
			t.Errorf("%s: clients 1 and 2 share a schedule", arrivals)
		}
		cfg.Seed++
		if arrivals == "poisson" && slices.Equal(a, walk(t, cfg, 1, 500)) {
			t.Errorf("%s: seed does not change the schedule", arrivals)
		}
		for i := 1; i < len(a); i++ {
			if a[i].at < a[i-1].at {
				t.Fatalf("%s: arrival %d at %v before %v", arrivals, i, a[i].at, a[i-1].at)
			}
		}
	}
}

// Clients' shares add up to the configured rate, and each client is
// round-robin over the targets.
func TestScheduleRateAndRoundRobin(t *testing.T) {
	cfg := testConfig("poisson", "zipf:10:1")
	const n = 20000
	var total float64
	for c := range cfg.Clients {
		a := walk(t, cfg, c, n)
		total += float64(n) / a[n-1].at.Seconds()
		for i, x := range a[:10] {
			if want := (c + i) % len(cfg.Targets); x.target != want {
				t.Fatalf("client %d arrival %d: target %d, want %d", c, i, x.target, want)
			}
		}
	}
	// 60000 exponential gaps: the estimate is within 3% with overwhelming odds,
	// and the seed fixes it anyway.
	if math.Abs(total-cfg.Rate)/cfg.Rate > 0.03 {
		t.Errorf("clients together offer %.1f/s, want about %.0f", total, cfg.Rate)
	}
}

func TestScheduleConstantInterleaves(t *testing.T) {
	cfg := testConfig("constant", "zipf:10:1")
	var all []time.Duration
	for c := range cfg.Clients {
		for _, a := range walk(t, cfg, c, 100) {
			all = append(all, a.at)
		}
	}
	slices.Sort(all)
	for i, at := range all {
		want := time.Duration(float64(i) / cfg.Rate * 1e9)
		if d := at - want; d < -time.Nanosecond || d > time.Nanosecond {
			t.Fatalf("arrival %d at %v, want %v", i, at, want)
		}
	}
}

func TestScheduleReplaysCLFTiming(t *testing.T) {
	dir := t.TempDir()
	log := `1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.0" 200 1
1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /b HTTP/1.0" 200 1
1.2.3.4 - - [10/Oct/2000:13:55:38 -0700] "POST /c HTTP/1.0" 200 1
1.2.3.4 - - [10/Oct/2000:13:55:39 -0700] "GET http://example.org/d?x=1 HTTP/1.0" 200 1
`
	if err := os.WriteFile(filepath.Join(dir, "access.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig("trace", "clf:access.log")
	cfg.BaseDir, cfg.Clients = dir, 2
	got := append(walk(t, cfg, 0, 10), walk(t, cfg, 1, 10)...)
	want := []arrival{
		{at: 0, target: 0, path: "/a"},
		{at: 3 * time.Second, target: 1, path: "/d?x=1"},
		{at: 500 * time.Millisecond, target: 1, path: "/b"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("replay\n got %+v\nwant %+v", got, want)
	}
}

// The binary search agrees with a plain linear scan of the law.
func TestZipfIndexMatchesLinearScan(t *testing.T) {
	for _, s := range []float64{0, 0.5, 1, 1.3} {
		z := NewZipf(257, s)
		linear := func(u float64) int {
			var sum, total float64
			for k := range 257 {
				total += math.Pow(float64(k+1), -s)
			}
			for k := range 257 {
				sum += math.Pow(float64(k+1), -s) / total
				if u < sum {
					return k
				}
			}
			return 256
		}
		f := func(x uint32) bool {
			u := float64(x) / (1 << 32)
			got, want := z.index(u), linear(u)
			// Rounding may move a boundary u by one rank.
			return got == want || (abs(got-want) == 1 && nearBoundary(z, u))
		}
		if err := quick.Check(f, &quick.Config{Rand: rand.New(rand.NewSource(1)), MaxCount: 2000}); err != nil {
			t.Errorf("s=%v: %v", s, err)
		}
	}
}

func abs(x int) int { return max(x, -x) }

func nearBoundary(z *Zipf, u float64) bool {
	for _, c := range z.cdf {
		if math.Abs(c-u) < 1e-12 {
			return true
		}
	}
	return false
}

// Draw frequencies follow the law, including s <= 1 where math/rand's Zipf
// cannot go: a seeded chi-square test.
func TestZipfFrequencies(t *testing.T) {
	const n, draws = 50, 200000
	for _, s := range []float64{0, 0.6, 1, 1.5} {
		z := NewZipf(n, s)
		rng := rand.New(rand.NewSource(7))
		counts := make([]int, n)
		for range draws {
			counts[z.Draw(rng)]++
		}
		var chi2 float64
		for k, got := range counts {
			want := z.Prob(k) * draws
			chi2 += (float64(got) - want) * (float64(got) - want) / want
		}
		// 49 degrees of freedom: the 0.999 quantile is 85.4.
		if chi2 > 85.4 {
			t.Errorf("s=%v: chi-square %.1f over 49 dof, frequencies stray from the law", s, chi2)
		}
		if s > 0 {
			if ratio := z.Prob(0) / z.Prob(1); math.Abs(ratio-math.Pow(2, s)) > 1e-9 {
				t.Errorf("s=%v: P(0)/P(1) = %v, want 2^s = %v", s, ratio, math.Pow(2, s))
			}
		}
	}
}

func BenchmarkScheduleNext(b *testing.B) {
	for _, arrivals := range []string{"poisson", "constant"} {
		b.Run(arrivals, func(b *testing.B) {
			cfg := testConfig(arrivals, "zipf:18000:1")
			spec, _ := ParseTraceSpec(cfg.Trace)
			trace, _ := LoadTrace(spec, "")
			s := newSchedule(cfg, trace, 0)
			b.ReportAllocs()
			for b.Loop() {
				s.next()
			}
		})
	}
}

func BenchmarkZipfDraw(b *testing.B) {
	z := NewZipf(18000, 1)
	rng := rand.New(rand.NewSource(1))
	for b.Loop() {
		z.Draw(rng)
	}
}
