// Command analysis generates large synthetic results directories for
// timing `faultbench analyze` (docs/benchmarks.md, "Analysis").
//
//	go run ./bench/analysis -rows 10000000 -o /tmp/fb-10m   # generate
//	go build -o /tmp/fbbench ./bench/analysis && /tmp/fbbench -analyze /tmp/fb-10m
//	/usr/bin/time -v faultbench analyze /tmp/fb-10m          # the same, through the CLI
//	/tmp/fbbench -digest /tmp/fb-10m                        # what two builds must agree on
//
// With -digest it prints SHA-256 digests of everything analysis.AnalyzeDetail
// computes for DIR (summary.json, the window series, every period's latency
// distribution), so that two builds can be shown to compute the same.
//
// With -analyze the command runs exactly what `faultbench analyze DIR` runs
// (analysis.Analyze then analysis.Write) in a fresh process and prints the
// elapsed time, requests per second, the process's CPU time (user and
// system: on a shared machine the steadier figure) and its peak RSS.
//
// The run is Broadwell's shape (warm-up, fault, recovery, post) at a rate
// chosen so the rows fill 300 s: a log-normal latency body, timeouts and
// connection aborts during a 90 s app-crash on node 2, written with
// record.CreateParquet exactly as the recorder writes it.
package main

import (
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/analysis"

	"github.com/faultbench/faultbench/internal/record"
)

func main() {
	rows := flag.Int("rows", 1_000_000, "requests to generate")
	out := flag.String("o", "", "results directory to create (required)")
	seed := flag.Uint64("seed", 1, "random seed")
	analyze := flag.String("analyze", "", "analyse `DIR` and report time and peak memory instead of generating")
	digest := flag.String("digest", "", "print digests of the analysis of `DIR` instead of generating")
	flag.Parse()
	if *digest != "" {
		if err := printDigests(*digest); err != nil {
			fmt.Fprintln(os.Stderr, "analysis:", err)
			os.Exit(1)
		}
		return
	}
	if *analyze != "" {
		if err := timeAnalyze(*analyze); err != nil {
			fmt.Fprintln(os.Stderr, "analysis:", err)
			os.Exit(1)
		}
		return
	}
	if *out == "" || *rows <= 0 {
		fmt.Fprintln(os.Stderr, "usage: analysis -rows N -o DIR")
		os.Exit(2)
	}
	if err := generate(*out, *rows, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "analysis:", err)
		os.Exit(1)
	}
}

func timeAnalyze(dir string) error {
	start := time.Now()
	sum, err := analysis.Analyze(dir, analysis.Options{Complete: true})
	if err != nil {
		return err
	}
	if err := analysis.Write(dir, sum); err != nil {
		return err
	}
	elapsed := time.Since(start)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	n := sum.Run.Attempts
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	fmt.Printf("rows %d  elapsed %.2fs  %.2fM requests/s  CPU %.2fs (%.0f ns a request)  peak RSS %.0f MiB  (GOMAXPROCS %d)\n",
		n, elapsed.Seconds(), float64(n)/elapsed.Seconds()/1e6, cpu.Seconds(), float64(cpu.Nanoseconds())/float64(n),
		float64(ru.Maxrss)/1024, runtime.GOMAXPROCS(0))
	return nil
}

// printDigests prints a SHA-256 digest of each part of dir's analysis:
// summary.json as analyze writes it, the windows (every field, floats in
// full precision), and the CDF and box of the run's, every phase's and the
// failure interval's latency distribution.
func printDigests(dir string) error {
	res, err := analysis.AnalyzeDetail(dir, analysis.Options{Complete: true})
	if err != nil {
		return err
	}
	b, err := analysis.Marshal(res.Summary)
	if err != nil {
		return err
	}
	show := func(name string, v any) {
		h := sha256.New()
		if raw, ok := v.([]byte); ok {
			h.Write(raw)
		} else {
			fmt.Fprintf(h, "%+v", v)
		}
		fmt.Printf("%-28s %x\n", name, h.Sum(nil))
	}
	show("summary.json", b)
	show(fmt.Sprintf("windows (%d)", len(res.Windows)), res.Windows)
	show("overall CDF, box", []any{res.Overall.CDF(), res.Overall.Box()})
	for _, name := range res.Summary.PhaseOrder {
		show("phase "+name+" CDF, box", []any{res.Phases[name].CDF(), res.Phases[name].Box()})
	}
	if res.Failure != nil {
		show("failure CDF, box", []any{res.Failure.CDF(), res.Failure.Box()})
	}
	return nil
}

const lengthS = 300.0

func generate(dir string, rows int, seed uint64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rate := float64(rows) / lengthS
	scen := fmt.Sprintf(`name: bench-analysis
seed: %d
cluster: {system: static, nodes: 4}
workload: {rate: %g, arrivals: poisson, clients: 4, window: 5s}
phases: [{name: warmup, duration: 60s}, {name: fault, duration: 90s}, {name: recovery, duration: 60s}, {name: post, duration: 90s}]
faults: [{type: app-crash, node: 2, at: 60s, duration: 90s}]
thresholds: ["p99 < 8s", "goodput > 0.5"]
`, seed, math.Round(rate))
	if err := os.WriteFile(filepath.Join(dir, record.ScenarioFile), []byte(scen), 0o644); err != nil {
		return err
	}
	events := []record.Event{{TS: 60, Kind: "fault.inject", Node: 2, Fault: "app-crash", ID: 1},
		{TS: 75, Kind: "system.membership", Detail: "node 2 left"},
		{TS: 150, Kind: "fault.clear", Node: 2, Fault: "app-crash", ID: 1}}
	ef, err := os.Create(filepath.Join(dir, record.EventsFile))
	if err != nil {
		return err
	}
	for _, e := range events {
		b, _ := json.Marshal(e)
		ef.Write(append(b, '\n'))
	}
	if err := ef.Close(); err != nil {
		return err
	}
	pw, err := record.CreateParquet(filepath.Join(dir, record.RequestsFile))
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, 2))
	targets := make([]string, 1000)
	for i := range targets {
		targets[i] = fmt.Sprintf("/p/%d", i)
	}
	t := 0.0
	for i := 0; i < rows; i++ {
		t += rng.ExpFloat64() / rate // Poisson arrivals
		r := record.Request{StartS: t, Outcome: record.OK, Node: 1 + rng.IntN(4), Client: rng.IntN(4), Bytes: 26624, Status: 200,
			Target: targets[rng.IntN(len(targets))]}
		r.LatencyS = math.Exp(rng.NormFloat64()*0.8 - 5.5)
		if t >= 60 && t < 165 && r.Node == 2 {
			switch u := rng.Float64(); {
			case u < 0.6:
				r.Outcome, r.LatencyS, r.Status, r.Bytes = record.ConnAbort, 2, 0, 0
			case u < 0.8:
				r.Outcome, r.LatencyS, r.Status, r.Bytes = record.Timeout, 8, 0, 0
			default:
				r.Outcome, r.LatencyS, r.Status, r.Bytes = record.ConnError, 0.0005, 0, 0
			}
		}
		if err := pw.Write(r); err != nil {
			pw.Close()
			return err
		}
	}
	return pw.Close()
}
