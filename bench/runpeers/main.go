// Command runpeers measures `faultbench run` — the whole pipeline a user
// runs: scheduler, driver, recorder, segments, windows — side by side with
// wrk and vegeta against the same nginx, in one sitting (docs/benchmarks.md,
// "faultbench run beside wrk and vegeta").
//
//	go run ./bench/runpeers                         # both connection modes, 3 repetitions
//	go run ./bench/runpeers -reps 1 -duration 4s    # a quick look
//	go run ./bench/runpeers -profile /tmp/prof      # pprof of faultbench run at 30k/s keep-alive, 10k/s new connections
//
// The server is Debian's nginx-light, one worker, master_process off,
// serving one 26 KiB page; it is pinned to -srv-cpu and every generator to
// -gen-cpu with taskset, so a generator's CPU cannot starve the server it
// measures (the pinning is printed with the results). faultbench runs the
// nginx itself, as a user would, through `system: command`; the peers get
// the same configuration on another port.
//
// For each mode (keep-alive with -conns connections; a new connection per
// request with "Connection: close") it measures:
//
//   - wrk -t1 -c CONNS: its closed-loop rate, the ceiling of the server;
//   - vegeta attack (open loop, every result written to a file, like
//     faultbench), wrk2 -R (wrk's open-loop fork, in C, when -wrk2 finds
//     it) and faultbench run: the highest rate sustained, found by
//     doubling and then bisecting, where sustained means every arrival
//     recorded (none refused by the generator, none cut short), at least
//     99% of them ok, and an ok rate at least 97% of the offered one;
//   - each tool's CPU per request: CPU time of the generator's process
//     over the load (for faultbench only the load phase, sampled from
//     /proc, so cluster start-up, analysis and report are not counted),
//     divided by the requests it completed.
//
// With -pacing-tick (1ms by default) faultbench is also measured with
// workload.pacing_tick set, every search and same-rate run beside the
// exact-paced one: wrk2 paces at 1 ms, so that is the comparison at equal
// pacing resolution (docs/benchmarks.md, "Pacing, and the run's own
// stalls").
//
// Then, since a generator's CPU per request falls as the server it drives
// gets busier (a closed loop at saturation never waits for an event; an
// open loop below it wakes for every arrival and every answer), every
// open-loop tool runs -reps times at one rate per mode (-same-keepalive,
// -same-new), alternately, and their CPU per request is compared there.
// With -syscalls each of them then runs -reps times more at that rate with
// its system calls counted by perf stat (syscalls.go), in runs of their
// own since the tracepoints cost each call a little: a table of system
// calls a request by name.
//
// Last, faultbench alone runs -reps times at -lag-rate with keep-alive, and
// its send-lag p99 is reported over the whole run and over its measured
// phase alone, after a -lag-warmup phase at the same rate: the first tens
// of milliseconds open every connection while arrivals queue behind them,
// which a user's scenario puts in its warm-up (wrk2 likewise leaves its
// first 10 s out of its statistics).
//
// Every figure is the median of -reps searches; the machine is shared, so
// the ratios, taken in the same sitting, are what to quote.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/benchcpu"
)

type options struct {
	duration       time.Duration
	reps           int
	modes          []string
	conns          int
	clients        int
	pageBytes      int
	start          float64
	genCPU, srvCPU string
	faultbench     string
	vegeta         string
	wrk            string
	wrk2           string // "" when absent: its searches are skipped
	nginx          string
	work           string
	profileDir     string
	profileTicked  bool // -profile-ticked
	profileRates   map[string]float64
	sameRates      map[string]float64 // by mode; 0: no same-rate runs
	lagRate        float64
	// lagWarmup (-lag-warmup) is a phase at the lag run's rate before its
	// measured one: the lag is reported over the whole run and over the
	// measured phase alone. warm is the one a faultbench trial's scenario
	// gets (0: one phase).
	lagWarmup, warm time.Duration
	// syscalls (-syscalls) asks for the same-rate runs' system calls,
	// counted in runs of their own; probe is set on the copy of the
	// options those runs use, so that perf's tracepoints (which cost each
	// system call a little) are on in no run whose CPU is reported.
	syscalls, probe bool
	compare         string
	fixedRates      map[string]float64
	// pacingTick (-pacing-tick) adds faultbench with workload.pacing_tick
	// set to it beside the default, exact pacing; tick is the one a
	// faultbench trial's scenario gets.
	pacingTick, tick time.Duration
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "runpeers:", err)
		os.Exit(1)
	}
}

func run() error {
	var o options
	var modes, profKA, profNew, sameKA, sameNew string
	flag.DurationVar(&o.duration, "duration", 6*time.Second, "length of each measured run (faultbench's one phase)")
	flag.IntVar(&o.reps, "reps", 3, "repetitions of each search (medians reported)")
	flag.StringVar(&modes, "modes", "keepalive,new", "connection modes: keepalive, new")
	flag.IntVar(&o.conns, "conns", 32, "keep-alive connections of every tool (wrk -c, vegeta -max-connections, faultbench max_conns over its clients)")
	flag.IntVar(&o.clients, "clients", 2, "faultbench's client emulators")
	flag.IntVar(&o.pageBytes, "page-bytes", 26*1024, "size of the page served")
	flag.Float64Var(&o.start, "start", 4000, "first rate of each search, requests/s")
	flag.StringVar(&o.genCPU, "gen-cpu", "0", "CPU list every generator is pinned to (taskset -c)")
	flag.StringVar(&o.srvCPU, "srv-cpu", "1", "CPU list nginx is pinned to")
	flag.StringVar(&o.faultbench, "faultbench", "", "faultbench binary (default: built from this repository)")
	flag.StringVar(&o.vegeta, "vegeta", "", "vegeta binary (default: vegeta on PATH, else go install github.com/tsenart/vegeta/v12@v12.13.0)")
	flag.StringVar(&o.wrk, "wrk", "wrk", "wrk binary")
	flag.StringVar(&o.wrk2, "wrk2", defaultWrk2, "wrk2 binary, the open-loop wrk (built from github.com/giltene/wrk2; skipped when not found)")
	flag.StringVar(&sameKA, "same-keepalive", "16000", "rate at which every open-loop tool runs -reps times with keep-alive, for CPU per request at one rate (0: skip)")
	flag.StringVar(&sameNew, "same-new", "6000", "the same with new connections (0: skip)")
	flag.StringVar(&o.nginx, "nginx", "/usr/sbin/nginx", "nginx binary")
	flag.StringVar(&o.profileDir, "profile", "", "only profile: run faultbench once per mode with --cpuprofile/--memprofile into this directory")
	flag.StringVar(&profKA, "profile-keepalive", "30000", "rate profiled with keep-alive")
	flag.StringVar(&profNew, "profile-new", "10000", "rate profiled with new connections")
	flag.BoolVar(&o.profileTicked, "profile-ticked", false, "-profile and -compare: pace faultbench at -pacing-tick instead of exactly")
	flag.Float64Var(&o.lagRate, "lag-rate", 20000, "rate of the keep-alive send-lag run (0: skip it)")
	flag.DurationVar(&o.lagWarmup, "lag-warmup", time.Second, "a phase at -lag-rate before the send-lag run's measured one; its lag is reported with and without it (0: none)")
	flag.DurationVar(&o.pacingTick, "pacing-tick", time.Millisecond, "also run faultbench with workload.pacing_tick this long (wrk2 paces at 1ms; 0: only exact pacing)")
	flag.BoolVar(&o.syscalls, "syscalls", false, "after the same-rate runs, run each open-loop tool -reps times more at that rate and count its system calls a request, with perf stat (needs perf, and root or perf_event_paranoid ≤ 1)")
	flag.StringVar(&o.compare, "compare", "", "only compare: run this other faultbench binary and -faultbench alternately at the -profile-* rates, -reps times, and report each one's CPU per request and send-lag p99")
	flag.Parse()
	for _, m := range strings.Split(modes, ",") {
		if m != "keepalive" && m != "new" {
			return fmt.Errorf("-modes: unknown mode %q (keepalive, new)", m)
		}
		o.modes = append(o.modes, m)
	}
	o.profileRates = map[string]float64{}
	for mode, v := range map[string]string{"keepalive": profKA, "new": profNew} {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r <= 0 {
			return fmt.Errorf("-profile-%s: %q is not a rate", mode, v)
		}
		o.profileRates[mode] = r
	}
	o.sameRates = map[string]float64{}
	for mode, v := range map[string]string{"keepalive": sameKA, "new": sameNew} {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r < 0 {
			return fmt.Errorf("-same-%s: %q is not a rate", mode, v)
		}
		o.sameRates[mode] = r
	}
	if o.profileTicked {
		if o.profileDir == "" && o.compare == "" {
			return errors.New("-profile-ticked paces the -profile and -compare runs: give one of them")
		}
		o = o.ticked()
	}
	if o.conns < o.clients || o.conns%o.clients != 0 {
		return fmt.Errorf("-conns %d must be a multiple of -clients %d (faultbench's max_conns is per client)", o.conns, o.clients)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	work, err := os.MkdirTemp("", "faultbench-runpeers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	os.Chmod(work, 0o755) // nginx workers may run as another user when we are root
	o.work = work
	if err := o.resolveBinaries(ctx); err != nil {
		return err
	}
	if err := writeSite(work, o.pageBytes); err != nil {
		return err
	}

	fmt.Printf("# runpeers: %s, %d cores, load average %s\n", time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), loadAverage())
	fmt.Printf("# nginx 1 worker (master_process off) pinned to CPU %s, one %d-byte page; every generator pinned to CPU %s\n", o.srvCPU, o.pageBytes, o.genCPU)
	fmt.Printf("# runs of %v, %d keep-alive connections, faultbench %d clients, median of %d\n", o.duration, o.conns, o.clients, o.reps)
	if o.wrk2 == "" {
		fmt.Printf("# wrk2 not found: its searches are skipped (git clone https://github.com/giltene/wrk2 && make -C wrk2, then -wrk2 wrk2/wrk)\n")
	}
	fmt.Println()

	if o.profileDir != "" {
		return o.profile(ctx)
	}
	if o.compare != "" {
		return o.compareBinaries(ctx)
	}

	peer, err := startNginx(o, work)
	if err != nil {
		return err
	}
	defer peer.stop()

	results := map[string]*modeResult{}
	for rep := range o.reps {
		for _, mode := range o.modes {
			if mode == "keepalive" {
				waitTimeWait(ctx)
			}
			res := results[mode]
			if res == nil {
				res = &modeResult{}
				results[mode] = res
			}
			w, err := o.wrkTrial(ctx, peer.addr, mode)
			if err != nil {
				return err
			}
			res.wrk = append(res.wrk, w)
			fmt.Fprintf(os.Stderr, "rep %d %s: wrk %.0f/s, %.1f µs/req\n", rep+1, mode, w.rate, w.cpuPerReq*1e6)
			v, err := search(ctx, "vegeta "+mode, o.start, func(rate float64) (trial, error) { return o.vegetaTrial(ctx, peer.addr, mode, rate) })
			if err != nil {
				return err
			}
			res.vegeta = append(res.vegeta, v)
			if o.wrk2 != "" {
				w2, err := search(ctx, "wrk2 "+mode, o.start, func(rate float64) (trial, error) { return o.wrk2Trial(ctx, peer.addr, mode, rate) })
				if err != nil {
					return err
				}
				res.wrk2 = append(res.wrk2, w2)
			}
			f, err := search(ctx, "faultbench "+mode, o.start, func(rate float64) (trial, error) { return o.faultbenchTrial(ctx, mode, rate, nil) })
			if err != nil {
				return err
			}
			res.faultbench = append(res.faultbench, f)
			if o.pacingTick > 0 {
				ot := o.ticked()
				f, err := search(ctx, "faultbench "+ot.tickName()+" "+mode, o.start, func(rate float64) (trial, error) { return ot.faultbenchTrial(ctx, mode, rate, nil) })
				if err != nil {
					return err
				}
				res.faultbenchTick = append(res.faultbenchTick, f)
			}
		}
	}
	printTable(o, results)
	printTickTable(o, results)
	if err := o.sameRate(ctx, peer.addr); err != nil {
		return err
	}

	if o.lagRate > 0 {
		runs := []options{o}
		if o.pacingTick > 0 {
			runs = append(runs, o.ticked())
		}
		lags, steady := make([][]float64, len(runs)), make([][]float64, len(runs))
		waitTimeWait(ctx) // the same-rate runs ended with new connections
		for range o.reps {
			for i, ot := range runs {
				ot.warm = o.lagWarmup
				t, err := ot.faultbenchTrial(ctx, "keepalive", o.lagRate, nil)
				if err != nil {
					return err
				}
				lags[i] = append(lags[i], t.lagP99)
				steady[i] = append(steady[i], t.lagPhaseP99)
			}
		}
		fmt.Println()
		for i, ot := range runs {
			fmt.Printf("faultbench run send lag p99 at %.0f/s keep-alive, %s: median %s (runs: %s)\n", o.lagRate, ot.tickName(), micros(median(lags[i])), joinMicros(lags[i]))
			if o.lagWarmup > 0 {
				fmt.Printf("  the same runs after their first %s (its measured phase): median %s (runs: %s)\n", o.lagWarmup, micros(median(steady[i])), joinMicros(steady[i]))
			}
		}
	}
	return nil
}

// trial is one measured run of one tool at one rate.
type trial struct {
	rate      float64 // offered (open loop) or achieved (wrk) requests/s
	okRate    float64 // ok answers per second
	requests  int64   // requests completed
	cpuPerReq float64 // seconds of generator CPU per completed request; NaN when it could not be read
	lagP99    float64 // faultbench only: send lag p99, seconds
	// lagPhaseP99 is the send lag p99 of the measured phase alone (the
	// same as lagP99 when the run has no warm-up phase).
	lagPhaseP99 float64
	// syscalls are the system calls a second by name (syscalls.go), when
	// -syscalls counted them.
	syscalls map[string]float64
	pass     bool
	why      string // why it did not pass
}

type modeResult struct{ wrk, vegeta, wrk2, faultbench, faultbenchTick []trial }

// ticked is o with its faultbench trials paced at -pacing-tick.
func (o options) ticked() options {
	o.tick = o.pacingTick
	return o
}

// tickName names a faultbench trial's pacing.
func (o options) tickName() string {
	if o.tick == 0 {
		return "exact pacing"
	}
	return "pacing_tick " + o.tick.String()
}

// search finds the highest rate at which try passes: doubling from start,
// then bisecting to within 3%, or halving when start already fails.
// Bounded: at most 24 trials.
func search(ctx context.Context, name string, start float64, try func(float64) (trial, error)) (trial, error) {
	var best trial
	lo, hi := 0.0, 0.0
	rate := start
	for range 24 {
		if ctx.Err() != nil {
			return best, ctx.Err()
		}
		t, err := try(rate)
		if err != nil {
			return best, err
		}
		fmt.Fprintf(os.Stderr, "  %s %.0f/s: %s\n", name, rate, verdict(t))
		if t.pass {
			lo, best = rate, t
		} else {
			hi = rate
		}
		switch {
		case hi == 0:
			rate *= 2
		case lo == 0:
			rate /= 2
			if rate < 50 {
				return best, nil
			}
		case (hi-lo)/lo < 0.03:
			return best, nil
		default:
			rate = roundRate((lo + hi) / 2)
		}
	}
	return best, nil
}

func roundRate(r float64) float64 { return float64(int(r/50+0.5)) * 50 }

func verdict(t trial) string {
	cpu := fmt.Sprintf("%.1f µs CPU/req", t.cpuPerReq*1e6)
	if math.IsNaN(t.cpuPerReq) {
		// The sampler has no reading at the run's end: an overloaded run
		// whose phase ran past the samples. Not 0, which a median would take.
		cpu = "CPU not read"
	}
	s := fmt.Sprintf("ok %.0f/s, %s", t.okRate, cpu)
	if !t.pass {
		s += " — not sustained: " + t.why
	}
	return s
}

// wrkTrial runs wrk -t1 for the run's length.
func (o options) wrkTrial(ctx context.Context, addr, mode string) (trial, error) {
	w, err := o.runWrk(ctx, "wrk", o.wrk, addr, mode)
	if err != nil {
		return trial{}, err
	}
	if w.rate == 0 {
		return trial{}, fmt.Errorf("wrk printed no rate")
	}
	t := trial{rate: w.rate, okRate: w.rate, requests: w.requests, cpuPerReq: w.cpu / float64(w.requests), why: w.errLine}
	t.pass = t.why == ""
	return t, nil
}

// wrkRun is what wrk or wrk2 printed about one run, and the CPU it took.
type wrkRun struct {
	rate     float64 // its Requests/sec
	requests int64
	errs     int64  // non-2xx answers and socket errors
	errLine  string // the last line that counted some, "" when none did
	cpu      float64
	syscalls map[string]float64 // with -syscalls
}

// runWrk runs wrk or wrk2 (bin, called name in errors) -t1 for the run's
// length, with extra arguments, and reads its summary.
func (o options) runWrk(ctx context.Context, name, bin, addr, mode string, extra ...string) (wrkRun, error) {
	args := append([]string{"-c", o.genCPU, bin, "-t1", "-c", strconv.Itoa(o.conns), "-d", fmt.Sprintf("%.0fs", o.duration.Seconds())}, extra...)
	if mode == "new" {
		args = append(args, "-H", "Connection: close")
	}
	args = append(args, "http://"+addr+"/p.html")
	cmd := exec.CommandContext(ctx, "taskset", args...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		return wrkRun{}, fmt.Errorf("%s: %w", name, err)
	}
	syscalls, err := o.waitCounted(ctx, cmd, name, time.Second) // after the connects
	out := buf.Bytes()
	if err != nil {
		return wrkRun{}, fmt.Errorf("%s: %w\n%s", name, err, out)
	}
	w := wrkRun{syscalls: syscalls}
	for line := range strings.Lines(string(out)) {
		f, trimmed := strings.Fields(line), strings.TrimSpace(line)
		switch {
		case len(f) >= 2 && f[0] == "Requests/sec:":
			w.rate, _ = strconv.ParseFloat(f[1], 64)
		case len(f) >= 3 && f[1] == "requests" && strings.HasPrefix(f[2], "in"):
			w.requests, _ = strconv.ParseInt(f[0], 10, 64)
		case strings.HasPrefix(trimmed, "Non-2xx"):
			n, _ := strconv.ParseInt(f[len(f)-1], 10, 64)
			w.errs += n
			w.errLine = trimmed
		case strings.HasPrefix(trimmed, "Socket errors:"):
			// Socket errors: connect 0, read 0, write 0, timeout 0
			for i := 2; i+1 < len(f); i += 2 {
				n, _ := strconv.ParseInt(strings.TrimSuffix(f[i+1], ","), 10, 64)
				w.errs += n
			}
			w.errLine = trimmed
		}
	}
	if w.requests == 0 {
		return wrkRun{}, fmt.Errorf("%s printed no request count:\n%s", name, out)
	}
	w.cpu = cpuOf(cmd.ProcessState)
	return w, nil
}

// waitTimeWait waits, up to 70 s, until no TCP connection to or from the
// peers' address (127.0.0.11, nginx's and the faultbench node's) is in
// TIME_WAIT. A new connection per request leaves tens of thousands (nginx
// closes first), and a later connect that reuses one's four-tuple can
// have its SYN answered by the old connection and retried after a
// second: a keep-alive run that opens its connections then loses a
// second of its load. wrk2 showed it (a 4 s run at three quarters of its
// rate); the others pay it less visibly. Other programs' connections
// cannot collide with the benchmark's, so they are not waited for.
func waitTimeWait(ctx context.Context) {
	deadline := time.Now().Add(70 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		n := 0
		for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			if b, err := os.ReadFile(f); err == nil {
				n += timeWaits(string(b), peerIPHex)
			}
		}
		if n == 0 {
			return
		}
		fmt.Fprintf(os.Stderr, "  waiting for %d connections in TIME_WAIT to end\n", n)
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
	}
}

// peerIPHex is 127.0.0.11 as /proc/net/tcp prints it (the address's bytes
// as a little-endian word); /proc/net/tcp6 ends an IPv4-mapped address
// with the same eight digits.
const peerIPHex = "0B00007F"

// timeWaits counts the connections of a /proc/net/tcp or tcp6 table in
// TIME_WAIT (state 06) whose local or remote address is ipHex.
func timeWaits(table, ipHex string) int {
	n := 0
	for line := range strings.Lines(table) {
		f := strings.Fields(line)
		if len(f) < 4 || f[3] != "06" {
			continue
		}
		for _, ep := range f[1:3] {
			if ip, _, ok := strings.Cut(ep, ":"); ok && strings.HasSuffix(ip, ipHex) {
				n++
				break
			}
		}
	}
	return n
}

// wrk2Trial runs wrk2 -t1 at rate for the run's length. wrk2 paces its
// requests like faultbench and vegeta, but keeps only a latency histogram
// (corrected for the sends it delayed), not every result; it never
// refuses, so "every arrival recorded" is read as "every paced request
// completed": its count at least 97% of rate × duration, and errors below
// 1%. It starts each connection's pacing after the connect, about 0.08 s
// into the run here: with -duration under 4 s it cannot reach the 97%.
func (o options) wrk2Trial(ctx context.Context, addr, mode string, rate float64) (trial, error) {
	w, err := o.runWrk(ctx, "wrk2", o.wrk2, addr, mode, "-R", fmt.Sprintf("%.0f", rate))
	if err != nil {
		return trial{}, err
	}
	t := trial{rate: rate, requests: w.requests, cpuPerReq: w.cpu / float64(w.requests), syscalls: w.syscalls}
	goodput := 1 - float64(w.errs)/float64(w.requests)
	t.okRate = w.rate * goodput
	switch {
	case goodput < 0.99:
		t.why = fmt.Sprintf("%d errors in %d requests", w.errs, w.requests)
	case t.okRate < 0.97*rate:
		t.why = fmt.Sprintf("ok rate %.0f/s below 97%% of %.0f/s", t.okRate, rate)
	}
	t.pass = t.why == ""
	return t, nil
}

// sameRate runs every open-loop tool at one rate per mode, alternately,
// -reps times, and prints each one's CPU per request: at its own highest
// rate a tool's cost reflects how busy the server kept it, so CPU per
// request is compared here at one operating point.
func (o options) sameRate(ctx context.Context, addr string) error {
	type tool struct {
		name string
		try  func(mode string, rate float64) (trial, error)
	}
	toolsOf := func(o options) []tool {
		tools := []tool{{"vegeta", func(m string, r float64) (trial, error) { return o.vegetaTrial(ctx, addr, m, r) }}}
		if o.wrk2 != "" {
			tools = append(tools, tool{"wrk2", func(m string, r float64) (trial, error) { return o.wrk2Trial(ctx, addr, m, r) }})
		}
		tools = append(tools, tool{"faultbench", func(m string, r float64) (trial, error) { return o.faultbenchTrial(ctx, m, r, nil) }})
		if o.pacingTick > 0 {
			ot := o.ticked()
			tools = append(tools, tool{"faultbench, " + ot.tickName(), func(m string, r float64) (trial, error) { return ot.faultbenchTrial(ctx, m, r, nil) }})
		}
		return tools
	}
	// The CPU is measured without perf; with -syscalls every tool then
	// runs -reps times more with its system calls counted.
	probed := o
	probed.probe = true
	tools, probedTools := toolsOf(o), toolsOf(probed)
	runAll := func(tools []tool, mode string, rate float64, what string) ([][]trial, error) {
		got := make([][]trial, len(tools))
		for range o.reps {
			for i, tl := range tools {
				t, err := tl.try(mode, rate)
				if err != nil {
					return nil, err
				}
				fmt.Fprintf(os.Stderr, "  %s: %s %s %.0f/s: %s\n", what, tl.name, mode, rate, verdict(t))
				got[i] = append(got[i], t)
			}
		}
		return got, nil
	}
	header := false
	for _, mode := range o.modes {
		rate := o.sameRates[mode]
		if rate == 0 {
			continue
		}
		got, err := runAll(tools, mode, rate, "same rate")
		if err != nil {
			return err
		}
		if !header {
			fmt.Printf("\nCPU per request at one rate (median of %d; ok rate and runs that sustained it beside):\n\n", o.reps)
			fmt.Println("| mode | rate/s | tool | CPU µs/req | runs | ok rate/s | sustained |")
			fmt.Println("|---|---|---|---|---|---|---|")
			header = true
		}
		for i, tl := range tools {
			var ok []float64
			passed := 0
			for _, t := range got[i] {
				ok = append(ok, t.okRate)
				if t.pass {
					passed++
				}
			}
			c := cpus(got[i])
			fmt.Printf("| %s | %.0f | %s | %.1f | %s | %.0f | %d of %d |\n", mode, rate, tl.name, median(c)*1e6, joinf(c, "%.1f", 1e6), median(ok), passed, len(got[i]))
		}
		if o.syscalls {
			counted, err := runAll(probedTools, mode, rate, "system calls")
			if err != nil {
				return err
			}
			names := make([]string, len(tools))
			for i, tl := range tools {
				names[i] = tl.name
			}
			printSyscalls(mode, rate, o.probeLength(), names, counted)
			header = false // the next mode's CPU table gets its header again
		}
	}
	return nil
}

// vegetaTrial runs vegeta attack at rate, writing every result to a file,
// then reads its report.
func (o options) vegetaTrial(ctx context.Context, addr, mode string, rate float64) (trial, error) {
	results := filepath.Join(o.work, "vegeta.bin")
	defer os.Remove(results)
	args := []string{"-c", o.genCPU, o.vegeta, "attack", "-rate", fmt.Sprintf("%.0f/1s", rate), "-duration", o.duration.String(),
		"-timeout", "6s", "-output", results}
	if mode == "new" {
		args = append(args, "-keepalive=false")
	} else {
		args = append(args, "-keepalive=true", "-max-connections", strconv.Itoa(o.conns))
	}
	cmd := exec.CommandContext(ctx, "taskset", args...)
	cmd.Stdin = strings.NewReader("GET http://" + addr + "/p.html\n")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		return trial{}, fmt.Errorf("vegeta attack: %w", err)
	}
	syscalls, err := o.waitCounted(ctx, cmd, "vegeta", time.Second)
	if err != nil {
		return trial{}, fmt.Errorf("vegeta attack: %w\n%s", err, buf.Bytes())
	}
	cpu := cpuOf(cmd.ProcessState)
	out, err := exec.CommandContext(ctx, o.vegeta, "report", "-type", "json", results).Output()
	if err != nil {
		return trial{}, fmt.Errorf("vegeta report: %w", err)
	}
	var rep struct {
		Requests   int64          `json:"requests"`
		Throughput float64        `json:"throughput"`
		Success    float64        `json:"success"`
		Status     map[string]int `json:"status_codes"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return trial{}, fmt.Errorf("vegeta report: %w", err)
	}
	t := trial{rate: rate, okRate: rep.Throughput, requests: rep.Requests, cpuPerReq: math.NaN(), syscalls: syscalls}
	if rep.Requests > 0 {
		t.cpuPerReq = cpu / float64(rep.Requests)
	}
	want := int64(rate * o.duration.Seconds())
	t.pass, t.why = sustained(rate, want, rep.Requests, 0, rep.Success, rep.Throughput)
	return t, nil
}

// sustained applies the one rule every open-loop tool is held to.
func sustained(rate float64, want, recorded, genRefused int64, goodput, okRate float64) (bool, string) {
	switch {
	case recorded < want-want/1000:
		return false, fmt.Sprintf("%d of %d arrivals recorded", recorded, want)
	case genRefused > 0:
		return false, fmt.Sprintf("%d refused by the generator", genRefused)
	case goodput < 0.99:
		return false, fmt.Sprintf("goodput %.3f", goodput)
	case okRate < 0.97*rate:
		return false, fmt.Sprintf("ok rate %.0f/s below 97%% of %.0f/s", okRate, rate)
	}
	return true, ""
}

// faultbenchTrial runs `faultbench run` on a scenario that starts the
// nginx itself; extra flags (profiles) are appended.
func (o options) faultbenchTrial(ctx context.Context, mode string, rate float64, extra []string) (trial, error) {
	dir := filepath.Join(o.work, fmt.Sprintf("run-%s-%.0f-%d", mode, rate, time.Now().UnixNano()))
	defer os.RemoveAll(dir)
	scen := filepath.Join(o.work, "scenario.yaml")
	if err := os.WriteFile(scen, []byte(o.scenario(mode, rate)), 0o644); err != nil {
		return trial{}, err
	}
	args := append([]string{"-c", o.genCPU, o.faultbench, "run", scen, "--quiet", "-o", dir}, extra...)
	cmd := exec.CommandContext(ctx, "taskset", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return trial{}, err
	}
	samples := sampleCPU(cmd.Process.Pid)
	// Counted past the cluster's start (under a second here) and any warm-up.
	syscalls, err := o.waitCounted(ctx, cmd, "faultbench", o.warm+1500*time.Millisecond)
	ticks := samples.stop()
	if err != nil && cmd.ProcessState.ExitCode() != 3 {
		return trial{}, fmt.Errorf("faultbench run at %.0f/s: %w\n%s", rate, err, stderr.String())
	}
	var prov struct {
		Started time.Time `json:"started_utc"`
	}
	if err := readJSON(filepath.Join(dir, "provenance.json"), &prov); err != nil {
		return trial{}, err
	}
	var sum struct {
		Overall struct {
			Attempts   int64              `json:"attempts"`
			Arrivals   int64              `json:"arrivals"`
			Outcomes   struct{ OK int64 } `json:"outcomes"`
			GenRefused int64              `json:"gen_refused"`
			CutShort   int64              `json:"cut_short"`
			Goodput    float64            `json:"goodput"`
			OKPerS     float64            `json:"throughput_mean_per_s"`
			LagP99     float64            `json:"send_lag_p99_s"`
		} `json:"overall"`
		Phases map[string]struct {
			LagP99 float64 `json:"send_lag_p99_s"`
		} `json:"phases"`
	}
	if err := readJSON(filepath.Join(dir, "summary.json"), &sum); err != nil {
		return trial{}, err
	}
	s := sum.Overall
	t := trial{rate: rate, okRate: s.OKPerS, requests: s.Attempts - s.GenRefused - s.CutShort, lagP99: s.LagP99,
		lagPhaseP99: sum.Phases["load"].LagP99, cpuPerReq: math.NaN(), syscalls: syscalls}
	if cpu, ok := ticks.between(prov.Started, prov.Started.Add(o.warm+o.duration)); ok && t.requests > 0 {
		t.cpuPerReq = cpu / float64(t.requests)
	}
	want := int64(rate * (o.warm + o.duration).Seconds())
	t.pass, t.why = sustained(rate, want, s.Arrivals, s.GenRefused+s.CutShort, s.Goodput, s.OKPerS)
	return t, nil
}

// scenario is a one-node `system: command` cluster running the bench's
// nginx configuration on the node's own address, at a constant rate.
func (o options) scenario(mode string, rate float64) string {
	conns := ""
	if mode == "keepalive" {
		conns = fmt.Sprintf("  keepalive: true\n  max_conns: %d\n", o.conns/o.clients)
	}
	if o.tick > 0 {
		conns += fmt.Sprintf("  pacing_tick: %s\n", o.tick)
	}
	phases := fmt.Sprintf("  - {name: load, duration: %s}\n", o.duration)
	if o.warm > 0 {
		phases = fmt.Sprintf("  - {name: warm-up, duration: %s}\n", o.warm) + phases
	}
	return fmt.Sprintf(`name: runpeers-%[1]s
seed: 1
cluster:
  system: command
  nodes: 1
  port: 18080
  ready: /health
  command:
    - sh
    - -c
    - |
      set -e
      d=$(cd {dir} && pwd)
      sed -e "s|@LISTEN@|{addr}:{port}|" -e "s|@DIR@|$d|" %[2]s > "$d/nginx.conf"
      exec taskset -c %[3]s %[4]s -p "$d" -c "$d/nginx.conf"
workload:
  rate: %[5]g
  arrivals: constant
  clients: %[6]d
%[7]s  trace: "paths:%[8]s"
  window: 1s
phases:
%[9]s`, mode, filepath.Join(o.work, "nginx.conf.in"), o.srvCPU, o.nginx, rate, o.clients, conns, filepath.Join(o.work, "paths.txt"), phases)
}

// profile runs faultbench once per mode with CPU and allocation profiles.
func (o options) profile(ctx context.Context) error {
	if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
		return err
	}
	for _, mode := range o.modes {
		rate := o.profileRates[mode]
		cpu, mem := filepath.Join(o.profileDir, mode+".cpu.pprof"), filepath.Join(o.profileDir, mode+".mem.pprof")
		t, err := o.faultbenchTrial(ctx, mode, rate, []string{"--cpuprofile", cpu, "--memprofile", mem})
		if err != nil {
			return err
		}
		fmt.Printf("%s at %.0f/s: %s\n  go tool pprof -top %s %s\n  go tool pprof -sample_index=alloc_objects -top %s %s\n",
			mode, rate, verdict(t), o.faultbench, cpu, o.faultbench, mem)
	}
	return nil
}

// compareBinaries runs two faultbench binaries alternately at fixed rates
// and reports each one's CPU per request: how a change to the hot path is
// measured on a shared machine (the alternation spreads the machine's
// other load over both).
func (o options) compareBinaries(ctx context.Context) error {
	fmt.Printf("| mode | rate/s | binary | CPU µs/req (median) | runs | send lag p99 (median) | runs | sustained |\n|---|---|---|---|---|---|---|---|\n")
	for _, mode := range o.modes {
		rate := o.profileRates[mode]
		bins := []string{o.compare, o.faultbench}
		cpu, lag := map[string][]float64{}, map[string][]float64{}
		pass := map[string]int{}
		for range o.reps {
			for _, bin := range bins {
				ob := o
				ob.faultbench = bin
				t, err := ob.faultbenchTrial(ctx, mode, rate, nil)
				if err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "  %s %s %.0f/s: %s\n", bin, mode, rate, verdict(t))
				if !math.IsNaN(t.cpuPerReq) {
					cpu[bin] = append(cpu[bin], t.cpuPerReq)
				}
				lag[bin] = append(lag[bin], t.lagP99)
				if t.pass {
					pass[bin]++
				}
			}
		}
		for _, bin := range bins {
			fmt.Printf("| %s | %.0f | %s | %.1f | %s | %s | %s | %d of %d |\n", mode, rate, bin, median(cpu[bin])*1e6, joinf(cpu[bin], "%.1f", 1e6),
				micros(median(lag[bin])), joinMicros(lag[bin]), pass[bin], o.reps)
		}
		fmt.Printf("| %s | %.0f | ratio new/old | %.2f | | %.2f | | |\n", mode, rate, median(cpu[o.faultbench])/median(cpu[o.compare]),
			median(lag[o.faultbench])/median(lag[o.compare]))
	}
	return nil
}

func printTable(o options, results map[string]*modeResult) {
	fmt.Println("| mode | wrk req/s | vegeta max sustained/s | wrk2 max sustained/s | faultbench run max sustained/s | faultbench / wrk | faultbench / vegeta | faultbench / wrk2 | CPU µs/req: wrk | vegeta | wrk2 | faultbench |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, mode := range o.modes {
		r := results[mode]
		if r == nil {
			continue
		}
		w, v, w2, f := rates(r.wrk), rates(r.vegeta), rates(r.wrk2), rates(r.faultbench)
		toWrk, toVeg, toWrk2 := ratios(f, w), ratios(f, v), ratios(f, w2)
		fmt.Printf("| %s | %.0f (%s) | %.0f (%s) | %.0f (%s) | %.0f (%s) | %.2f (%s) | %.2f (%s) | %.2f (%s) | %.1f | %.1f | %.1f | %.1f |\n", mode,
			median(w), joinRates(w), median(v), joinRates(v), median(w2), joinRates(w2), median(f), joinRates(f),
			median(toWrk), joinRatios(toWrk), median(toVeg), joinRatios(toVeg), median(toWrk2), joinRatios(toWrk2),
			median(cpus(r.wrk))*1e6, median(cpus(r.vegeta))*1e6, median(cpus(r.wrk2))*1e6, median(cpus(r.faultbench))*1e6)
	}
}

// ratios is f[i]/peer[i] for each repetition where the peer has a rate
// (wrk2 may have been skipped, a search may have sustained nothing).
func ratios(f, peer []float64) []float64 {
	var v []float64
	for i := range f {
		if i < len(peer) && peer[i] > 0 {
			v = append(v, f[i]/peer[i])
		}
	}
	return v
}

// printTickTable reports faultbench with -pacing-tick against the same
// peers' searches of the same repetitions.
func printTickTable(o options, results map[string]*modeResult) {
	if o.pacingTick == 0 {
		return
	}
	fmt.Printf("\nfaultbench run with %s (same repetitions, same peers):\n\n", o.ticked().tickName())
	fmt.Println("| mode | max sustained/s | / wrk | / vegeta | / wrk2 | CPU µs/req |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, mode := range o.modes {
		r := results[mode]
		if r == nil || len(r.faultbenchTick) == 0 {
			continue
		}
		w, v, w2, f := rates(r.wrk), rates(r.vegeta), rates(r.wrk2), rates(r.faultbenchTick)
		toWrk, toVeg, toWrk2 := ratios(f, w), ratios(f, v), ratios(f, w2)
		fmt.Printf("| %s | %.0f (%s) | %.2f (%s) | %.2f (%s) | %.2f (%s) | %.1f |\n", mode, median(f), joinRates(f),
			median(toWrk), joinRatios(toWrk), median(toVeg), joinRatios(toVeg), median(toWrk2), joinRatios(toWrk2), median(cpus(r.faultbenchTick))*1e6)
	}
}

func rates(ts []trial) []float64 {
	var v []float64
	for _, t := range ts {
		v = append(v, t.rate)
	}
	return v
}

func cpus(ts []trial) []float64 {
	var v []float64
	for _, t := range ts {
		if !math.IsNaN(t.cpuPerReq) {
			v = append(v, t.cpuPerReq)
		}
	}
	return v
}

// median is NaN for no values (printed as NaN, never as a measured 0).
func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func joinRates(v []float64) string  { return joinf(v, "%.0f", 1) }
func joinRatios(v []float64) string { return joinf(v, "%.2f", 1) }
func joinMicros(v []float64) string { return joinf(v, "%.0f µs", 1e6) }
func micros(s float64) string       { return fmt.Sprintf("%.0f µs", s*1e6) }

func joinf(v []float64, format string, scale float64) string {
	var parts []string
	for _, x := range v {
		parts = append(parts, fmt.Sprintf(format, x*scale))
	}
	return strings.Join(parts, ", ")
}

func cpuOf(ps *os.ProcessState) float64 {
	if ps == nil {
		return 0
	}
	return (ps.UserTime() + ps.SystemTime()).Seconds()
}

// cpuSamples polls a process's CPU time (utime+stime, every thread,
// exited ones included) from /proc every 10 ms until stop.
type cpuSamples struct {
	done chan struct{}
	out  chan []cpuSample
}

type cpuSample struct {
	at  time.Time
	cpu float64 // seconds
}

type cpuTicks []cpuSample

func sampleCPU(pid int) *cpuSamples {
	s := &cpuSamples{done: make(chan struct{}), out: make(chan []cpuSample, 1)}
	go func() {
		var got []cpuSample
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if cpu, err := procCPU(pid); err == nil {
				got = append(got, cpuSample{time.Now(), cpu})
			}
			select {
			case <-s.done:
				s.out <- got
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *cpuSamples) stop() cpuTicks {
	close(s.done)
	return <-s.out
}

// between is the CPU the process used from one instant to another, from
// the samples nearest them.
func (ts cpuTicks) between(from, to time.Time) (float64, bool) {
	near := func(at time.Time) (cpuSample, bool) {
		i, _ := slices.BinarySearchFunc(ts, at, func(s cpuSample, t time.Time) int { return s.at.Compare(t) })
		if i >= len(ts) {
			return cpuSample{}, false
		}
		return ts[i], true
	}
	a, ok1 := near(from)
	b, ok2 := near(to)
	if !ok1 || !ok2 {
		return 0, false
	}
	return b.cpu - a.cpu, true
}

func procCPU(pid int) (float64, error) {
	t, err := benchcpu.Of(pid)
	return t.Seconds(), err
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// defaultWrk2 is -wrk2's default: when it is not on the PATH, wrk2 is
// skipped; a path the user gave that is not there is an error.
const defaultWrk2 = "wrk2"

// resolveBinaries builds faultbench and finds (or installs) vegeta.
func (o *options) resolveBinaries(ctx context.Context) error {
	for _, bin := range []string{"taskset", o.wrk, o.nginx} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s not found (apt-get install nginx-light wrk util-linux): %w", bin, err)
		}
	}
	if o.faultbench == "" {
		o.faultbench = filepath.Join(o.work, "faultbench")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", o.faultbench, "./cmd/faultbench")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building faultbench (run from the repository root): %w\n%s", err, out)
		}
	}
	if p, err := exec.LookPath(o.wrk2); err == nil {
		o.wrk2 = p
	} else if o.wrk2 != defaultWrk2 {
		return fmt.Errorf("-wrk2 %s: %w", o.wrk2, err)
	} else {
		o.wrk2 = "" // the default, not installed: skipped, and said so
	}
	if o.vegeta == "" {
		if p, err := exec.LookPath("vegeta"); err == nil {
			o.vegeta = p
		} else {
			gobin := filepath.Join(o.work, "bin")
			cmd := exec.CommandContext(ctx, "go", "install", "github.com/tsenart/vegeta/v12@v12.13.0")
			cmd.Env = append(os.Environ(), "GOBIN="+gobin)
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("installing vegeta v12.13.0 from the Go proxy (or pass -vegeta): %w\n%s", err, out)
			}
			o.vegeta = filepath.Join(gobin, "vegeta")
		}
	}
	return nil
}

// writeSite writes the page, the path list and the nginx configuration
// template (its listen address and prefix filled in per server).
func writeSite(work string, pageBytes int) error {
	www := filepath.Join(work, "www")
	if err := os.MkdirAll(www, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(www, "p.html"), []byte(strings.Repeat("n", pageBytes)), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(work, "paths.txt"), []byte("/p.html\n"), 0o644); err != nil {
		return err
	}
	conf := strings.ReplaceAll(nginxConf, "@WWW@", www)
	return os.WriteFile(filepath.Join(work, "nginx.conf.in"), []byte(conf), 0o644)
}

const nginxConf = `# written by bench/runpeers
daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile 65536;
error_log stderr warn;
pid @DIR@/nginx.pid;
events { worker_connections 16384; }
http {
  access_log off;
  keepalive_requests 10000000;
  client_body_temp_path @DIR@; proxy_temp_path @DIR@; fastcgi_temp_path @DIR@;
  uwsgi_temp_path @DIR@; scgi_temp_path @DIR@;
  server {
    listen @LISTEN@ backlog=8192;
    location = /health { return 200 "ok\n"; }
    location / { root @WWW@; }
  }
}
`

type nginx struct {
	cmd  *exec.Cmd
	dir  string
	addr string
}

// startNginx starts the peers' nginx on 127.0.0.11 (the local backend's
// first node address, as in the faultbench runs) at a free port.
func startNginx(o options, work string) (*nginx, error) {
	l, err := net.Listen("tcp", "127.0.0.11:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	dir := filepath.Join(work, "peer")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	tmpl, err := os.ReadFile(filepath.Join(work, "nginx.conf.in"))
	if err != nil {
		return nil, err
	}
	conf := strings.NewReplacer("@LISTEN@", addr, "@DIR@", dir).Replace(string(tmpl))
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command("taskset", "-c", o.srvCPU, o.nginx, "-p", dir, "-c", confPath)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting nginx: %w", err)
	}
	n := &nginx{cmd: cmd, dir: dir, addr: addr}
	for range 100 { // up to 5 s for nginx to listen
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			// Reset, not closed: a closed probe would leave a socket in
			// TIME_WAIT, and the keep-alive runs wait for none to be left
			// (waitTimeWait), a minute for nothing.
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
			return n, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.stop()
	return nil, errors.New("nginx did not listen within 5 s")
}

func (n *nginx) stop() {
	n.cmd.Process.Signal(syscall.SIGQUIT)
	done := make(chan struct{})
	go func() { n.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		n.cmd.Process.Kill()
		<-done
	}
}
