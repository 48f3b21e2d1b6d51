// Package static is the simplest reference node: an independent web server
// for the synthetic page set of package pageset. Nodes share nothing, so a
// fault on one node affects only the requests sent to it — the baseline
// against which cooperative systems like press are compared.
//
// Routes: GET /p/<i> for 0 <= i < pages (200, the page; 404 beyond),
// GET /health (200 "ok").
package static

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/node"
	"github.com/faultbench/faultbench/internal/pageset"
)

// Kind is the node kind name: `faultbench node static`.
const Kind = "static"

func init() { node.Register(Kind, Serve) }

// Handler serves the page set of cfg.
func Handler(cfg node.Config) http.Handler {
	pages, size := cfg.Pages, cfg.PageSize
	if pages <= 0 {
		pages = node.DefaultPages
	}
	if size <= 0 {
		size = node.DefaultPageSize
	}
	bufs := sync.Pool{New: func() any { b := make([]byte, 0, pageset.Size(pages, size)); return &b }}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /p/{i}", func(w http.ResponseWriter, r *http.Request) {
		i, ok := pageset.ParsePath(r.URL.Path)
		if !ok || i >= pages {
			http.NotFound(w, r)
			return
		}
		bp := bufs.Get().(*[]byte)
		b := pageset.Append((*bp)[:0], i, size)
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		_, _ = w.Write(b)
		*bp = b
		bufs.Put(bp)
	})
	return mux
}

// Serve listens on cfg.Listen and serves until ctx ends. A listen failure
// (address in use, not a local address) is returned at once.
func Serve(ctx context.Context, cfg node.Config) error {
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("node %d: %w", cfg.Node, err)
	}
	srv := &http.Server{Handler: Handler(cfg), ReadHeaderTimeout: 10 * time.Second}
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
