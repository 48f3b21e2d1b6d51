// Command recording measures what crash-safe recording costs the load
// generator: the same run, side by side, recorded the old way (one
// requests.parquet whose footer is written only at the end, lost entirely
// if the controller is killed) and the new way (Parquet segments sealed
// every 2 s, windows.csv rewritten as windows settle, merged into
// requests.parquet at the end).
//
//	go run ./bench/recording                 # 3 repetitions, about a minute
//	go run ./bench/recording -reps 1 -duration 2s
//
// Two measurements, each alternating old and new so the machine's drift
// hits both alike; every figure is the median over -reps:
//
//  1. generator: faultbench's open-loop generator with its "null" driver
//     (no network: the generator and the recorder are all that run) at
//     -rate for -duration; reports attempts recorded per second, the send
//     lag (handed-to-driver minus scheduled time) p99 and max, and the time
//     Close takes (the merge, for the new way);
//  2. ceiling: -clients goroutines calling Recorder.Record back to back for
//     -duration: the most requests per second either recorder takes.
//
// The ratio new/old is what crash safety costs (1.00 = nothing).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/workload"
)

func main() {
	rate := flag.Float64("rate", 100000, "offered attempts per second in the generator measurement")
	duration := flag.Duration("duration", 5*time.Second, "length of each measurement")
	reps := flag.Int("reps", 3, "repetitions (medians are reported)")
	clients := flag.Int("clients", 4, "client emulators / recording goroutines")
	flag.Parse()
	if err := run(*rate, *duration, *reps, *clients); err != nil {
		fmt.Fprintln(os.Stderr, "recording:", err)
		os.Exit(1)
	}
}

type genResult struct {
	perS, lagP99, lagMax, closeS float64
}

func run(rate float64, duration time.Duration, reps, clients int) error {
	tmp, err := os.MkdirTemp("", "bench-recording-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	modes := []struct {
		name   string
		single bool
	}{{"old (one file)", true}, {"new (segments)", false}}
	gen := make([][]genResult, len(modes))
	ceil := make([][]float64, len(modes))
	for rep := 0; rep < reps; rep++ {
		for m, mode := range modes {
			dir := filepath.Join(tmp, fmt.Sprintf("gen-%d-%d", rep, m))
			r, err := generator(dir, mode.single, rate, duration, clients)
			if err != nil {
				return err
			}
			gen[m] = append(gen[m], r)
			dir = filepath.Join(tmp, fmt.Sprintf("ceil-%d-%d", rep, m))
			c, err := ceiling(dir, mode.single, duration, clients)
			if err != nil {
				return err
			}
			ceil[m] = append(ceil[m], c)
		}
	}
	fmt.Printf("recording: %d rep(s) of %s, %d clients, generator offered %.0f/s (null driver)\n\n", reps, duration, clients, rate)
	fmt.Printf("%-16s %14s %12s %12s %10s %16s\n", "recorder", "recorded/s", "lag p99", "lag max", "close", "ceiling rows/s")
	med := func(xs []float64) float64 { s := slices.Clone(xs); slices.Sort(s); return s[len(s)/2] }
	pick := func(rs []genResult, f func(genResult) float64) float64 {
		var xs []float64
		for _, r := range rs {
			xs = append(xs, f(r))
		}
		return med(xs)
	}
	var perS, ceilS [2]float64
	for m, mode := range modes {
		perS[m] = pick(gen[m], func(r genResult) float64 { return r.perS })
		ceilS[m] = med(ceil[m])
		fmt.Printf("%-16s %14.0f %12s %12s %10s %16.0f\n", mode.name, perS[m],
			secs(pick(gen[m], func(r genResult) float64 { return r.lagP99 })),
			secs(pick(gen[m], func(r genResult) float64 { return r.lagMax })),
			secs(pick(gen[m], func(r genResult) float64 { return r.closeS })), ceilS[m])
	}
	fmt.Printf("\nratio new/old: generator rate %.3f, recorder ceiling %.3f\n", perS[1]/perS[0], ceilS[1]/ceilS[0])
	return nil
}

func secs(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Microsecond).String()
}

// lagSink records into a Recorder and observes send lag.
type lagSink struct {
	rec *record.Recorder
	mu  sync.Mutex
	lag *hdrhistogram.Histogram
}

func (s *lagSink) Record(r record.Request) { s.rec.Record(r) }

func (s *lagSink) Sent(_ int, lag time.Duration) {
	s.mu.Lock()
	_ = s.lag.RecordValue(max(lag.Microseconds(), 1))
	s.mu.Unlock()
}

func newRecorder(dir string, single bool) (*record.Recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return record.NewRecorderWith(dir, record.Options{WindowS: 1, HorizonS: 10, SingleFile: single})
}

func generator(dir string, single bool, rate float64, d time.Duration, clients int) (genResult, error) {
	rec, err := newRecorder(dir, single)
	if err != nil {
		return genResult{}, err
	}
	sink := &lagSink{rec: rec, lag: hdrhistogram.New(1, 60_000_000, 3)}
	cfg := workload.Config{Driver: "null", Rate: rate, Clients: clients, Trace: "zipf:1000:1.0", Seed: 1,
		Targets: []workload.Target{{Node: 1, Addr: "127.0.0.1:9"}}}
	if err := workload.Run(context.Background(), cfg, time.Now(), d, sink); err != nil {
		return genResult{}, err
	}
	total := rec.Snapshot().Total
	t := time.Now()
	if _, _, err := rec.Close(d.Seconds()); err != nil {
		return genResult{}, err
	}
	closeS := time.Since(t).Seconds()
	return genResult{
		perS:   float64(total) / d.Seconds(),
		lagP99: float64(sink.lag.ValueAtQuantile(99)) / 1e6,
		lagMax: float64(sink.lag.Max()) / 1e6,
		closeS: closeS,
	}, nil
}

func ceiling(dir string, single bool, d time.Duration, clients int) (float64, error) {
	rec, err := newRecorder(dir, single)
	if err != nil {
		return 0, err
	}
	var n atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for c := range clients {
		wg.Go(func() {
			r := record.Request{Outcome: record.OK, Node: 1, Client: c, Bytes: 2048, Status: 200, Target: "/p/1"}
			for i := 0; ; i++ {
				if i%1024 == 0 && time.Now().After(deadline) {
					return
				}
				r.StartS = time.Since(start).Seconds()
				r.LatencyS = 0.001 + float64(i%97)*1e-5
				rec.Record(r)
				n.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	if _, _, err := rec.Close(elapsed); err != nil {
		return 0, err
	}
	return float64(n.Load()) / elapsed, nil
}
