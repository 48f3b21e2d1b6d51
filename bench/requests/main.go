// Command requests measures what templated requests and response checks
// cost the http driver, side by side in one run against one nginx on
// loopback: plain GETs vs POSTs whose 1 KiB JSON body is rendered from a
// template ({{seq}}, a Zipf key in base64, a random payload) and whose
// JSON answer is checked at two JSON paths, one against a template. nginx
// answers both with the same small JSON document built from the request
// line ($request_method, $uri), so the server does the same work and the
// difference is the client's (and the 1 KiB more on the wire). -plain
// /static makes the GETs fetch a 1 KiB file instead: on this machine
// nginx serves that several times slower than its "return", so it
// measures nginx, not faultbench.
//
//	apt-get install nginx-light
//	go run ./bench/requests                      # 5 alternating reps of 3 s
//	go run ./bench/requests -reps 3 -duration 2s
//
// Load is closed-loop (workload.model closed, think 0): -users users a
// client, -clients clients, keep-alive, so each side runs as fast as the
// pair (client, nginx) allows. The two sides alternate within every
// repetition so the machine's load hits both alike; medians are printed,
// and the ratio of the medians. Every attempt of a templated run must be
// ok (a failed check would mean the bench measured errors).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/workload"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "requests:", err)
		os.Exit(1)
	}
}

func run() error {
	duration := flag.Duration("duration", 3*time.Second, "length of each measured run")
	reps := flag.Int("reps", 5, "repetitions of each side (median reported)")
	clients := flag.Int("clients", 2, "client emulators")
	users := flag.Int("users", 16, "closed-loop users per client")
	bin := flag.String("nginx", "/usr/sbin/nginx", "nginx binary")
	plain := flag.String("plain", "/api/plain", "what the plain side GETs: /api/plain (the POSTs' nginx return, same server work) or /static (a 1 KiB file)")
	flag.Parse()
	n, err := startNginx(*bin, *plain)
	if err != nil {
		return err
	}
	defer n.stop()
	sides := []struct {
		name string
		cfg  func(workload.Config) workload.Config
	}{
		{"plain GET " + *plain, func(c workload.Config) workload.Config { c.Trace = "paths:" + n.paths; return c }},
		{"templated POST 1 KiB JSON + 2 JSON-path checks", func(c workload.Config) workload.Config { c.Requests = templated; return c }},
	}
	results := make([][]result, len(sides))
	for rep := range *reps {
		for i, s := range sides {
			cfg := s.cfg(workload.Config{Model: workload.ModelClosed, Users: *users, Think: "0", Clients: *clients,
				Keepalive: true, Seed: int64(rep + 1), Targets: []workload.Target{{Node: 1, Addr: n.addr}}})
			r, err := measure(cfg, *duration)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			if r.notOK > 0 {
				return fmt.Errorf("%s: %d of %d attempts not ok (first failed check %q)", s.name, r.notOK, r.notOK+r.ok, r.firstCheck)
			}
			results[i] = append(results[i], r)
		}
	}
	fmt.Printf("nginx %s, %d clients x %d users, keep-alive, %d reps of %s (median)\n\n", n.addr, *clients, *users, *reps, *duration)
	fmt.Printf("| side | ok/s | p50 latency | p99 latency |\n|---|---|---|---|\n")
	var rates []float64
	for i, s := range sides {
		rate := median(results[i], func(r result) float64 { return r.perS })
		rates = append(rates, rate)
		fmt.Printf("| %s | %.0f | %s | %s |\n", s.name, rate,
			time.Duration(median(results[i], func(r result) float64 { return r.p50 })).Round(time.Microsecond),
			time.Duration(median(results[i], func(r result) float64 { return r.p99 })).Round(time.Microsecond))
	}
	fmt.Printf("\nratio templated/plain (ok/s): %.2f\n", rates[1]/rates[0])
	return nil
}

// templated is the POST side: a 1 KiB JSON body and two JSON-path checks.
var templated = []workload.RequestSpec{{
	Name: "post", Method: "POST", Path: "/api/items/{{seq}}",
	Headers: map[string]string{"Content-Type": "application/json"},
	Body:    `{"id": {{seq}}, "key": "{{base64}}user{{user}}-k{{key zipf:10000:1.1}}{{end}}", "data": "{{payload 950}}"}`,
	Expect: workload.ExpectSpec{Status: []int{200},
		JSON: map[string]string{"$.method": "POST", "$.uri": "/api/items/{{seq}}"}},
}}

type result struct {
	ok, notOK  int64
	perS       float64
	p50, p99   float64 // nanoseconds
	firstCheck string
}

// sink keeps every latency (a few hundred thousand at most) for exact percentiles.
type sink struct {
	mu    sync.Mutex
	lats  []float64
	ok    int64
	notOK int64
	check string
}

func (s *sink) Record(r record.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Outcome == record.OK {
		s.ok++
		s.lats = append(s.lats, r.LatencyS*1e9)
		return
	}
	s.notOK++
	if s.check == "" {
		s.check = r.Check + " " + r.Outcome.String()
	}
}

func measure(cfg workload.Config, d time.Duration) (result, error) {
	s := &sink{lats: make([]float64, 0, 1<<20)}
	if err := workload.Run(context.Background(), cfg, time.Now(), d, s); err != nil {
		return result{}, err
	}
	slices.Sort(s.lats)
	q := func(p float64) float64 {
		if len(s.lats) == 0 {
			return 0
		}
		return s.lats[min(len(s.lats)-1, int(p*float64(len(s.lats))))]
	}
	return result{ok: s.ok, notOK: s.notOK, perS: float64(s.ok) / d.Seconds(), p50: q(0.5), p99: q(0.99), firstCheck: s.check}, nil
}

func median(rs []result, f func(result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

type nginx struct {
	cmd   *exec.Cmd
	dir   string
	addr  string
	paths string // a paths: trace file naming the static file
}

func startNginx(bin, plainPath string) (*nginx, error) {
	dir, err := os.MkdirTemp("", "faultbench-requests-")
	if err != nil {
		return nil, err
	}
	os.Chmod(dir, 0o755)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	if err := os.MkdirAll(filepath.Join(dir, "www"), 0o755); err != nil {
		return nil, err
	}
	os.WriteFile(filepath.Join(dir, "www", "static"), []byte(strings.Repeat("x", 1024)), 0o644)
	paths := filepath.Join(dir, "paths.txt")
	os.WriteFile(paths, []byte(plainPath+"\n"), 0o644)
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(nginxConf, dir, port)), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log"))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting nginx (apt-get install nginx-light): %w", err)
	}
	n := &nginx{cmd: cmd, dir: dir, addr: fmt.Sprintf("127.0.0.1:%d", port), paths: paths}
	for range 100 { // up to 5 s for nginx to listen
		if c, err := net.DialTimeout("tcp", n.addr, time.Second); err == nil {
			c.Close()
			return n, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.stop()
	return nil, errors.New("nginx did not listen within 5s; see " + filepath.Join(dir, "error.log"))
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

const nginxConf = `# written by bench/requests
worker_processes 1;
daemon off;
pid %[1]s/nginx.pid;
events { worker_connections 65536; }
http {
    access_log off;
    client_body_temp_path %[1]s/tmp;
    proxy_temp_path %[1]s/tmp;
    fastcgi_temp_path %[1]s/tmp;
    uwsgi_temp_path %[1]s/tmp;
    scgi_temp_path %[1]s/tmp;
    keepalive_requests 1000000;
    client_body_buffer_size 16k;
    server {
        listen 127.0.0.1:%[2]d backlog=4096;
        root %[1]s/www;
        location /api/ {
            default_type application/json;
            return 200 '{"ok": true, "method": "$request_method", "uri": "$uri"}';
        }
    }
}
`
