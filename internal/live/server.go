package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ErrAddr wraps every error of Listen: the address is bad input.
var ErrAddr = errors.New("listen address")

// Listen binds addr for the flag named flag (e.g. "--metrics"), before
// the run starts, so that an address in use is an error before anything
// runs. Without allowRemote the address must be a loopback address
// (127.0.0.0/8, ::1, or localhost): the endpoint tells anyone who can
// reach it what the experiment is doing.
func Listen(flag, addr string, allowRemote bool) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %q: %v (want HOST:PORT, e.g. 127.0.0.1:9464)", ErrAddr, flag, addr, err)
	}
	if !allowRemote && !loopback(host) {
		return nil, fmt.Errorf("%w: %s %q is not on loopback: use 127.0.0.1:PORT, or pass --allow-remote to serve other hosts", ErrAddr, flag, addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %s: %v (is another program, or another run, using it?)", ErrAddr, flag, addr, err)
	}
	return l, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// Server serves a Hub over HTTP: /metrics (Prometheus text or protobuf
// exposition), and the live page at / with its data at /state.json.
type Server struct {
	srv  *http.Server
	done chan struct{}
}

// Handler is the Hub's HTTP handler: /metrics, / and /state.json.
func (h *Hub) Handler() http.Handler {
	return handler(h.Registry(), func() any { return h.State() })
}

// handler serves g at /metrics, the live page at / and state's answer,
// as JSON, at /state.json: a run's Hub and a sweep's Relay alike.
func handler(g prometheus.Gatherer, state func() any) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{
		EnableOpenMetrics: true, Timeout: 5 * time.Second, MaxRequestsInFlight: 4}))
	mux.HandleFunc("/state.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(state())
	})
	mux.HandleFunc("/{$}", servePage)
	return mux
}

// Serve serves h on l until Close.
func (h *Hub) Serve(l net.Listener) *Server { return serve(l, h.Handler()) }

func serve(l net.Listener, hd http.Handler) *Server {
	s := &Server{srv: &http.Server{Handler: hd, ReadHeaderTimeout: 5 * time.Second}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(l)
	}()
	return s
}

// Linger waits d (a final scrape after the run) or until ctx ends, so
// that Ctrl-C during the linger ends it at once.
func Linger(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Close stops the server, giving the requests under way a second to
// finish. Safe on a nil Server.
func (s *Server) Close() error {
	if s == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = s.srv.Close()
	}
	<-s.done
	return err
}
