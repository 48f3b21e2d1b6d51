// Command press compares a 4-node press cluster with Debian's nginx-light
// serving the same page set on the same machine, both driven by the same
// load generator (wrk, one instance per node address, in one run), and
// measures each press node's memory (RSS) on the default page set
// (docs/benchmarks.md, "PRESS"; docs/architecture.md: real peers, ratios).
//
//	go build -o /tmp/fb ./cmd/faultbench
//	go run ./bench/press -fb /tmp/fb [-rounds 5] [-d 5s] [-close]
//
// Throughput: pages 0..999 (26 KiB each), fewer than a node's cache, so
// after a warm-up that asks every node for every page every request is a
// local cache hit. nginx runs 4 workers listening on 4 addresses, one per
// press node. Rounds alternate the servers so that load from other jobs on
// a shared machine does not bias one side; medians are reported. -close
// sends "Connection: close" (a connection per request, as faultbench's
// clients do by default) instead of keep-alive.
//
// Memory: an ha cluster on the default page set (18,000 pages, 1,200
// cached per node) under a Zipf(1.0) request stream until the caches are
// full; RSS of every node process, and where requests were served from.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/pageset"
	"github.com/faultbench/faultbench/internal/systems/press"
	"github.com/faultbench/faultbench/internal/testbed"
	"github.com/faultbench/faultbench/internal/testbed/local"
)

type options struct {
	fb, nginx, wrk string
	rounds         int
	dur            time.Duration
	conns          int
	close          bool
	pages          int
	pageSize       int
	modes          string
}

func main() {
	var o options
	flag.StringVar(&o.fb, "fb", "", "faultbench binary that runs the press nodes (required)")
	flag.StringVar(&o.nginx, "nginx", "/usr/sbin/nginx", "nginx binary")
	flag.StringVar(&o.wrk, "wrk", "wrk", "wrk binary")
	flag.IntVar(&o.rounds, "rounds", 5, "rounds; medians are reported")
	flag.DurationVar(&o.dur, "d", 5*time.Second, "length of one measurement")
	flag.IntVar(&o.conns, "c", 16, "connections per wrk instance (one instance per node address)")
	flag.BoolVar(&o.close, "close", false, "a connection per request (Connection: close) instead of keep-alive")
	flag.IntVar(&o.pages, "pages", 1000, "page set of the throughput runs (keep it below the 1,200-page cache)")
	flag.IntVar(&o.pageSize, "page-size", 26624, "bytes per page")
	flag.StringVar(&o.modes, "modes", "perf,ha,robust", "press modes to measure")
	flag.Parse()
	if o.fb == "" {
		fmt.Fprintln(os.Stderr, "press bench: -fb FAULTBENCH_BINARY is required (go build -o /tmp/fb ./cmd/faultbench)")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "press bench:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	dir, err := os.MkdirTemp("", "faultbench-bench-press-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755) // nginx's workers may run as another user when we are root
	script := filepath.Join(dir, "pages.lua")
	if err := os.WriteFile(script, []byte(luaScript(o.pages, o.close)), 0o644); err != nil {
		return err
	}
	ng, err := startNginx(o, filepath.Join(dir, "nginx"))
	if err != nil {
		return err
	}
	defer ng.stop()
	servers := []server{{name: "nginx", addrs: ng.addrs}}
	for i, mode := range strings.Split(o.modes, ",") {
		c, err := startPress(o, mode, o.pages, 18080+100*i, filepath.Join(dir, mode))
		if err != nil {
			return err
		}
		defer c.stop()
		if err := warm(c.addrs, o.pages); err != nil {
			return fmt.Errorf("warming press %s: %w", mode, err)
		}
		servers = append(servers, server{name: "press " + mode, addrs: c.addrs})
	}
	load, _ := os.ReadFile("/proc/loadavg")
	conn := "keep-alive"
	if o.close {
		conn = "a connection per request"
	}
	fmt.Printf("# bench/press: %d pages of %d B (all cache hits), wrk -t1 -c%d per address × 4, %s, %v × %d rounds, load average %s\n",
		o.pages, o.pageSize, o.conns, conn, o.dur, o.rounds, strings.Join(strings.Fields(string(load))[:3], " "))
	results := make([][]float64, len(servers))
	for r := range o.rounds {
		order := make([]int, len(servers))
		for i := range order {
			order[i] = (i + r) % len(servers)
		}
		for _, i := range order {
			rps, err := drive(o, script, servers[i].addrs)
			if err != nil {
				return fmt.Errorf("%s: %w", servers[i].name, err)
			}
			results[i] = append(results[i], rps)
		}
	}
	// The ratio of each round (servers measured back to back) is steadier
	// than the ratio of medians when other jobs load the machine.
	fmt.Printf("\n| server | median req/s | runs | median of per-round ratios to nginx |\n|---|---|---|---|\n")
	for i, s := range servers {
		ratios := make([]float64, len(results[i]))
		for r := range ratios {
			ratios[r] = results[i][r] / results[0][r]
		}
		fmt.Printf("| %s | %.0f | %s | %.2f |\n", s.name, median(results[i]), fmtRuns(results[i]), median(ratios))
	}
	return memory(o, filepath.Join(dir, "mem"))
}

type server struct {
	name  string
	addrs []string
}

// drive runs one wrk per address at once for o.dur and returns the summed
// requests per second; any non-2xx answer or socket error is an error, so
// a ratio is never computed over failures.
func drive(o options, script string, addrs []string) (float64, error) {
	type res struct {
		rps float64
		err error
	}
	ch := make(chan res, len(addrs))
	for _, a := range addrs {
		go func() {
			out, err := exec.Command(o.wrk, "-t1", "-c"+strconv.Itoa(o.conns), "-d"+o.dur.String(), "--timeout", "5s",
				"-s", script, "http://"+a+"/").CombinedOutput()
			if err != nil {
				ch <- res{err: fmt.Errorf("wrk %s: %v: %s", a, err, out)}
				return
			}
			ch <- parseWrk(string(out))
		}()
	}
	var total float64
	var errs []error
	for range addrs {
		r := <-ch
		total += r.rps
		errs = append(errs, r.err)
	}
	return total, errors.Join(errs...)
}

var (
	reRPS    = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	reNon2xx = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	reSock   = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

func parseWrk(out string) (r struct {
	rps float64
	err error
}) {
	m := reRPS.FindStringSubmatch(out)
	if m == nil {
		r.err = fmt.Errorf("no Requests/sec in wrk output: %s", out)
		return
	}
	r.rps, _ = strconv.ParseFloat(m[1], 64)
	if m := reNon2xx.FindStringSubmatch(out); m != nil {
		r.err = fmt.Errorf("%s non-2xx answers", m[1])
	}
	if m := reSock.FindStringSubmatch(out); m != nil && (m[1] != "0" || m[4] != "0") {
		r.err = fmt.Errorf("wrk socket errors: %s", m[0])
	}
	return
}

// luaScript makes wrk ask for a uniformly random page of 0..pages-1.
func luaScript(pages int, closeConn bool) string {
	s := fmt.Sprintf("math.randomseed(os.time())\nrequest = function()\n  return wrk.format(\"GET\", \"/p/\" .. math.random(0, %d))\nend\n", pages-1)
	if closeConn {
		s = "wrk.headers[\"Connection\"] = \"close\"\n" + s
	}
	return s
}

type cluster struct {
	c     *local.Processes
	rig   testbed.Rig
	addrs []string
	tgt   press.ControlLever
}

func (c *cluster) stop() {
	c.c.Stop()
	c.rig.Close()
}

// startPress starts a 4-node press cluster the way `faultbench run` does
// (the press rig: faultnet proxies, per-node addresses, control token).
func startPress(o options, mode string, pages, port int, dir string) (*cluster, error) {
	spec := testbed.Spec{System: press.Kind, Mode: mode, Nodes: 4, Port: port, Dir: dir, Pages: pages, PageSize: o.pageSize,
		Executable: o.fb, ReadyTimeout: 15 * time.Second, Options: map[string]string{"events": "none"}}
	system, err := testbed.LookupSystem(press.Kind)
	if err != nil {
		return nil, err
	}
	plan, err := local.Backend{}.Plan(spec)
	if err != nil {
		return nil, err
	}
	rig, err := system.Rig(&spec, plan, 1)
	if err != nil {
		return nil, err
	}
	started, err := local.Backend{}.Start(context.Background(), spec, plan, nil)
	if err != nil {
		rig.Close()
		return nil, fmt.Errorf("press %s: %w", mode, err)
	}
	c := started.(*local.Processes)
	tgt, ok := fault.As[press.ControlLever](rig.Target(c))
	if !ok {
		c.Stop()
		rig.Close()
		return nil, fmt.Errorf("press %s: the rig offers no control lever", mode)
	}
	out := &cluster{c: c, rig: rig, tgt: tgt}
	for _, n := range c.Nodes() {
		out.addrs = append(out.addrs, n.Addr)
	}
	return out, nil
}

// warm asks every node for every page once, so each caches the whole set.
func warm(addrs []string, pages int) error {
	client := &http.Client{Timeout: 5 * time.Second}
	for _, a := range addrs {
		for p := range pages {
			resp, err := client.Get("http://" + a + pageset.Path(p))
			if err != nil {
				return err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("GET %s%s: %s", a, pageset.Path(p), resp.Status)
			}
		}
	}
	return nil
}

// memory drives an ha cluster on the default page set with a Zipf(1.0)
// stream until every cache is full and reports RSS per node and the
// sources of the answers.
func memory(o options, dir string) error {
	pages := 18000
	c, err := startPress(o, "ha", pages, 18480, dir)
	if err != nil {
		return err
	}
	defer c.stop()
	script := filepath.Join(filepath.Dir(dir), "zipf.lua")
	if err := os.WriteFile(script, []byte(zipfScript(pages, 1.0)), 0o644); err != nil {
		return err
	}
	mo := o
	mo.dur = 15 * time.Second
	mo.conns = 8
	rps, err := drive(mo, script, c.addrs)
	if err != nil {
		return err
	}
	fmt.Printf("\n# memory: ha, 18,000 pages × %d B, cache 1,200 pages per node, Zipf(1.0) at %.0f req/s for %v\n\n", o.pageSize, rps, mo.dur)
	fmt.Printf("| node | RSS (MiB) | cached pages | hits | remote | disk |\n|---|---|---|---|---|---|\n")
	var rss []float64
	pids := c.c.Pids()
	for i := range c.addrs {
		st, err := status(c.tgt, i+1)
		if err != nil {
			return err
		}
		m := rssMiB(pids[i])
		rss = append(rss, m)
		total := float64(st.Stats.Hits + st.Stats.Remote + st.Stats.Disk)
		fmt.Printf("| %d | %.1f | %d | %.2f | %.2f | %.2f |\n", i+1, m, st.CachePages,
			float64(st.Stats.Hits)/total, float64(st.Stats.Remote)/total, float64(st.Stats.Disk)/total)
	}
	fmt.Printf("\nmedian RSS per node: %.1f MiB\n", median(rss))
	return nil
}

func status(c press.ControlLever, node int) (press.Status, error) {
	var st press.Status
	addr, token, err := c.PressControl(node)
	if err != nil {
		return st, err
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/status", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

func rssMiB(pid int) float64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// zipfScript samples page i with probability ∝ 1/(i+1)^s by binary search
// over the cumulative weights.
func zipfScript(pages int, s float64) string {
	return fmt.Sprintf(`math.randomseed(os.time())
local n, s = %d, %g
local cdf, sum = {}, 0
for i = 1, n do sum = sum + 1 / i ^ s; cdf[i] = sum end
request = function()
  local u, lo, hi = math.random() * sum, 1, n
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if cdf[mid] < u then lo = mid + 1 else hi = mid end
  end
  return wrk.format("GET", "/p/" .. (lo - 1))
end
`, pages, s)
}

type nginxProc struct {
	cmd   *exec.Cmd
	addrs []string
}

// startNginx serves the same pages (pageset bodies, so the bytes match
// press's) with 4 workers on 4 loopback addresses, one per press node.
func startNginx(o options, dir string) (*nginxProc, error) {
	www := filepath.Join(dir, "www", "p")
	if err := os.MkdirAll(www, 0o755); err != nil {
		return nil, err
	}
	os.Chmod(dir, 0o755)
	for p := range o.pages {
		if err := os.WriteFile(filepath.Join(www, strconv.Itoa(p)), pageset.Body(p, o.pageSize), 0o644); err != nil {
			return nil, err
		}
	}
	// Four hosts of the local backend's plan, numbered apart from press's
	// own nodes (FirstHost 41), so both can run at once.
	plan, err := local.Backend{}.Plan(testbed.Spec{System: "static", Nodes: 4, FirstHost: 41})
	if err != nil {
		return nil, err
	}
	n := &nginxProc{}
	var listen strings.Builder
	for _, h := range plan.Hosts {
		a := net.JoinHostPort(h, "8380")
		n.addrs = append(n.addrs, a)
		fmt.Fprintf(&listen, "        listen %s backlog=4096;\n", a)
	}
	conf := fmt.Sprintf(nginxConf, dir, listen.String())
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	n.cmd = exec.Command(o.nginx, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "error.log"))
	n.cmd.Stderr = os.Stderr
	if err := n.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting nginx (apt-get install nginx-light wrk): %w", err)
	}
	for range 100 { // up to 5 s
		if c, err := net.DialTimeout("tcp", n.addrs[3], time.Second); err == nil {
			c.Close()
			return n, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.stop()
	return nil, errors.New("nginx did not listen within 5s; see " + filepath.Join(dir, "error.log"))
}

func (n *nginxProc) stop() {
	n.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { n.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		n.cmd.Process.Kill()
		<-done
	}
}

const nginxConf = `# written by bench/press
worker_processes 4;
daemon off;
pid %[1]s/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    error_log %[1]s/error.log warn;
    client_body_temp_path %[1]s/tmp;
    proxy_temp_path %[1]s/tmp;
    fastcgi_temp_path %[1]s/tmp;
    uwsgi_temp_path %[1]s/tmp;
    scgi_temp_path %[1]s/tmp;
    keepalive_requests 1000000;
    default_type text/html;
    sendfile on;
    server {
%[2]s        root %[1]s/www;
    }
}
`

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fmtRuns(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strings.Join(parts, " ")
}
