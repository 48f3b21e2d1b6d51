// Package raid is the `faultbench node raid` reference system: a RAID-5
// volume (package array) over emulated faulty disks (package disk), with a
// web front end that serves the synthetic page set from the volume and
// appends its access log to it — the read-mostly web workload of Brown &
// Patterson (2000, §3.2).
//
// Routes:
//
//	GET  /p/<i>      page i, read from the volume (exactly pageset.Body(i, size)
//	                 unless replaced by PUT); 503 when the volume cannot produce
//	                 correct bytes, never wrong bytes with 200
//	PUT  /p/<i>      replace page i's stored body (204)
//	GET  /log        the tail of the access log, read back from the volume
//	GET  /health     200 while the volume serves, 503 once it refuses I/O
//	/control/...     the authenticated control API of package control
//
// Disk backing files (disk-<n>.img) and the event log (raid-events.jsonl)
// live in the node's Dir. The volume is formatted afresh at every start:
// the page set is rewritten and earlier PUTs and logs are gone.
//
// The CLI registers the kind by importing this package for its side effect.
package raid

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/node"
	"github.com/faultbench/faultbench/internal/systems/raid/array"
	"github.com/faultbench/faultbench/internal/systems/raid/disk"
)

// Kind is the node kind name: `faultbench node raid`.
const Kind = "raid"

func init() { node.Register(Kind, Serve) }

// Tick is how often the array polls disk presence and advances a
// reconstruction, and how often the access log is flushed to the volume.
const Tick = 100 * time.Millisecond

// Node is an opened raid node: array, store and front end, not yet serving.
type Node struct {
	Settings Settings
	Dir      string // where the disks and the event log are
	Array    *array.Array
	Store    *Store
	srv      *server
	closers  []io.Closer
	tmpDir   string
}

// Open validates cfg (before any side effect), creates the disks in
// cfg.Dir (a temporary directory when empty), assembles the array and
// formats the page set onto it.
func Open(cfg node.Config) (*Node, error) {
	set, err := ParseSettings(cfg)
	if err != nil {
		return nil, err
	}
	n := &Node{Settings: set}
	dir := cfg.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "faultbench-raid-"); err != nil {
			return nil, err
		}
		n.tmpDir = dir
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	n.Dir = dir
	var evw io.Writer
	switch set.EventsPath {
	case "-":
		evw = os.Stdout
	default:
		path := set.EventsPath
		if path == "" {
			path = filepath.Join(dir, "raid-events.jsonl")
		}
		f, err := os.Create(path)
		if err != nil {
			n.Close()
			return nil, fmt.Errorf("event log: %w", err)
		}
		n.closers = append(n.closers, f)
		evw = f
	}
	events := newEventRing(evw, 4096)
	acfg := set.Array
	acfg.OnEvent = events.add
	acfg.FaultIDBase = faultIDBase()
	n.Array, err = array.New(acfg, func(bay int, size int64) (*disk.Disk, error) {
		return disk.Create(filepath.Join(dir, fmt.Sprintf("disk-%d.img", bay)),
			disk.Config{Name: fmt.Sprint(bay), Size: size, Overhead: set.IOOverhead, Timeout: set.IOTimeout})
	})
	if err != nil {
		n.Close()
		return nil, err
	}
	n.closers = append([]io.Closer{n.Array}, n.closers...)
	if n.Store, err = NewStore(n.Array, set.Pages, set.PageSize, set.LogSize); err != nil {
		n.Close()
		return nil, err
	}
	if err := n.Store.Format(); err != nil {
		n.Close()
		return nil, err
	}
	n.srv = &server{arr: n.Array, store: n.Store, events: events, token: set.ControlToken,
		gate: newAdmission(set.MaxRequests, set.MaxQueued, set.QueueWait)}
	n.srv.bufs.New = func() any { b := make([]byte, 0, slotSize(set.PageSize)); return &b }
	return n, nil
}

// faultIDBits is how many low bits of a fault id count the faults of one
// node process; the bits above them are drawn at its start (faultIDBase).
// Ids stay below 2^53, so readers that parse JSON numbers as doubles (jq,
// JavaScript) get them exactly.
const faultIDBits = 21

// faultIDBase draws where this process's fault ids start: a random
// multiple of 2^21 below 2^52, so that the revert of a fault injected
// before a restart (DELETE /control/fault/{id}) finds no fault of the
// restarted node — whose ids used to start at 1 again — and gets 404. It
// comes from crypto/rand, not the scenario's seed: the seed is the same at
// every start of a node, which is exactly when ids must differ. Two starts
// share a base with probability 2^-31.
func faultIDBase() int {
	prefixBits := min(52, strconv.IntSize-1) - faultIDBits
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	prefix := binary.LittleEndian.Uint64(b[:]) & (1<<prefixBits - 1)
	return int(max(prefix, 1)) << faultIDBits
}

// Handler is the node's HTTP front end.
func (n *Node) Handler() http.Handler { return n.srv.handler() }

// Run ticks the array and flushes the access log until ctx ends.
func (n *Node) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { n.Array.Run(ctx, Tick) })
	wg.Go(func() {
		t := time.NewTicker(Tick)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				_ = n.Store.FlushLog()
				return
			case <-t.C:
				_ = n.Store.FlushLog()
			}
		}
	})
	wg.Wait()
}

// Close closes the disks and the event log, and removes a temporary Dir.
func (n *Node) Close() error {
	var errs []error
	for _, c := range n.closers {
		errs = append(errs, c.Close())
	}
	n.closers = nil
	if n.tmpDir != "" {
		errs = append(errs, os.RemoveAll(n.tmpDir))
		n.tmpDir = ""
	}
	return errors.Join(errs...)
}

// HTTP server timeouts: none of them shortens a request at work on the
// volume (admission bounds those); they reclaim the sockets of clients that
// stall — a header or body that never ends, a response nobody reads, an
// idle keep-alive connection — which otherwise hold an fd and a goroutine
// for ever. All are longer than any faultbench client timeout, so a hung
// disk (pattern D) still looks like a timeout to the client, not a reset.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second // a PUT body is at most a page slot
	writeTimeout      = 60 * time.Second
	idleTimeout       = 30 * time.Second
)

// httpServer is the node's HTTP server: its handler, the timeouts above,
// and a count of open connections for the status.
func (n *Node) httpServer() *http.Server {
	return &http.Server{Handler: n.Handler(), ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout, ConnState: n.srv.connState}
}

// Serve runs a raid node on cfg.Listen until ctx ends. Bad options and a
// listen failure are returned at once.
func Serve(ctx context.Context, cfg node.Config) error {
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("node %d: %w", cfg.Node, err)
	}
	return serveOn(ctx, ln, cfg)
}

// serveOn is Serve on a listener it takes over (and closes).
func serveOn(ctx context.Context, ln net.Listener, cfg node.Config) error {
	n, err := Open(cfg)
	if err != nil {
		ln.Close()
		return fmt.Errorf("node %d: %w", cfg.Node, err)
	}
	defer n.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { n.Run(ctx) })
	defer wg.Wait()
	srv := n.httpServer()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		cancel()
		return err
	case <-ctx.Done():
		// Close the disks first so requests stuck on a hung disk end.
		cancel()
		shutdown, stop := context.WithTimeout(context.Background(), time.Second)
		defer stop()
		_ = n.Array.Close()
		_ = srv.Shutdown(shutdown)
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}
