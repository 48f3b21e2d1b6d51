// Command ssm compares SSM's stub+brick store with Redis on this machine:
// 8 KB SET/GET (stub Write/Read with W=3, WQ=2, R=2 across 3 bricks) at the
// same concurrency and request count as redis-benchmark -d 8192 -t set,get,
// and prints operations per second and p99 latency side by side, as ratios.
//
//	go run ./bench/ssm [-clients 16] [-n 50000] [-redis-port 16399] [-timeout 60ms]
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
	if len(os.Args) == 4 && os.Args[1] == "brick" {
		runBrick(os.Args[2], os.Args[3])
		return
	}
	clients := flag.Int("clients", 16, "concurrent clients (redis-benchmark -c)")
	n := flag.Int("n", 50000, "requests per operation (redis-benchmark -n)")
	size := flag.Int("size", 8192, "value bytes (redis-benchmark -d)")
	redisPort := flag.Int("redis-port", 16399, "port for the private redis-server on 127.0.0.1")
	timeout := flag.Duration("timeout", 60*time.Millisecond, "stub timeout")
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
	if err := run(*clients, *n, *size, *redisPort, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "bench/ssm:", err)
		os.Exit(1)
	}
}

// runBrick is the child: one brick until killed.
func runBrick(id, addr string) {
	n, _ := strconv.Atoi(id)
	cfg := brick.DefaultConfig()
	cfg.ID = uint16(n)
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

var rates []int

type result struct {
	name      string
	opsPerSec float64
	p99       time.Duration
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
func startBricks() (addrs []string, stop func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
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
			return nil, nil, err
		}
		cmd := exec.Command(self, "brick", strconv.Itoa(id), addr)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			stop()
			return nil, nil, err
		}
		cmds = append(cmds, cmd)
		if err := waitHTTP(addr); err != nil {
			stop()
			return nil, nil, err
		}
		addrs = append(addrs, addr)
	}
	return addrs, stop, nil
}

func run(clients, n, size, redisPort int, timeout time.Duration) error {
	addrs, stop, err := startBricks()
	if err != nil {
		return err
	}
	defer stop()
	cfg := stub.DefaultConfig()
	cfg.Bricks = addrs
	cfg.Timeout = timeout
	s, err := stub.New(cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.WaitLive(ctx, 3); err != nil {
		return err
	}
	ssmSet, ssmGet := benchSSM(s, clients, n, size)
	redisSet, redisGet, err := benchRedis(clients, n, size, redisPort)
	if err != nil {
		return err
	}
	fmt.Printf("%d clients, %d requests each, %d-byte values; SSM: 3 bricks, W=3 WQ=2 R=2, timeout %v\n\n", clients, n, size, timeout)
	fmt.Println("| operation | SSM ok ops/s | SSM p99 | SSM failed | Redis ops/s | Redis p99 | SSM/Redis ops/s | SSM/Redis p99 |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, pair := range [][2]result{{ssmSet, redisSet}, {ssmGet, redisGet}} {
		a, b := pair[0], pair[1]
		fmt.Printf("| %s | %.0f | %.2f ms | %d | %.0f | %.2f ms | %.2f | %.2f |\n", a.name, a.opsPerSec, ms(a.p99), a.failed,
			b.opsPerSec, ms(b.p99), a.opsPerSec/b.opsPerSec, ms(a.p99)/ms(b.p99))
	}
	for _, r := range []result{ssmSet, ssmGet} {
		if r.failed > 0 {
			fmt.Printf("\nSSM %s failures: %v\n", r.name, r.errs)
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchSSM runs n writes, then n reads of the cookies written, from
// clients goroutines. Operations per second and p99 count successful
// operations only; failures (fast rejections under overload) are reported
// apart.
func benchSSM(s *stub.Stub, clients, n, size int) (set, get result) {
	value := make([]byte, size)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	cookies := make([]stub.Cookie, clients)
	phase := func(name string, op func(client int) error) result {
		lat := make([][]time.Duration, clients)
		fails := make([]int, clients)
		var mu sync.Mutex
		errs := map[string]int{}
		var wg sync.WaitGroup
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
						errs[strings.TrimSpace(strings.SplitN(err.Error(), ":", 3)[1])]++
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
		slices.Sort(all)
		r := result{name: name, opsPerSec: float64(len(all)) / elapsed.Seconds(), p99: all[len(all)*99/100], errs: errs}
		for _, f := range fails {
			r.failed += f
		}
		return r
	}
	set = phase("SET", func(c int) error {
		ck, err := s.Write(context.Background(), wire.Key{byte(c), byte(c >> 8)}, value, time.Now().Add(time.Hour))
		if err == nil {
			cookies[c] = ck
		}
		return err
	})
	get = phase("GET", func(c int) error {
		_, err := s.Read(context.Background(), cookies[c])
		return err
	})
	return set, get
}

// benchRedis starts a private redis-server and runs redis-benchmark.
func benchRedis(clients, n, size, port int) (set, get result, err error) {
	p := strconv.Itoa(port)
	srv := exec.Command("redis-server", "--port", p, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "yes")
	if err := srv.Start(); err != nil {
		return set, get, fmt.Errorf("redis-server: %w (apt-get install redis-server)", err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	for range 200 {
		if c, err := net.Dial("tcp", "127.0.0.1:"+p); err == nil {
			c.Close()
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	out, err := exec.Command("redis-benchmark", "-h", "127.0.0.1", "-p", p, "-d", strconv.Itoa(size),
		"-t", "set,get", "-n", strconv.Itoa(n), "-c", strconv.Itoa(clients), "--csv").Output()
	if err != nil {
		return set, get, fmt.Errorf("redis-benchmark: %w", err)
	}
	rows, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
	if err != nil {
		return set, get, fmt.Errorf("redis-benchmark output: %w", err)
	}
	for _, row := range rows[1:] {
		if len(row) < 7 {
			continue
		}
		rps, _ := strconv.ParseFloat(row[1], 64)
		p99, _ := strconv.ParseFloat(row[6], 64)
		r := result{name: row[0], opsPerSec: rps, p99: time.Duration(p99 * float64(time.Millisecond))}
		switch row[0] {
		case "SET":
			set = r
		case "GET":
			get = r
		}
	}
	if set.opsPerSec == 0 || get.opsPerSec == 0 {
		return set, get, fmt.Errorf("redis-benchmark printed no SET/GET rows: %s", out)
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
	addrs, stop, err := startBricks()
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

type appResult struct {
	opsPerSec float64
	p50, p99  time.Duration
	failed    int
}

func driveApp(backend app.Backend, clients, n int) (appResult, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return appResult{}, err
	}
	srv := &http.Server{Handler: app.Handler(backend, app.DefaultConfig())}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: 5 * time.Second}
	lat := make([][]time.Duration, clients)
	fails := make([]int, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := &app.User{Name: fmt.Sprintf("user%d", c)}
			for i := c; i < n; i += clients {
				method, path, cookie := u.Next()
				req, _ := http.NewRequest(method, base+path, nil)
				if cookie != "" {
					req.Header.Set(app.HeaderCookie, cookie)
				}
				t := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					fails[c]++
					u.Abandon(method)
					continue
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					fails[c]++
					u.Abandon(method)
					continue
				}
				if u.Judge(method, resp.StatusCode, resp.Header, body) != app.VerdictOK {
					fails[c]++
					continue
				}
				lat[c] = append(lat[c], time.Since(t))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lat...)
	if len(all) == 0 {
		return appResult{}, fmt.Errorf("no request succeeded")
	}
	slices.Sort(all)
	r := appResult{opsPerSec: float64(len(all)) / elapsed.Seconds(), p50: all[len(all)/2], p99: all[len(all)*99/100]}
	for _, f := range fails {
		r.failed += f
	}
	return r, nil
}
