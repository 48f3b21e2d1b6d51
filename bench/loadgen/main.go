// Command loadgen measures faultbench's load generator side by side with wrk
// against one nginx on loopback (docs/architecture.md: real peers, ratios).
//
//	go run ./bench/loadgen            # the whole comparison, a few minutes
//	go run ./bench/loadgen -reps 1 -duration 2s   # a quick look
//
// It starts nginx (Debian nginx-light) with its own config in a temporary
// directory, serving one small static file on 127.0.0.1, then measures:
//
//  1. send lag (moment an attempt is handed to its driver minus its scheduled
//     time) at fixed Poisson rates, p50/p99/max, with and without keep-alive;
//  2. the highest rate at which p99 lag stays under -max-lag with every
//     arrival recorded and at least -min-ok of them ok, found by doubling
//     then bisection, as a ratio to wrk's closed-loop maximum with the same
//     connection mode (keep-alive, and "Connection: close" for new
//     connections).
//
// The sink is a counter per outcome plus a preallocated lag slice: no
// per-request allocation, so the figures are the generator's, not a sink's.
// Every figure is the median of -reps runs; the machine is shared.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/workload"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

type options struct {
	duration  time.Duration
	reps      int
	rates     []float64
	clients   int
	maxLag    time.Duration
	minOK     float64
	nginx     string
	wrk       string
	fileBytes int
	modes     []string // null, keepalive, new
	skipSweep bool
	skipTable bool
	maxConns  int
}

func run() error {
	var o options
	var rates, modes string
	flag.DurationVar(&o.duration, "duration", 3*time.Second, "length of each measured run")
	flag.IntVar(&o.reps, "reps", 3, "repetitions of each measurement (median reported)")
	flag.StringVar(&rates, "rates", "1000,5000,20000", "fixed rates for the lag table, requests/s")
	flag.IntVar(&o.clients, "clients", 4, "client emulators")
	flag.DurationVar(&o.maxLag, "max-lag", time.Millisecond, "p99 send lag the rate search must stay under")
	flag.Float64Var(&o.minOK, "min-ok", 0.99, "fraction of ok attempts the rate search requires")
	flag.StringVar(&o.nginx, "nginx", "/usr/sbin/nginx", "nginx binary")
	flag.StringVar(&o.wrk, "wrk", "wrk", "wrk binary")
	flag.IntVar(&o.fileBytes, "file-bytes", 1024, "size of the static file served")
	flag.StringVar(&modes, "modes", "null,keepalive,new", "modes: null (no request: the scheduling floor), keepalive, new (connection per request)")
	flag.BoolVar(&o.skipSweep, "no-search", false, "skip the maximum-rate search")
	flag.BoolVar(&o.skipTable, "no-table", false, "skip the fixed-rate lag table")
	flag.IntVar(&o.maxConns, "max-conns", 0, "keep-alive connections per client (0: no cap)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	for _, r := range strings.Split(rates, ",") {
		v, err := strconv.ParseFloat(r, 64)
		if err != nil {
			return fmt.Errorf("-rates: %w", err)
		}
		o.rates = append(o.rates, v)
	}
	for _, m := range strings.Split(modes, ",") {
		if m != "null" && m != "keepalive" && m != "new" {
			return fmt.Errorf("-modes: unknown mode %q", m)
		}
		o.modes = append(o.modes, m)
	}

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	// Ctrl-C ends the current run early and still stops nginx.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := startNginx(o.nginx, o.fileBytes)
	if err != nil {
		return err
	}
	defer srv.stop()
	fmt.Printf("# loadgen: %s, GOMAXPROCS %d, nginx 1 worker on %s, file %d B, %d clients, max-conns %d, runs of %v, median of %d, load average %s\n\n",
		runtime.Version(), runtime.GOMAXPROCS(0), srv.addr, o.fileBytes, o.clients, o.maxConns, o.duration, o.reps, loadAverage())

	if !o.skipTable {
		if err := lagTable(ctx, o, srv.addr); err != nil {
			return err
		}
	}
	if o.skipSweep {
		return nil
	}
	return searchTable(ctx, o, srv.addr)
}

func lagTable(ctx context.Context, o options, addr string) error {
	fmt.Println("## Send lag at fixed rates (Poisson)")
	fmt.Println()
	fmt.Println("| mode | rate/s | lag p50 | lag p99 | lag max | ok | recorded/planned |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, mode := range o.modes {
		for _, rate := range o.rates {
			var res []trial
			for range o.reps {
				t, err := measure(ctx, o, addr, rate, mode)
				if err != nil {
					return err
				}
				res = append(res, t)
			}
			m := medianTrial(res)
			fmt.Printf("| %s | %.0f | %v | %v | %v | %.4f | %d/%d |\n", modeName(mode), rate,
				m.p50.Round(time.Microsecond), m.p99.Round(time.Microsecond), m.max.Round(time.Microsecond), m.okFrac, m.recorded, m.planned)
		}
	}
	fmt.Println()
	return nil
}

func searchTable(ctx context.Context, o options, addr string) error {
	fmt.Printf("## Highest rate with p99 lag < %v, every arrival recorded, >= %.0f%% ok, vs wrk\n\n", o.maxLag, o.minOK*100)
	fmt.Println("| mode | faultbench max rate/s (runs) | wrk req/s (runs) | ratio (median) |")
	fmt.Println("|---|---|---|---|")
	for _, mode := range o.modes {
		var fb, wr []float64
		for range o.reps {
			r, err := searchRate(ctx, o, addr, mode)
			if err != nil {
				return err
			}
			fb = append(fb, r)
			if mode == "null" {
				continue
			}
			w, err := wrkRate(o, addr, mode == "keepalive")
			if err != nil {
				return err
			}
			wr = append(wr, w)
		}
		if mode == "null" {
			fmt.Printf("| %s | %.0f %s | - | - |\n", modeName(mode), median(fb), list(fb))
			continue
		}
		ratios := make([]float64, len(fb))
		for i := range fb {
			ratios[i] = fb[i] / wr[i]
		}
		fmt.Printf("| %s | %.0f %s | %.0f %s | %.3f |\n", modeName(mode), median(fb), list(fb), median(wr), list(wr), median(ratios))
	}
	return nil
}

func modeName(mode string) string {
	return map[string]string{"null": "null (no request)", "keepalive": "keep-alive", "new": "new connection"}[mode]
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// counterSink counts outcomes and keeps send lags in a preallocated slice.
type counterSink struct {
	outcomes [record.NumOutcomes]atomic.Int64
	lags     []time.Duration
	nLags    atomic.Int64
}

func (s *counterSink) Record(r record.Request) { s.outcomes[r.Outcome].Add(1) }

func (s *counterSink) Sent(_ int, lag time.Duration) {
	if i := s.nLags.Add(1) - 1; i < int64(len(s.lags)) {
		s.lags[i] = lag
	}
}

type trial struct {
	p50, p99, max     time.Duration
	okFrac            float64
	recorded, planned int
}

func measure(ctx context.Context, o options, addr string, rate float64, mode string) (trial, error) {
	cfg := workload.Config{
		Rate: rate, Clients: o.clients, Keepalive: mode == "keepalive", MaxConns: o.maxConns,
		Trace: "zipf:1:0", // one page, /p/0, the file nginx serves
		Seed:  time.Now().UnixNano(), Targets: []workload.Target{{Node: 1, Addr: addr}},
	}
	planned, err := workload.PlannedArrivals(cfg, o.duration)
	if err != nil {
		return trial{}, err
	}
	if mode == "null" {
		cfg.Driver = "null"
	}
	sink := &counterSink{lags: make([]time.Duration, planned)}
	runtime.GC()
	if err := workload.Run(ctx, cfg, time.Now().Add(50*time.Millisecond), o.duration, sink); err != nil {
		return trial{}, err
	}
	lags := sink.lags[:min(int(sink.nLags.Load()), len(sink.lags))]
	slices.Sort(lags)
	t := trial{planned: planned}
	for i := range sink.outcomes {
		t.recorded += int(sink.outcomes[i].Load())
	}
	if len(lags) > 0 {
		t.p50 = lags[len(lags)/2]
		t.p99 = lags[min(len(lags)-1, len(lags)*99/100)]
		t.max = lags[len(lags)-1]
	}
	if t.recorded > 0 {
		t.okFrac = float64(sink.outcomes[record.OK].Load()) / float64(t.recorded)
	}
	return t, nil
}

func (t trial) passes(o options) bool {
	return t.recorded == t.planned && t.p99 < o.maxLag && t.okFrac >= o.minOK
}

// searchRate doubles the rate from 250/s until a rate fails, then bisects
// four times: about ten rates. It reports 0 if even 250/s fails. A rate
// passes if either of two runs passes: other jobs on a shared machine can
// only add lag, so one clean run shows what the generator can do.
func searchRate(ctx context.Context, o options, addr string, mode string) (float64, error) {
	passes := func(rate float64) (bool, error) {
		for range 2 {
			t, err := measure(ctx, o, addr, rate, mode)
			if err != nil || t.passes(o) {
				return err == nil, err
			}
		}
		return false, nil
	}
	lo, hi := 0.0, 0.0
	for rate := 250.0; rate <= 1_000_000; rate *= 2 {
		ok, err := passes(rate)
		if err != nil {
			return 0, err
		}
		if !ok {
			hi = rate
			break
		}
		lo = rate
	}
	if hi == 0 {
		return lo, nil
	}
	for range 4 {
		mid := (lo + hi) / 2
		ok, err := passes(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

var wrkRateRE = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)

// wrkRate is the best of a few wrk configurations (threads x connections),
// so that the ratio compares against wrk at its best on this machine.
func wrkRate(o options, addr string, keep bool) (float64, error) {
	best := 0.0
	for _, tc := range [][2]int{{1, 16}, {2, 32}, {2, 64}} {
		args := []string{"-t", strconv.Itoa(tc[0]), "-c", strconv.Itoa(tc[1]), "-d", fmt.Sprintf("%ds", int(o.duration.Seconds())), "http://" + addr + "/p/0"}
		if !keep {
			args = append([]string{"-H", "Connection: close"}, args...)
		}
		out, err := exec.Command(o.wrk, args...).CombinedOutput()
		if err != nil {
			return 0, fmt.Errorf("wrk %v: %w\n%s", args, err, out)
		}
		m := wrkRateRE.FindSubmatch(out)
		if m == nil {
			return 0, fmt.Errorf("wrk printed no Requests/sec:\n%s", out)
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		best = max(best, v)
	}
	return best, nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func list(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatFloat(x, 'f', 0, 64)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// medianTrial takes each figure's median separately.
func medianTrial(ts []trial) trial {
	pick := func(f func(trial) float64) float64 {
		v := make([]float64, len(ts))
		for i, t := range ts {
			v[i] = f(t)
		}
		return median(v)
	}
	return trial{
		p50:      time.Duration(pick(func(t trial) float64 { return float64(t.p50) })),
		p99:      time.Duration(pick(func(t trial) float64 { return float64(t.p99) })),
		max:      time.Duration(pick(func(t trial) float64 { return float64(t.max) })),
		okFrac:   pick(func(t trial) float64 { return t.okFrac }),
		recorded: int(pick(func(t trial) float64 { return float64(t.recorded) })),
		planned:  int(pick(func(t trial) float64 { return float64(t.planned) })),
	}
}

type nginx struct {
	cmd  *exec.Cmd
	dir  string
	addr string
}

// startNginx runs nginx in the foreground with a config of our own in a
// temporary directory: one worker, no access log, one static file.
func startNginx(bin string, fileBytes int) (*nginx, error) {
	dir, err := os.MkdirTemp("", "faultbench-loadgen-")
	if err != nil {
		return nil, err
	}
	os.Chmod(dir, 0o755) // workers may run as another user when we are root
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	www := filepath.Join(dir, "www", "p")
	if err := os.MkdirAll(www, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(www, "0"), []byte(strings.Repeat("x", fileBytes)), 0o644); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf(nginxConf, dir, port)
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "error.log"))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting nginx (apt-get install nginx-light wrk): %w", err)
	}
	n := &nginx{cmd: cmd, dir: dir, addr: fmt.Sprintf("127.0.0.1:%d", port)}
	for range 100 { // up to 5 s for nginx to listen
		if c, err := netDial(n.addr); err == nil {
			c.Close()
			return n, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.stop()
	return nil, errors.New("nginx did not start listening within 5s; see " + filepath.Join(dir, "error.log"))
}

func (n *nginx) stop() {
	n.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { n.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		n.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(n.dir)
}

const nginxConf = `# written by bench/loadgen
worker_processes 1;
daemon off;
pid %[1]s/nginx.pid;
events { worker_connections 65536; }
worker_rlimit_nofile 131072;
http {
    access_log off;
    error_log %[1]s/error.log warn;
    client_body_temp_path %[1]s/tmp;
    proxy_temp_path %[1]s/tmp;
    fastcgi_temp_path %[1]s/tmp;
    uwsgi_temp_path %[1]s/tmp;
    scgi_temp_path %[1]s/tmp;
    keepalive_requests 1000000;
    keepalive_timeout 75s;
    default_type text/html;
    server {
        listen 127.0.0.1:%[2]d backlog=4096;
        root %[1]s/www;
    }
}
`
