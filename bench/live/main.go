// Command live measures what following a run live costs the load
// generator: the same run, side by side, with nothing following it (off)
// and with everything --metrics, --ui and the guard hook into (on: the
// live.Hub as the recorder's Follower and the generator's FlightObserver,
// its HTTP endpoint, and a scraper fetching /metrics every -scrape and
// parsing it with the official text-format parser).
//
//	go run ./bench/live                  # 3 repetitions of 5 s at 20,000/s
//	go run ./bench/live -reps 1 -duration 2s -rate 2000
//
// Two measurements, each alternating off and on so the machine's drift
// hits both alike; every figure is the median over -reps:
//
//  1. generator: faultbench's open-loop generator with its "null" driver
//     (no network: the generator, the recorder and the live side are all
//     that run) at -rate for -duration: attempts recorded per second and
//     the send lag p99 (lag is what a slowed generator shows first);
//  2. ceiling: -clients goroutines calling Recorder.Record back to back:
//     the most attempts per second the recorder takes, with and without
//     the Hub's per-attempt hook, while the scraper runs.
//
// The ratio on/off is the cost (1.000 = nothing).
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/faultbench/faultbench/internal/live"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/workload"
)

func main() {
	rate := flag.Float64("rate", 20000, "offered attempts per second in the generator measurement")
	duration := flag.Duration("duration", 5*time.Second, "length of each measurement")
	reps := flag.Int("reps", 3, "repetitions (medians are reported)")
	clients := flag.Int("clients", 4, "client emulators / recording goroutines")
	scrape := flag.Duration("scrape", time.Second, "scrape interval of the live side")
	flag.Parse()
	if err := run(*rate, *duration, *reps, *clients, *scrape); err != nil {
		fmt.Fprintln(os.Stderr, "live:", err)
		os.Exit(1)
	}
}

type genResult struct{ perS, lagP99 float64 }

func run(rate float64, d time.Duration, reps, clients int, every time.Duration) error {
	tmp, err := os.MkdirTemp("", "bench-live-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	modes := []string{"off", "on"}
	gen := make([][]genResult, 2)
	ceil := make([][]float64, 2)
	scrapes := make([]int64, 2)
	for rep := 0; rep < reps; rep++ {
		for m := range modes {
			on := m == 1
			r, n, err := generator(filepath.Join(tmp, fmt.Sprintf("gen-%d-%d", rep, m)), on, rate, d, clients, every)
			if err != nil {
				return err
			}
			gen[m] = append(gen[m], r)
			scrapes[m] += n
			c, n, err := ceiling(filepath.Join(tmp, fmt.Sprintf("ceil-%d-%d", rep, m)), on, d, clients, every)
			if err != nil {
				return err
			}
			ceil[m] = append(ceil[m], c)
			scrapes[m] += n
		}
	}
	med := func(xs []float64) float64 { s := slices.Clone(xs); slices.Sort(s); return s[len(s)/2] }
	fmt.Printf("live: %d rep(s) of %s, %d clients, generator offered %.0f/s (null driver), scrape every %s\n\n", reps, d, clients, rate, every)
	fmt.Printf("%-5s %14s %12s %16s %8s\n", "live", "recorded/s", "lag p99", "ceiling rows/s", "scrapes")
	var perS, lag, ceilS [2]float64
	for m, name := range modes {
		var ps, ls []float64
		for _, r := range gen[m] {
			ps, ls = append(ps, r.perS), append(ls, r.lagP99)
		}
		perS[m], lag[m], ceilS[m] = med(ps), med(ls), med(ceil[m])
		fmt.Printf("%-5s %14.0f %12s %16.0f %8d\n", name, perS[m], time.Duration(lag[m]*1e9).Round(time.Microsecond), ceilS[m], scrapes[m])
	}
	fmt.Printf("\nratio on/off: generator rate %.3f, send lag p99 %.2f, recorder ceiling %.3f\n", perS[1]/perS[0], lag[1]/lag[0], ceilS[1]/ceilS[0])
	return nil
}

// follower is the live side of one measurement: the hub, its endpoint and
// a scraper. Off, all of it is nil.
type follower struct {
	hub     *live.Hub
	srv     *live.Server
	stop    chan struct{}
	done    chan struct{}
	scrapes atomic.Int64
}

func startFollower(on bool, clients int, length time.Duration, every time.Duration) (*follower, error) {
	f := &follower{}
	if !on {
		return f, nil
	}
	f.hub = live.New(live.Config{Name: "bench", Nodes: 1, Clients: clients, WindowS: 1, LengthS: length.Seconds(),
		Phases: []live.Phase{{Name: "all", StartS: 0, EndS: length.Seconds()}}})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f.srv = f.hub.Serve(l)
	f.stop, f.done = make(chan struct{}), make(chan struct{})
	url := "http://" + l.Addr().String() + "/metrics"
	go func() {
		defer close(f.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-f.stop:
				return
			case <-t.C:
			}
			if resp, err := http.Get(url); err == nil {
				p := expfmt.NewTextParser(model.UTF8Validation)
				if _, err := p.TextToMetricFamilies(resp.Body); err == nil {
					f.scrapes.Add(1)
				}
				resp.Body.Close()
			}
		}
	}()
	return f, nil
}

func (f *follower) close() int64 {
	if f.hub == nil {
		return 0
	}
	close(f.stop)
	<-f.done
	_ = f.srv.Close()
	return f.scrapes.Load()
}

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

func newRecorder(dir string) (*record.Recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return record.NewRecorderWith(dir, record.Options{WindowS: 1, HorizonS: 10})
}

func generator(dir string, on bool, rate float64, d time.Duration, clients int, every time.Duration) (genResult, int64, error) {
	rec, err := newRecorder(dir)
	if err != nil {
		return genResult{}, 0, err
	}
	f, err := startFollower(on, clients, d, every)
	if err != nil {
		return genResult{}, 0, err
	}
	sink := &lagSink{rec: rec, lag: hdrhistogram.New(1, 60_000_000, 3)}
	cfg := workload.Config{Driver: "null", Rate: rate, Clients: clients, Trace: "zipf:1000:1.0", Seed: 1,
		Targets: []workload.Target{{Node: 1, Addr: "127.0.0.1:9"}}}
	g, err := workload.New(context.Background(), cfg, sink)
	if err != nil {
		return genResult{}, 0, err
	}
	if f.hub != nil {
		rec.Follow(f.hub.Follower())
		g.ObserveFlight(f.hub)
	}
	if err := g.Run(context.Background(), time.Now(), d); err != nil {
		return genResult{}, 0, err
	}
	total := rec.Snapshot().Total
	if _, _, err := rec.Close(d.Seconds()); err != nil {
		return genResult{}, 0, err
	}
	n := f.close()
	return genResult{perS: float64(total) / d.Seconds(), lagP99: float64(sink.lag.ValueAtQuantile(99)) / 1e6}, n, nil
}

func ceiling(dir string, on bool, d time.Duration, clients int, every time.Duration) (float64, int64, error) {
	rec, err := newRecorder(dir)
	if err != nil {
		return 0, 0, err
	}
	f, err := startFollower(on, clients, d, every)
	if err != nil {
		return 0, 0, err
	}
	if f.hub != nil {
		rec.Follow(f.hub.Follower())
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
		return 0, 0, err
	}
	return float64(n.Load()) / elapsed, f.close(), nil
}
