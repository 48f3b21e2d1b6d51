package pinpoint

import (
	"math"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/quick"
	"time"
)

// fault changes what brick sends from tick on.
type fault func(tick int, s *Sample, rng *rand.Rand) (send bool)

// synth generates one healthy brick's second: reads and writes around 300/s
// with noise, no drops, a small random inbox, and state that grows with the
// writes until its expiry generation is collected every 10 s (a sawtooth
// whose phase differs per brick).
func synth(node, tick int, rng *rand.Rand) Sample {
	var s Sample
	s[NumReads] = 300 + rng.NormFloat64()*15
	s[NumWrites] = 300 + rng.NormFloat64()*15
	phase := (tick + node*3) % 10
	s[NumElements] = float64(200*phase) + rng.Float64()*20
	s[MemoryUsed] = s[NumElements]*8300 + rng.Float64()*1e4
	s[InboxSize] = float64(rng.Intn(4))
	return s
}

// run feeds nodes 1..n for ticks seconds; faults[node] alters a brick from
// faultAt on, until a restart cures it (transient) or for good (persistent).
// It returns every decision.
func run(t *testing.T, cfg Config, n, ticks, faultAt int, faults map[int]fault, persistent bool) []Decision {
	t.Helper()
	d, err := NewDetector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(42))
	var out []Decision
	for tick := 1; tick <= ticks; tick++ {
		at := time.Duration(tick) * time.Second
		for node := 1; node <= n; node++ {
			s := synth(node, tick, rng)
			send := true
			if f := faults[node]; f != nil && tick >= faultAt && !d.Offline(node) {
				send = f(tick, &s, rng)
			}
			if send {
				d.Observe(node, at, s)
			}
		}
		ds := d.Tick(at)
		for _, dec := range ds {
			if dec.Action == Restart && !persistent {
				delete(faults, dec.Node)
			}
		}
		out = append(out, ds...)
	}
	return out
}

func actions(ds []Decision, a Action) []Decision {
	var out []Decision
	for _, d := range ds {
		if d.Action == a {
			out = append(out, d)
		}
	}
	return out
}

func slow(tick int, s *Sample, rng *rand.Rand) bool {
	s[NumReads] = 80 + rng.NormFloat64()*10
	s[NumWrites] = 80 + rng.NormFloat64()*10
	s[NumDropped] = 40 + rng.NormFloat64()*5
	s[InboxSize] = float64(50 * (tick % 4))
	return true
}

func TestHealthyBricksAreLeftAlone(t *testing.T) {
	ds := run(t, Config{}, 6, 600, 0, nil, false)
	if r := actions(ds, Restart); len(r) > 0 {
		t.Fatalf("%d restarts of healthy bricks; first: %s", len(r), r[0].Detail())
	}
}

// TestSlowBrickRestarted is Ling, Kiciman and Fox (2004) §5.8: a brick that sleeps before each
// message processes fewer requests and drops more; it is restarted within
// seconds, on activity evidence.
func TestSlowBrickRestarted(t *testing.T) {
	ds := run(t, Config{}, 6, 90, 60, map[int]fault{3: slow}, false)
	r := actions(ds, Restart)
	if len(r) != 1 || r[0].Node != 3 {
		t.Fatalf("restarts %+v", r)
	}
	if r[0].At > 70*time.Second {
		t.Fatalf("restart at %v, more than 10 s after the fault", r[0].At)
	}
	var stats []string
	for _, e := range r[0].Evidence {
		stats = append(stats, e.Stat)
	}
	for _, want := range []string{"NumDropped", "NumReads", "NumWrites"} {
		if !slices.Contains(stats, want) {
			t.Errorf("evidence %v lacks %s", stats, want)
		}
	}
	t.Log(r[0].Detail())
}

// TestStatePatternRestarts: a brick whose activity looks normal but whose
// state statistics change shape — elements and memory thrash up and down
// every second (collection running constantly) instead of the peers'
// sawtooth, and the inbox fills steadily — is caught by the Tarzan
// comparison alone.
func TestStatePatternRestarts(t *testing.T) {
	ds := run(t, Config{}, 5, 100, 40, map[int]fault{2: func(tick int, s *Sample, rng *rand.Rand) bool {
		s[NumElements] = float64(1000 + 150*(tick%2))
		s[MemoryUsed] = s[NumElements] * 8300
		s[InboxSize] = float64(tick)
		return true
	}}, false)
	r := actions(ds, Restart)
	if len(r) == 0 || r[0].Node != 2 {
		t.Fatalf("restarts %+v", r)
	}
	for _, e := range r[0].Evidence {
		if e.Test != "tarzan" {
			t.Errorf("non-pattern evidence %+v", e)
		}
	}
	if !strings.Contains(r[0].Detail(), "pattern") {
		t.Errorf("detail %q", r[0].Detail())
	}
}

func TestSilentBrickRestarted(t *testing.T) {
	ds := run(t, Config{}, 4, 40, 20, map[int]fault{4: func(int, *Sample, *rand.Rand) bool { return false }}, true)
	r := actions(ds, Restart)
	if len(r) == 0 || r[0].Node != 4 || r[0].Evidence[0].Test != "silent" {
		t.Fatalf("restarts %+v", r)
	}
	// Last sample at 19 s; silence beyond 3 s is seen at 23 s.
	if r[0].At != 23*time.Second {
		t.Fatalf("restart at %v, want 23s", r[0].At)
	}
}

// TestPersistentFaultGoesOffline: restarting does not cure it; after
// RestartLimit restarts in the period the brick goes offline, once, and is
// left alone afterwards.
func TestPersistentFaultGoesOffline(t *testing.T) {
	ds := run(t, Config{}, 6, 300, 30, map[int]fault{5: slow}, true)
	if r := actions(ds, Restart); len(r) != 3 {
		t.Fatalf("%d restarts, want 3: %+v", len(r), r)
	}
	off := actions(ds, Offline)
	if len(off) != 1 || off[0].Node != 5 || off[0].Restarts != 3 {
		t.Fatalf("offline decisions %+v", off)
	}
	for _, d := range ds {
		if d.At > off[0].At && d.Node == 5 {
			t.Fatalf("decision after offline: %+v", d)
		}
		if d.Node != 5 && d.Action != Suspect {
			t.Fatalf("healthy brick acted on: %s", d.Detail())
		}
	}
}

func TestDeterministic(t *testing.T) {
	a := run(t, Config{}, 6, 200, 50, map[int]fault{2: slow}, true)
	b := run(t, Config{}, 6, 200, 50, map[int]fault{2: slow}, true)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same input, different decisions")
	}
}

func TestTooFewPeersNoComparison(t *testing.T) {
	ds := run(t, Config{}, 2, 60, 20, map[int]fault{2: slow}, true)
	if len(ds) != 0 {
		t.Fatalf("two bricks cannot be compared, got %+v", ds)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{History: 5, MinHistory: 6}, {SubstringLen: 9}, {Anomalies: 7}, {MinPeers: 1}, {MADThreshold: -1}} {
		if _, err := NewDetector(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// Reference implementations: deliberately simple, to check the real ones.

func refMedian(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	for i := range s { // selection sort
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func refFreqs(s []byte, k int) map[string]float64 {
	out := map[string]float64{}
	for l := 1; l <= k; l++ {
		if len(s) < l {
			continue
		}
		for i := 0; i+l <= len(s); i++ {
			out[string(s[i:i+l])] += 1 / float64(len(s)-l+1)
		}
	}
	return out
}

func TestMedianMatchesReference(t *testing.T) {
	f := func(xs []float64) bool {
		for _, x := range xs {
			if math.IsNaN(x) {
				return true
			}
		}
		a, b := median(xs), refMedian(xs)
		return a == b || math.IsNaN(a) && math.IsNaN(b)
	}
	if err := quick.Check(f, nil); err != nil {
		t.Fatal(err)
	}
}

func TestSubstringFreqsMatchReference(t *testing.T) {
	f := func(bits []bool, k8 uint8) bool {
		k := int(k8%6) + 1
		s := make([]byte, len(bits))
		for i, b := range bits {
			s[i] = 'a'
			if b {
				s[i] = 'b'
			}
		}
		got := substringFreqs(s, k)
		want := refFreqs(s, k)
		for j, v := range got {
			if math.Abs(v-want[substringName(j)]) > 1e-9 {
				return false
			}
		}
		return len(got) == (1<<(k+1))-2
	}
	if err := quick.Check(f, nil); err != nil {
		t.Fatal(err)
	}
	if got := substringName(0) + substringName(1) + substringName(2) + substringName(5) + substringName(6); got != "ab"+"aa"+"bb"+"aaa" {
		t.Fatalf("names %q", got)
	}
}
