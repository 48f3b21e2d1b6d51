// Package lb is a small round-robin HTTP load balancer node, `faultbench
// node lb`: the entry point of the example compose stack
// (examples/compose), in front of replicas that it health-checks.
//
// It forwards each request to the next healthy backend in turn. The
// backends are --peers HOST:PORT; a HOST that resolves to several
// addresses (a compose service's replicas, through the engine's DNS) is
// one backend per address, looked up again at every health round, so a
// replica that comes and goes is followed. A backend is healthy after
// `rise` answers 200 to GET `health` in a row and unhealthy after `fall`
// failures in a row; a request whose connection to its backend fails
// (refused, reset before an answer) marks that backend down at once and
// goes to the next one, once. With no healthy backend the answer is 503.
//
// Options (--option KEY=VALUE): health (path, default /health), interval
// (between health rounds, default 500ms), timeout (of a health check and
// of a backend's answer headers, default 2s), rise (default 1), fall
// (default 2).
package lb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/node"
)

// Kind is the node kind: `faultbench node lb`.
const Kind = "lb"

func init() { node.Register(Kind, Serve) }

// Config is the balancer's typed options.
type Config struct {
	Backends []string // HOST:PORT
	Health   string
	Interval time.Duration
	Timeout  time.Duration
	Rise     int
	Fall     int
}

// ConfigOf reads a node's flags and options.
func ConfigOf(cfg node.Config) (Config, error) {
	c := Config{Backends: cfg.Peers, Health: "/health", Interval: 500 * time.Millisecond, Timeout: 2 * time.Second, Rise: 1, Fall: 2}
	for k, v := range cfg.Options {
		var err error
		switch k {
		case "health":
			c.Health = v
		case "interval":
			c.Interval, err = time.ParseDuration(v)
		case "timeout":
			c.Timeout, err = time.ParseDuration(v)
		case "rise":
			c.Rise, err = strconv.Atoi(v)
		case "fall":
			c.Fall, err = strconv.Atoi(v)
		default:
			return c, fmt.Errorf("%w: lb: unknown option %q (known: health, interval, timeout, rise, fall)", node.ErrConfig, k)
		}
		if err != nil {
			return c, fmt.Errorf("%w: lb: option %s=%q: %v", node.ErrConfig, k, v, err)
		}
	}
	return c, c.Validate()
}

// Validate checks the ranges.
func (c Config) Validate() error {
	switch {
	case len(c.Backends) == 0:
		return fmt.Errorf("%w: lb: no backend: give --peers HOST:PORT[,HOST:PORT...]", node.ErrConfig)
	case c.Interval <= 0 || c.Timeout <= 0:
		return fmt.Errorf("%w: lb: interval and timeout must be positive", node.ErrConfig)
	case c.Rise < 1 || c.Fall < 1:
		return fmt.Errorf("%w: lb: rise and fall must be at least 1", node.ErrConfig)
	case len(c.Health) == 0 || c.Health[0] != '/':
		return fmt.Errorf("%w: lb: health %q is not a URL path", node.ErrConfig, c.Health)
	}
	for _, b := range c.Backends {
		if _, _, err := net.SplitHostPort(b); err != nil {
			return fmt.Errorf("%w: lb: backend %q: want HOST:PORT", node.ErrConfig, b)
		}
	}
	return nil
}

// Pool is the backends and their health: a state machine advanced only by
// Resolved (the addresses a round found), Checked (a health answer) and
// Failed (a request's connection failed); Next picks in turn. Safe for
// concurrent use.
type Pool struct {
	rise, fall int

	mu    sync.Mutex
	addrs []string // in the order first seen
	state map[string]*health
	next  int
}

type health struct {
	up         bool
	oks, fails int
}

// NewPool returns an empty pool.
func NewPool(rise, fall int) *Pool {
	return &Pool{rise: rise, fall: fall, state: map[string]*health{}}
}

// Resolved sets the backends' addresses: new ones start down (until a
// check passes), gone ones are forgotten.
func (p *Pool) Resolved(addrs []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	keep := p.addrs[:0:0]
	for _, a := range p.addrs {
		if slices.Contains(addrs, a) {
			keep = append(keep, a)
		} else {
			delete(p.state, a)
		}
	}
	for _, a := range addrs {
		if _, ok := p.state[a]; !ok {
			p.state[a] = &health{}
			keep = append(keep, a)
		}
	}
	p.addrs = keep
}

// Checked records one health check's outcome for addr.
func (p *Pool) Checked(addr string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.state[addr]
	if h == nil {
		return
	}
	if ok {
		h.oks, h.fails = h.oks+1, 0
		h.up = h.up || h.oks >= p.rise
	} else {
		h.oks, h.fails = 0, h.fails+1
		h.up = h.up && h.fails < p.fall
	}
}

// Failed marks addr down at once: a request could not connect to it.
func (p *Pool) Failed(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if h := p.state[addr]; h != nil {
		h.up, h.oks = false, 0
	}
}

// Next is the next healthy backend after the last one picked, skipping
// avoid; false when there is none.
func (p *Pool) Next(avoid string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range p.addrs {
		a := p.addrs[p.next%len(p.addrs)]
		p.next = (p.next + 1) % len(p.addrs)
		if p.state[a].up && a != avoid {
			return a, true
		}
	}
	return "", false
}

// Up lists the healthy backends, in order.
func (p *Pool) Up() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, a := range p.addrs {
		if p.state[a].up {
			out = append(out, a)
		}
	}
	return out
}

// Balancer is the running balancer: a Pool kept by health rounds and an
// http.Handler that forwards.
type Balancer struct {
	cfg       Config
	pool      *Pool
	transport *http.Transport
	proxy     *httputil.ReverseProxy
	resolve   func(ctx context.Context, host string) ([]string, error)
}

// attempt is one forwarding of a request: to which backend, and whether
// it is the retry after a failed connection.
type attempt struct {
	addr    string
	retried bool
}

type attemptKey struct{}

// New returns a balancer for cfg; Run keeps its pool.
func New(cfg Config) *Balancer {
	dialer := &net.Dialer{Timeout: cfg.Timeout}
	b := &Balancer{cfg: cfg, pool: NewPool(cfg.Rise, cfg.Fall),
		transport: &http.Transport{DialContext: dialer.DialContext, ResponseHeaderTimeout: cfg.Timeout,
			MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second},
		resolve: net.DefaultResolver.LookupHost}
	b.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			at := pr.In.Context().Value(attemptKey{}).(*attempt)
			pr.SetURL(&url.URL{Scheme: "http", Host: at.addr})
			pr.Out.Host = pr.In.Host
		},
		Transport:    b.transport,
		ErrorHandler: b.failed,
	}
	return b
}

// Pool is the balancer's pool, for tests.
func (b *Balancer) Pool() *Pool { return b.pool }

// Round resolves every backend and checks each address once, concurrently.
func (b *Balancer) Round(ctx context.Context) {
	var addrs []string
	for _, be := range b.cfg.Backends {
		host, port, _ := net.SplitHostPort(be)
		ips, err := b.resolve(ctx, host)
		if err != nil {
			continue // gone from DNS: every replica of it is down
		}
		for _, ip := range ips {
			addrs = append(addrs, net.JoinHostPort(ip, port))
		}
	}
	b.pool.Resolved(addrs)
	client := http.Client{Transport: b.transport, Timeout: b.cfg.Timeout}
	var wg sync.WaitGroup
	for _, a := range addrs {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+a+b.cfg.Health, nil)
			resp, err := client.Do(req)
			ok := err == nil && resp.StatusCode == http.StatusOK
			if resp != nil {
				_ = resp.Body.Close()
			}
			b.pool.Checked(a, ok)
		})
	}
	wg.Wait()
}

// Run does health rounds every Interval until ctx ends.
func (b *Balancer) Run(ctx context.Context) {
	t := time.NewTicker(b.cfg.Interval)
	defer t.Stop()
	for {
		b.Round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ServeHTTP forwards r to the next healthy backend.
func (b *Balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	addr, ok := b.pool.Next("")
	if !ok {
		http.Error(w, "no healthy backend", http.StatusServiceUnavailable)
		return
	}
	b.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), attemptKey{}, &attempt{addr: addr})))
}

// failed answers a request whose forwarding failed: a connection that
// could not be made marks its backend down and, for a request without a
// body, goes to the next healthy backend, once; anything else is 502.
func (b *Balancer) failed(w http.ResponseWriter, r *http.Request, err error) {
	at := r.Context().Value(attemptKey{}).(*attempt)
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		b.pool.Failed(at.addr)
		if next, ok := b.pool.Next(at.addr); ok && !at.retried && (r.Body == nil || r.Body == http.NoBody) {
			b.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), attemptKey{}, &attempt{addr: next, retried: true})))
			return
		}
	}
	http.Error(w, "backend "+at.addr+": "+err.Error(), http.StatusBadGateway)
}

// Serve listens on cfg.Listen and balances over cfg.Peers until ctx ends.
func Serve(ctx context.Context, ncfg node.Config) error {
	cfg, err := ConfigOf(ncfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", ncfg.Listen)
	if err != nil {
		return fmt.Errorf("lb: %w", err)
	}
	b := New(cfg)
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go b.Run(ctx)
	srv := &http.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}
