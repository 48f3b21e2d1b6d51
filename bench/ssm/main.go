// Command ssm compares SSM's stub+brick store with Redis on this machine:
// 8 KB SET/GET (stub Write/Read with W=3, WQ=2, R=2 across 3 bricks) at the
// same concurrency and request count as redis-benchmark -d 8192 -t set,get,
// beside Redis three ways — redis-benchmark, go-redis on one server, and
// go-redis on a primary with two replicas whose SETs wait with WAIT 1 (SSM's
// WQ=2) — and prints operations per second and p99 latency, as ratios.
//
//	go run ./bench/ssm [-clients 16] [-n 50000] [-redis-port 16399] [-timeout 60ms] [-reps 3]
//	go run ./bench/ssm -overload [-rates 200,400,...]   goodput past saturation, protection on/off
//	go run ./bench/ssm -app [-clients 16] [-n 20000]    the session front end over ssm, memory, file
//
// The bricks run as separate processes (this binary re-executed with the
// hidden "brick" argument) on 127.0.0.1, like redis-server; the stub and its
// load run in this process, like redis-benchmark. Redis runs with no
// persistence (--save "" --appendonly no). Needs redis-server and
// redis-benchmark (Debian: apt-get install redis-server). Only loopback.
package main

import (
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/systems/ssm/app"
	"github.com/faultbench/faultbench/internal/systems/ssm/brick"
	"github.com/faultbench/faultbench/internal/systems/ssm/stub"
	"github.com/faultbench/faultbench/internal/systems/ssm/wire"
)

func main() {
	if len(os.Args) == 5 && os.Args[1] == "brick" {
		runBrick(os.Args[2], os.Args[3], os.Args[4])
		return
	}
	clients := flag.Int("clients", 16, "concurrent clients (redis-benchmark -c)")
	n := flag.Int("n", 50000, "requests per operation (redis-benchmark -n)")
	size := flag.Int("size", 8192, "value bytes (redis-benchmark -d)")
	redisPort := flag.Int("redis-port", 16399, "first of four ports on 127.0.0.1 for the private redis-servers: the single one, then the primary and its two replicas")
	reps := flag.Int("reps", 1, "repetitions of the whole comparison; more than one prints the medians too")
	cpuProfile := flag.String("cpuprofile", "", "write this process's CPU profile (the stub and the Go clients) to this file")
	timeout := flag.Duration("timeout", 60*time.Millisecond, "stub timeout")
	flag.IntVar(&brickProcs, "brick-procs", 0, "GOMAXPROCS of each brick process (0: the brick's default, its procs option)")
	overload := flag.Bool("overload", false, "instead: sweep offered load past saturation, with and without protection")
	appMode := flag.Bool("app", false, "instead: the session front end over its ssm, memory and file backends (Ling, Kiciman and Fox 2004, §6)")
	rateList := flag.String("rates", "200,300,400,500,600,800,1000,1500,2000,3000", "-overload: offered writes/s, multiples of 100")
	flag.Parse()
	for _, f := range strings.Split(*rateList, ",") {
		r, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || r < 100 || r%100 != 0 {
			fmt.Fprintf(os.Stderr, "bench/ssm: -rates: %q is not a multiple of 100\n", f)
			os.Exit(2)
		}
		rates = append(rates, r)
	}
	if *appMode {
		if err := benchApp(*clients, *n, *timeout); err != nil {
			fmt.Fprintln(os.Stderr, "bench/ssm:", err)
			os.Exit(1)
		}
		return
	}
	if *overload {
		if err := sweep(*timeout); err != nil {
			fmt.Fprintln(os.Stderr, "bench/ssm:", err)
			os.Exit(1)
		}
		return
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench/ssm:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "bench/ssm:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(*clients, *n, *size, *redisPort, *reps, *timeout); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "bench/ssm:", err)
		os.Exit(1)
	}
}

// runBrick is the child: one brick until killed, its process set up as
// ssm.ServeBrick sets up a brick's (procs 0: brick.DefaultConfig's).
func runBrick(id, addr, procs string) {
	n, _ := strconv.Atoi(id)
	cfg := brick.DefaultConfig()
	cfg.ID = uint16(n)
	if p, _ := strconv.Atoi(procs); p > 0 {
		cfg.Procs = p
	}
	runtime.GOMAXPROCS(cfg.Procs)
	b, err := brick.Start(cfg, addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, os.Kill)
	<-sig
	b.Close()
}

var (
	rates      []int
	brickProcs int
)

type result struct {
	peer      string // the system measured
	name      string // SET or GET
	opsPerSec float64
	p50, p99  time.Duration
	cpu       time.Duration // CPU time per successful operation, every process of the system and its client counted; 0 if unknown
	failed    int
	errs      map[string]int
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func waitHTTP(addr string) error {
	for range 500 {
		if resp, err := http.Get("http://" + addr + "/health"); err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("%s did not come up", addr)
}

// startBricks runs 3 bricks as child processes; stop kills them.
func startBricks(procs int) (addrs []string, pids []int, stop func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, nil, err
	}
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
	for id := 1; id <= 3; id++ {
		addr, err := freePort()
		if err != nil {
			stop()
			return nil, nil, nil, err
		}
		cmd := exec.Command(self, "brick", strconv.Itoa(id), addr, strconv.Itoa(procs))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			stop()
			return nil, nil, nil, err
		}
		cmds = append(cmds, cmd)
		pids = append(pids, cmd.Process.Pid)
		if err := waitHTTP(addr); err != nil {
			stop()
			return nil, nil, nil, err
		}
		addrs = append(addrs, addr)
	}
	return addrs, pids, stop, nil
}

func run(clients, n, size, redisPort, reps int, timeout time.Duration) error {
	addrs, brickPids, stop, err := startBricks(brickProcs)
	if err != nil {
		return err
	}
	defer stop()
	redis, err := startRedises(redisPort)
	if err != nil {
		return err
	}
	defer redis.stop()
	fmt.Printf("%d clients, %d requests each, %d-byte values; SSM: 3 bricks, W=3 WQ=2 R=2, timeout %v; repetitions: %d\n", clients, n, size, timeout, reps)
	var runs [][]result // per repetition: ssm SET, GET, then each peer's SET, GET
	for rep := 1; rep <= reps; rep++ {
		fmt.Printf("\nrepetition %d, load average %s\n", rep, loadAverage())
		ssmSet, ssmGet, err := runSSM(addrs, brickPids, clients, n, size, timeout)
		if err != nil {
			return err
		}
		rs := []result{ssmSet, ssmGet}
		bset, bget, err := benchRedis(clients, n, size, redis.single, redis.pids(0, 1))
		if err != nil {
			return err
		}
		rs = append(rs, bset, bget)
		gset, gget, err := benchGoRedis(redis.single, redis.pids(0, 1), clients, n, size, 0)
		if err != nil {
			return err
		}
		rs = append(rs, gset, gget)
		wset, wget, err := benchGoRedis(redis.primary, redis.pids(1, 4), clients, n, size, timeout)
		if err != nil {
			return err
		}
		rs = append(rs, wset, wget)
		printRun(rs)
		runs = append(runs, rs)
	}
	if reps > 1 {
		fmt.Printf("\nmedian of %d repetitions (each figure its own median; ratios of the medians), load average %s\n", reps, loadAverage())
		med := make([]result, len(runs[0]))
		for i := range med {
			var ops []float64
			var p99s, cpus []time.Duration
			failed := 0
			for _, rs := range runs {
				ops = append(ops, rs[i].opsPerSec)
				p99s = append(p99s, rs[i].p99)
				cpus = append(cpus, rs[i].cpu)
				failed += rs[i].failed
			}
			slices.Sort(ops)
			slices.Sort(p99s)
			slices.Sort(cpus)
			med[i] = result{name: runs[0][i].name, peer: runs[0][i].peer, opsPerSec: ops[len(ops)/2], p99: p99s[len(p99s)/2],
				cpu: cpus[len(cpus)/2], failed: failed}
		}
		printRun(med)
	}
	return nil
}

// peers names the systems of a run's results after SSM's, in order.
var peers = []string{
	"Redis, redis-benchmark",
	"Redis, go-redis",
	"Redis + 2 replicas, go-redis, SET then WAIT 1",
}

// printRun prints one run's figures and SSM's ratios to each peer.
func printRun(rs []result) {
	fmt.Println("\n| system | operation | ok ops/s | p99 | CPU per op | failed |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, r := range rs {
		fmt.Printf("| %s | %s | %.0f | %.2f ms | %.1f µs | %d |\n", r.peer, r.name, r.opsPerSec, ms(r.p99), us(r.cpu), r.failed)
	}
	fmt.Println("\n| operation | SSM beside | SSM/peer ops/s | SSM/peer p99 | SSM/peer CPU per op |")
	fmt.Println("|---|---|---|---|---|")
	for op := range 2 {
		for p := range peers {
			a, b := rs[op], rs[2+2*p+op]
			fmt.Printf("| %s | %s | %.2f | %.2f | %.2f |\n", a.name, b.peer, a.opsPerSec/b.opsPerSec, ms(a.p99)/ms(b.p99), us(a.cpu)/us(b.cpu))
		}
	}
	for _, r := range rs {
		if len(r.errs) > 0 { // a median carries only the summed count
			fmt.Printf("\n%s %s failures: %v\n", r.peer, r.name, r.errs)
		}
	}
}

// loadAverage is /proc/loadavg's first three fields, or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// runSSM measures SSM with a fresh stub on the running bricks.
func runSSM(addrs []string, pids []int, clients, n, size int, timeout time.Duration) (set, get result, err error) {
	cfg := stub.DefaultConfig()
	cfg.Bricks = addrs
	cfg.Timeout = timeout
	s, err := stub.New(cfg)
	if err != nil {
		return set, get, err
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.WaitLive(ctx, 3); err != nil {
		return set, get, err
	}
	set, get = benchSSM(s, slices.Concat(pids, []int{0}), clients, n, size)
	return set, get, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// measure runs n operations from clients goroutines, client c doing
// operations c, c+clients, … Operations per second and p99 count
// successful operations only; failures (fast rejections under overload,
// timeouts) are reported apart, by the text before their first colon.
func measure(peer, name string, pids []int, clients, n int, op func(client int) error) result {
	lat := make([][]time.Duration, clients)
	fails := make([]int, clients)
	var mu sync.Mutex
	errs := map[string]int{}
	var wg sync.WaitGroup
	cpu := startCPU(pids...)
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < n; i += clients {
				t := time.Now()
				if err := op(c); err != nil {
					fails[c]++
					mu.Lock()
					errs[errKind(err)]++
					mu.Unlock()
					continue
				}
				lat[c] = append(lat[c], time.Since(t))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lat...)
	perOp := cpu.perOp(len(all), 0) // before the sort, which is the benchmark's own work
	slices.Sort(all)
	r := result{peer: peer, name: name, opsPerSec: float64(len(all)) / elapsed.Seconds(), cpu: perOp, errs: errs}
	if len(all) > 0 {
		r.p50, r.p99 = all[len(all)/2], all[len(all)*99/100]
	}
	for _, f := range fails {
		r.failed += f
	}
	return r
}

// errKind is what an error is counted as: SSM's errors read
// "ssm stub: kind: detail", others are taken up to their first colon.
func errKind(err error) string {
	parts := strings.SplitN(err.Error(), ":", 3)
	if len(parts) >= 2 && strings.HasPrefix(parts[0], "ssm") {
		return strings.TrimSpace(parts[1])
	}
	return strings.TrimSpace(parts[0])
}

// benchSSM runs n writes, then n reads of the cookies written.
func benchSSM(s *stub.Stub, pids []int, clients, n, size int) (set, get result) {
	value := make([]byte, size)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	cookies := make([]stub.Cookie, clients)
	const peer = "SSM, 3 bricks, W=3 WQ=2 R=2"
	set = measure(peer, "SET", pids, clients, n, func(c int) error {
		ck, err := s.Write(context.Background(), wire.Key{byte(c), byte(c >> 8)}, value, time.Now().Add(time.Hour))
		if err == nil {
			cookies[c] = ck
		}
		return err
	})
	get = measure(peer, "GET", pids, clients, n, func(c int) error {
		_, err := s.Read(context.Background(), cookies[c])
		return err
	})
	return set, get
}

// benchRedis runs redis-benchmark against the Redis at addr, whose
// server processes are pids: SET, then GET, one invocation each, so that
// each operation's CPU time is its own.
func benchRedis(clients, n, size int, addr string, pids []int) (set, get result, err error) {
	host, port, _ := net.SplitHostPort(addr)
	for _, op := range []string{"set", "get"} {
		cmd := exec.Command("redis-benchmark", "-h", host, "-p", port, "-d", strconv.Itoa(size),
			"-t", op, "-n", strconv.Itoa(n), "-c", strconv.Itoa(clients), "--csv")
		cpu := startCPU(pids...)
		out, err := cmd.Output()
		if err != nil {
			return set, get, fmt.Errorf("redis-benchmark -t %s: %w", op, err)
		}
		rows, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
		if err != nil {
			return set, get, fmt.Errorf("redis-benchmark output: %w", err)
		}
		for _, row := range rows[1:] {
			if len(row) < 7 || !strings.EqualFold(row[0], op) {
				continue
			}
			rps, _ := strconv.ParseFloat(row[1], 64)
			p99, _ := strconv.ParseFloat(row[6], 64)
			client := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			r := result{peer: peers[0], name: row[0], opsPerSec: rps, p99: time.Duration(p99 * float64(time.Millisecond)),
				cpu: cpu.perOp(n, client)}
			if op == "set" {
				set = r
			} else {
				get = r
			}
		}
	}
	if set.opsPerSec == 0 || get.opsPerSec == 0 {
		return set, get, fmt.Errorf("redis-benchmark printed no SET or no GET row")
	}
	return set, get, nil
}

// sweep offers open-loop writes at multiples of the capacity of 3 bricks
// slowed to 2 ms a message (≈500 writes/s, every write going to all 3),
// with protection (AIMD windows + expired-request discard) and without, and
// prints the steady-state goodput (writes acknowledged within the timeout,
// second half of each 2 s step) — Ling, Kiciman and Fox (2004) Figures 11 and 12 in small.
func sweep(timeout time.Duration) error {
	fmt.Printf("3 in-process bricks, 2 ms per message (capacity ≈ 500 writes/s), W=3 WQ=2, 1 KB values, timeout %v\n\n", timeout)
	fmt.Println("| offered writes/s | goodput protected | goodput unprotected |")
	fmt.Println("|---|---|---|")
	for _, rate := range rates {
		var got [2]float64
		for i, protect := range []bool{true, false} {
			g, err := goodput(rate, protect, timeout)
			if err != nil {
				return err
			}
			got[i] = g
		}
		fmt.Printf("| %d | %.0f | %.0f |\n", rate, got[0], got[1])
	}
	return nil
}

func goodput(rate int, protect bool, timeout time.Duration) (float64, error) {
	var addrs []string
	for id := 1; id <= 3; id++ {
		cfg := brick.DefaultConfig()
		cfg.ID = uint16(id)
		cfg.Slow = 2 * time.Millisecond
		cfg.DiscardExpired = protect
		b, err := brick.Start(cfg, "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		defer b.Close()
		addrs = append(addrs, b.Addr())
	}
	cfg := stub.DefaultConfig()
	cfg.Bricks = addrs
	cfg.Timeout = timeout
	cfg.AIMD = protect
	s, err := stub.New(cfg)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.WaitLive(ctx, 3); err != nil {
		return 0, err
	}
	const step = 2 * time.Second
	var ok sync.WaitGroup
	var mu sync.Mutex
	count := 0
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	value := make([]byte, 1024)
	for now := range tick.C {
		if now.Sub(start) > step {
			break
		}
		counted := now.Sub(start) > step/2
		for i := range rate / 100 {
			ok.Add(1)
			go func() {
				defer ok.Done()
				_, err := s.Write(context.Background(), wire.Key{byte(i)}, value, time.Now().Add(time.Minute))
				if err == nil && counted {
					mu.Lock()
					count++
					mu.Unlock()
				}
			}()
		}
	}
	ok.Wait()
	return float64(count) / (step / 2).Seconds(), nil
}

// benchApp serves the session protocol from this process over each backend
// and drives it with clients users alternating POST and GET (each response
// verified), n requests in all per backend.
func benchApp(clients, n int, timeout time.Duration) error {
	addrs, _, stop, err := startBricks(brickProcs)
	if err != nil {
		return err
	}
	defer stop()
	cfg := stub.DefaultConfig()
	cfg.Bricks = addrs
	cfg.Timeout = timeout
	st, err := stub.New(cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := st.WaitLive(ctx, 3); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "fb-ssm-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	file, err := app.NewFile(dir)
	if err != nil {
		return err
	}
	fmt.Printf("session front end, %d clients (one user each) alternating POST and GET, %d requests per backend, 8 KB sessions\n\n", clients, n)
	fmt.Println("| backend | ok requests/s | p50 | p99 | failed |")
	fmt.Println("|---|---|---|---|---|")
	for _, b := range []struct {
		name    string
		backend app.Backend
	}{{"memory", app.NewMemory()}, {"ssm", app.SSM{Stub: st}}, {"file (fsync)", file}} {
		r, err := driveApp(b.backend, clients, n)
		if err != nil {
			return err
		}
		fmt.Printf("| %s | %.0f | %.2f ms | %.2f ms | %d |\n", b.name, r.opsPerSec, ms(r.p50), ms(r.p99), r.failed)
	}
	return nil
}

// driveApp runs n requests of the end-to-end application from clients
// emulated users, measured as the bricks' operations are (measure): a
// request that fails, or whose answer the user judges wrong, is a failure.
func driveApp(backend app.Backend, clients, n int) (result, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return result{}, err
	}
	srv := &http.Server{Handler: app.Handler(backend, app.DefaultConfig())}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: 5 * time.Second}
	users := make([]*app.User, clients)
	for c := range users {
		users[c] = &app.User{Name: fmt.Sprintf("user%d", c)}
	}
	r := measure("app", "app", nil, clients, n, func(c int) error {
		u := users[c]
		method, path, cookie := u.Next()
		req, _ := http.NewRequest(method, base+path, nil)
		if cookie != "" {
			req.Header.Set(app.HeaderCookie, cookie)
		}
		resp, err := client.Do(req)
		if err != nil {
			u.Abandon(method)
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			u.Abandon(method)
			return err
		}
		if v := u.Judge(method, resp.StatusCode, resp.Header, body); v != app.VerdictOK {
			return fmt.Errorf("verdict: %v", v)
		}
		return nil
	})
	if r.opsPerSec == 0 {
		return result{}, fmt.Errorf("no request succeeded")
	}
	return r, nil
}
