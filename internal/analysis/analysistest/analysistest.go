// Package analysistest writes synthetic results directories (scenario.yaml,
// requests.csv, events.jsonl) for tests of analysis and of the packages
// that consume its output (report). Everything is deterministic: the same
// Spec gives the same files.
package analysistest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/record"
)

// Phase is one phase of a synthetic run.
type Phase struct {
	Name      string
	DurationS float64
}

// Spec describes a synthetic run. Attempts arrive evenly, Rate per second;
// Serve says what happens to the attempt scheduled at time t.
type Spec struct {
	Name    string
	Seed    uint64
	WindowS float64 // default 5
	Rate    float64 // attempts per second, default 100
	Phases  []Phase // default one phase "run" of 60 s
	// Serve returns the outcome and latency of the attempt at t; rng is the
	// run's seeded source. Default: always ok, latency 10 ms ± 5 ms.
	Serve func(t float64, rng *rand.Rand) (record.Outcome, float64)
	// Events are written to events.jsonl (none when empty).
	Events     []record.Event
	Thresholds []string
	Demerits   map[string]float64
	// ActionTime is operator.action_time in scenario.yaml (0: omitted).
	ActionTimeS float64
	// NoScenario leaves out scenario.yaml: the directory is then analysed
	// as one phase "all" with 5 s windows.
	NoScenario bool
	// Parquet writes requests.parquet (as the recorder does) instead of
	// requests.csv; Windows also writes windows.csv.
	Parquet bool
	Windows bool
	// Poisson schedules the attempts as a Poisson process of Rate (seeded
	// exponential gaps) and says arrivals: poisson; else they are even.
	Poisson bool
	// Closed writes workload.model: closed (users, no rate): the analysis
	// then judges throughput by default. The attempts are as otherwise.
	Closed bool
}

func (s *Spec) defaults() {
	if s.Name == "" {
		s.Name = "synthetic"
	}
	if s.WindowS == 0 {
		s.WindowS = 5
	}
	if s.Rate == 0 {
		s.Rate = 100
	}
	if len(s.Phases) == 0 {
		s.Phases = []Phase{{"run", 60}}
	}
	if s.Serve == nil {
		s.Serve = func(_ float64, rng *rand.Rand) (record.Outcome, float64) {
			return record.OK, 0.005 + 0.01*rng.Float64()
		}
	}
}

// LengthS is the run's length: the sum of the phase durations.
func (s Spec) LengthS() float64 {
	s.defaults()
	var t float64
	for _, p := range s.Phases {
		t += p.DurationS
	}
	return t
}

// Write writes the run described by spec into dir, which must exist.
func Write(dir string, spec Spec) error {
	spec.defaults()
	if !spec.NoScenario {
		if err := os.WriteFile(filepath.Join(dir, record.ScenarioFile), []byte(scenarioYAML(spec)), 0o644); err != nil {
			return err
		}
	}
	if err := writeRequests(dir, spec); err != nil {
		return err
	}
	if len(spec.Events) == 0 {
		return nil
	}
	ef, err := os.Create(filepath.Join(dir, record.EventsFile))
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(ef)
	for _, e := range spec.Events {
		b, _ := json.Marshal(e)
		bw.Write(append(b, '\n'))
	}
	if err := bw.Flush(); err != nil {
		ef.Close()
		return err
	}
	return ef.Close()
}

// writeRequests writes requests.csv or requests.parquet, and windows.csv
// when asked.
func writeRequests(dir string, spec Spec) (err error) {
	var write func(record.Request) error
	var closeFn func() error
	if spec.Parquet {
		pw, err := record.CreateParquet(filepath.Join(dir, record.RequestsFile))
		if err != nil {
			return err
		}
		write, closeFn = pw.Write, pw.Close
	} else {
		f, err := os.Create(filepath.Join(dir, record.RequestsCSV))
		if err != nil {
			return err
		}
		cw, err := record.NewCSVWriter(f)
		if err != nil {
			f.Close()
			return err
		}
		write = cw.Write
		closeFn = func() error {
			if err := cw.Flush(); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		}
	}
	defer func() {
		if cerr := closeFn(); err == nil {
			err = cerr
		}
	}()
	windows := record.NewWindowAggregator(spec.WindowS, 60)
	rng := rand.New(rand.NewPCG(spec.Seed, 1))
	n := int(math.Round(spec.LengthS() * spec.Rate))
	arrivals := rand.New(rand.NewPCG(spec.Seed, 2))
	t := 0.0
	for i := 0; ; i++ {
		if spec.Poisson {
			t += arrivals.ExpFloat64() / spec.Rate
			if t >= spec.LengthS() {
				break
			}
		} else if t = (float64(i) + 0.5) / spec.Rate; i >= n {
			break
		}
		o, lat := spec.Serve(t, rng)
		r := record.Request{StartS: t, LatencyS: lat, Outcome: o, Node: 1 + i%2, Client: i % 3, Bytes: 1000, Status: 200, Target: "/p/1"}
		if o != record.OK {
			r.Bytes, r.Status = 0, 0
		}
		if err := write(r); err != nil {
			return err
		}
		windows.Add(r)
	}
	if spec.Windows {
		return record.WriteWindows(filepath.Join(dir, record.WindowsFile), windows.Close(spec.LengthS()), nil)
	}
	return nil
}

// Dir writes spec into a new temporary directory and returns its path.
func Dir(t testing.TB, spec Spec) string {
	t.Helper()
	dir := t.TempDir()
	if err := Write(dir, spec); err != nil {
		t.Fatal(err)
	}
	return dir
}

func scenarioYAML(s Spec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\nseed: %d\ncluster: {system: static, nodes: 2}\n", s.Name, s.Seed)
	switch {
	case s.Closed:
		fmt.Fprintf(&b, "workload: {model: closed, users: 8, think: 0, window: %s}\n", secs(s.WindowS))
	case s.Poisson:
		fmt.Fprintf(&b, "workload: {rate: %g, arrivals: poisson, window: %s}\n", s.Rate, secs(s.WindowS))
	default:
		fmt.Fprintf(&b, "workload: {rate: %g, arrivals: constant, window: %s}\n", s.Rate, secs(s.WindowS))
	}
	b.WriteString("phases:\n")
	for _, p := range s.Phases {
		fmt.Fprintf(&b, "  - {name: %s, duration: %s}\n", p.Name, secs(p.DurationS))
	}
	if s.ActionTimeS > 0 {
		fmt.Fprintf(&b, "operator: {policy: restart-failed, detect_after: 1s, action_time: %s}\n", secs(s.ActionTimeS))
	}
	if len(s.Thresholds) > 0 {
		b.WriteString("thresholds:\n")
		for _, t := range s.Thresholds {
			fmt.Fprintf(&b, "  - %q\n", t)
		}
	}
	if len(s.Demerits) > 0 {
		b.WriteString("demerits:\n")
		for k, v := range s.Demerits {
			fmt.Fprintf(&b, "  %s: %g\n", k, v)
		}
	}
	return b.String()
}

func secs(s float64) string { return fmt.Sprintf("%gms", math.Round(s*1000)) }

// Fault returns the inject and clear events of one fault (clear omitted
// when clearS is NaN).
func Fault(kind string, node, id int, injectS, clearS float64) []record.Event {
	ev := []record.Event{{TS: injectS, Kind: "fault.inject", Node: node, Fault: kind, ID: id}}
	if !math.IsNaN(clearS) {
		ev = append(ev, record.Event{TS: clearS, Kind: "fault.clear", Node: node, Fault: kind, ID: id})
	}
	return ev
}

// OKFraction returns a Serve function: the attempt at t is ok with
// probability frac(t) (deterministic: a fraction of the attempts of every
// 1/rate interval), else a timeout at 6 s; ok latency is 10 ms ± 5 ms.
func OKFraction(frac func(t float64) float64) func(float64, *rand.Rand) (record.Outcome, float64) {
	return func(t float64, rng *rand.Rand) (record.Outcome, float64) {
		if rng.Float64() < frac(t) {
			return record.OK, 0.005 + 0.01*rng.Float64()
		}
		return record.Timeout, 6
	}
}
