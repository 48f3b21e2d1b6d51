// Package ssm is faultbench's SSM: the session-state store of Ling, Kıcıman
// and Fox (2004) and its node programs. Importing it registers three
// node kinds:
//
//	faultbench node ssm-brick   a brick: session state in memory (package brick)
//	faultbench node ssm-app     the stateless session front end (package app)
//	faultbench node ssm         either, by node number: the nodes in option
//	                            apps (default "1") are front ends dialling
//	                            every other node of --peers (or brick.J),
//	                            the rest are bricks — a whole cluster as one kind
//
// The parts live in subpackages: wire (the stub↔brick frames), brick, stub
// (the client library, a deterministic Core plus sockets), app (the HTTP
// session protocol and its ssm/memory/file backends) and pinpoint (the
// anomaly detector that restarts misbehaving bricks). See docs/ssm.md.
//
// Node options (node.Config.Options, `--option key=value`):
//
//	ssm-brick: control_token, beacon_interval (100ms), generation (1s),
//	           max_value (262144), inbox (65536), discard_expired (true),
//	           exit_on_corrupt (false), slow (0s), procs (1), seed (0); for
//	           style=passive also w (3, the degree), replicas (the other
//	           bricks' addresses), backup_interval (10ms), beacon_timeout
//	           (500ms)
//	ssm-app:   backend (ssm | memory | file), bricks (comma-separated
//	           addresses, required for ssm; may be faultnet proxies),
//	           style (active | passive), w (3), wq (2), r (2), timeout
//	           (60ms), aimd (true), beacon_timeout (500ms), state_size
//	           (8192), session_ttl (30m), file_dir (default
//	           <dir>/sessions), seed (0)
//
// A brick's id is its node number; it serves the stub protocol and HTTP
// (/health, /stats, /control) on its one listen address. The testbed gives
// every node the same options, so each role ignores the other's options;
// a name no SSM node knows is an error.
package ssm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/node"
	"github.com/faultbench/faultbench/internal/systems/ssm/app"
	"github.com/faultbench/faultbench/internal/systems/ssm/brick"
	"github.com/faultbench/faultbench/internal/systems/ssm/stub"
)

// Node kinds.
const (
	BrickKind = "ssm-brick"
	AppKind   = "ssm-app"
	// ClusterKind runs either role, so that a whole SSM cluster can be one
	// node kind: the nodes listed in option apps (default "1") are front
	// ends, every other node is a brick.
	ClusterKind = "ssm"
)

// CrashExit is the exit status of a brick that crashes on purpose (the crash
// control action, or exit_on_corrupt).
const CrashExit = 70

func init() {
	node.Register(BrickKind, ServeBrick)
	node.Register(AppKind, ServeApp)
	node.Register(ClusterKind, Serve)
}

// Roles splits a ClusterKind cluster: the front-end node numbers (option
// apps, default "1") and the brick node numbers (every other node of
// --peers, ascending).
func Roles(cfg node.Config) (apps, bricks []int, err error) {
	spec := cfg.Options["apps"]
	if spec == "" {
		spec = "1"
	}
	n := len(cfg.Peers)
	for _, f := range strings.Split(spec, ",") {
		id, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || id < 1 || (n > 0 && id > n) {
			return nil, nil, fmt.Errorf("%s node %d: option apps=%q: want node numbers in 1..%d, comma-separated", ClusterKind, cfg.Node, spec, n)
		}
		if !slices.Contains(apps, id) {
			apps = append(apps, id)
		}
	}
	for id := 1; id <= n; id++ {
		if !slices.Contains(apps, id) {
			bricks = append(bricks, id)
		}
	}
	if n > 0 && len(bricks) == 0 {
		return nil, nil, fmt.Errorf("%s node %d: option apps=%q leaves no node to be a brick", ClusterKind, cfg.Node, spec)
	}
	return apps, bricks, nil
}

// Serve runs node cfg.Node in its role (see ClusterKind). A front end
// without option bricks dials every brick node J at option brick.J when set
// (the faultnet proxy for link front end → J) and at its --peers entry
// otherwise.
func Serve(ctx context.Context, cfg node.Config) error {
	apps, bricks, err := Roles(cfg)
	if err != nil {
		return err
	}
	if !slices.Contains(apps, cfg.Node) {
		if cfg.Options["replicas"] == "" {
			// The passive style's peers: every other brick, at its own
			// address (brick-to-brick traffic has no faultnet proxy).
			var addrs []string
			for _, j := range bricks {
				if j != cfg.Node {
					addrs = append(addrs, cfg.Peers[j-1])
				}
			}
			opts := maps.Clone(cfg.Options)
			if opts == nil {
				opts = map[string]string{}
			}
			opts["replicas"] = strings.Join(addrs, ",")
			cfg.Options = opts
		}
		return ServeBrick(ctx, cfg)
	}
	if cfg.Options["bricks"] == "" {
		var addrs []string
		for _, j := range bricks {
			addr := cfg.Options["brick."+strconv.Itoa(j)]
			if addr == "" {
				addr = cfg.Peers[j-1]
			}
			addrs = append(addrs, addr)
		}
		opts := maps.Clone(cfg.Options)
		if opts == nil {
			opts = map[string]string{}
		}
		opts["bricks"] = strings.Join(addrs, ",")
		cfg.Options = opts
	}
	return ServeApp(ctx, cfg)
}

// options reads typed values from node options, collecting every problem.
type options struct {
	kind string
	node int
	m    map[string]string
	used map[string]bool
	errs []error
}

func newOptions(kind string, cfg node.Config) *options {
	return &options{kind: kind, node: cfg.Node, m: cfg.Options, used: map[string]bool{}}
}

func (o *options) raw(key string) (string, bool) {
	o.used[key] = true
	v, ok := o.m[key]
	return v, ok
}

func (o *options) bad(key, v, want string) {
	o.errs = append(o.errs, fmt.Errorf("%s node %d: option %s=%q: want %s", o.kind, o.node, key, v, want))
}

func (o *options) duration(key string, p *time.Duration) {
	if v, ok := o.raw(key); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			o.bad(key, v, "a duration like 60ms")
			return
		}
		*p = d
	}
}

func (o *options) int(key string, p *int) {
	if v, ok := o.raw(key); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			o.bad(key, v, "an integer")
			return
		}
		*p = n
	}
}

func (o *options) int64(key string, p *int64) {
	if v, ok := o.raw(key); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			o.bad(key, v, "an integer")
			return
		}
		*p = n
	}
}

func (o *options) bool(key string, p *bool) {
	if v, ok := o.raw(key); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			o.bad(key, v, "true or false")
			return
		}
		*p = b
	}
}

func (o *options) string(key string, p *string) {
	if v, ok := o.raw(key); ok {
		*p = v
	}
}

// list reads comma-separated entries, blanks dropped.
func (o *options) list(key string, p *[]string) {
	if v, ok := o.raw(key); ok {
		for _, a := range strings.Split(v, ",") {
			if a = strings.TrimSpace(a); a != "" {
				*p = append(*p, a)
			}
		}
	}
}

// style reads option style (active | passive) as "is passive".
func (o *options) style(passive *bool) {
	if v, ok := o.raw("style"); ok {
		st, err := stub.ParseStyle(v)
		if err != nil {
			o.bad("style", v, "active or passive")
			return
		}
		*passive = st == stub.Passive
	}
}

// The testbed gives every node of a cluster the same options, so a role
// ignores the options the other role reads and rejects only names no SSM
// node knows. Which names each role reads is found by running its reader
// (readBrick, readApp) once on no options, so a new option is known to
// both roles the moment one reads it. Every read is unconditional.
var knownOptions = sync.OnceValue(func() map[string]bool {
	known := map[string]bool{"apps": true} // the cluster's own; and brick.J
	o := newOptions(BrickKind, node.Config{})
	readBrick(o, new(brick.Config))
	maps.Copy(known, o.used)
	o = newOptions(AppKind, node.Config{})
	readApp(o, new(AppSettings))
	maps.Copy(known, o.used)
	return known
})

func knownOption(k string) bool {
	return strings.HasPrefix(k, "brick.") || knownOptions()[k]
}

// err reports every bad value and every option no SSM node knows.
func (o *options) err() error {
	for _, k := range slices.Sorted(maps.Keys(o.m)) {
		if !o.used[k] && !knownOption(k) {
			o.errs = append(o.errs, fmt.Errorf("%s node %d: unknown option %q", o.kind, o.node, k))
		}
	}
	return errors.Join(o.errs...)
}

// BrickConfig turns node settings into a brick configuration.
func BrickConfig(cfg node.Config) (brick.Config, error) {
	c := brick.DefaultConfig()
	if cfg.Node < 1 || cfg.Node > 65535 {
		return c, fmt.Errorf("%s: node number %d out of range", BrickKind, cfg.Node)
	}
	c.ID = uint16(cfg.Node)
	o := newOptions(BrickKind, cfg)
	readBrick(o, &c)
	if err := o.err(); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// readBrick reads every ssm-brick option into c.
func readBrick(o *options, c *brick.Config) {
	o.string("control_token", &c.ControlToken)
	o.duration("beacon_interval", &c.BeaconInterval)
	o.duration("generation", &c.Generation)
	o.int("max_value", &c.MaxValue)
	o.int("inbox", &c.InboxLen)
	o.bool("discard_expired", &c.DiscardExpired)
	o.bool("exit_on_corrupt", &c.ExitOnCorrupt)
	o.duration("slow", &c.Slow)
	o.int("procs", &c.Procs)
	o.int64("seed", &c.Seed)
	o.style(&c.Passive)
	o.int("w", &c.Degree)
	o.list("replicas", &c.Replicas)
	o.duration("backup_interval", &c.BackupInterval)
	o.duration("beacon_timeout", &c.PeerTimeout)
}

// ServeBrick runs a brick on cfg.Listen until ctx ends. A crash (control
// action or exit_on_corrupt) exits the process with CrashExit at once.
func ServeBrick(ctx context.Context, cfg node.Config) error {
	bc, err := BrickConfig(cfg)
	if err != nil {
		return err
	}
	if bc.ControlToken == "" {
		// `faultbench run` hands the run's token through the environment.
		bc.ControlToken = os.Getenv(TokenEnv)
	}
	logger := log.New(os.Stderr, fmt.Sprintf("ssm-brick %d: ", cfg.Node), log.LstdFlags|log.Lmicroseconds)
	bc.OnEvent = func(kind, detail string) { logger.Printf("%s %s", kind, detail) }
	bc.OnCrash = func(reason string) {
		logger.Printf("crash: %s", reason)
		os.Exit(CrashExit)
	}
	b, err := brick.New(bc)
	if err != nil {
		return err
	}
	if cfg.Alone {
		runtime.GOMAXPROCS(bc.Procs)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("%s node %d: %w", BrickKind, cfg.Node, err)
	}
	errc := make(chan error, 1)
	go func() { errc <- b.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return b.Close()
	}
}

// AppSettings is everything ServeApp reads from the node settings.
type AppSettings struct {
	Backend string // ssm | memory | file
	FileDir string
	Stub    stub.Config
	App     app.Config
}

// AppConfig turns node settings into the front end's configuration.
func AppConfig(cfg node.Config) (AppSettings, error) {
	s := AppSettings{Backend: "ssm", Stub: stub.DefaultConfig(), App: app.DefaultConfig()}
	o := newOptions(AppKind, cfg)
	readApp(o, &s)
	if err := o.err(); err != nil {
		return s, err
	}
	if s.Stub.Seed == 0 {
		s.Stub.Seed = int64(cfg.Node)
	}
	switch s.Backend {
	case "ssm":
		if len(s.Stub.Bricks) == 0 {
			return s, fmt.Errorf("%s node %d: backend ssm needs option bricks=ADDR,ADDR,... (the bricks' addresses or proxies)", AppKind, cfg.Node)
		}
		if err := s.Stub.Validate(); err != nil {
			return s, fmt.Errorf("%s node %d: %w", AppKind, cfg.Node, err)
		}
	case "memory":
	case "file":
		if s.FileDir == "" {
			if cfg.Dir == "" {
				return s, fmt.Errorf("%s node %d: backend file needs --dir or option file_dir", AppKind, cfg.Node)
			}
			s.FileDir = filepath.Join(cfg.Dir, "sessions")
		}
	default:
		return s, fmt.Errorf("%s node %d: option backend=%q: want ssm, memory or file", AppKind, cfg.Node, s.Backend)
	}
	return s, s.App.Validate()
}

// readApp reads every ssm-app option into s.
func readApp(o *options, s *AppSettings) {
	o.string("backend", &s.Backend)
	o.list("bricks", &s.Stub.Bricks)
	var passive bool
	o.style(&passive)
	if passive {
		s.Stub.Style = stub.Passive
	}
	o.int("w", &s.Stub.W)
	o.int("wq", &s.Stub.WQ)
	o.int("r", &s.Stub.R)
	o.duration("timeout", &s.Stub.Timeout)
	o.bool("aimd", &s.Stub.AIMD)
	o.duration("beacon_timeout", &s.Stub.BeaconTimeout)
	o.int64("seed", &s.Stub.Seed)
	o.int("state_size", &s.App.StateSize)
	o.duration("session_ttl", &s.App.TTL)
	o.string("file_dir", &s.FileDir)
}

// timelineEvents writes one JSON object a line, the form the testbed
// forwards from a node's stdout to the run's timeline:
// {"kind":"system.ssm.primary","node":1,"detail":"...","unix_s":1.7e9}.
func timelineEvents(w io.Writer, nodeID int) func(kind, detail string) {
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	return func(kind, detail string) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(struct {
			Kind   string  `json:"kind"`
			Node   int     `json:"node"`
			Detail string  `json:"detail"`
			UnixS  float64 `json:"unix_s"`
		}{kind, nodeID, detail, float64(time.Now().UnixNano()) / 1e9})
	}
}

// startLiveWait bounds how long a starting front end waits for its stub to
// see W live bricks before it listens anyway.
const startLiveWait = 5 * time.Second

// ServeApp runs the session front end on cfg.Listen until ctx ends.
func ServeApp(ctx context.Context, cfg node.Config) error {
	s, err := AppConfig(cfg)
	if err != nil {
		return err
	}
	var backend app.Backend
	switch s.Backend {
	case "ssm":
		logger := log.New(os.Stderr, fmt.Sprintf("ssm-app %d: ", cfg.Node), log.LstdFlags|log.Lmicroseconds)
		timeline := timelineEvents(os.Stdout, cfg.Node)
		s.Stub.OnEvent = func(kind, detail string) {
			logger.Printf("%s %s", kind, detail)
			if kind == "system.ssm.primary" {
				// A promotion belongs on the run's timeline (the testbed
				// turns such stdout lines into events); brick up and down
				// stay in the log, where every front end repeats them.
				timeline(kind, detail)
			}
		}
		st, err := stub.New(s.Stub)
		if err != nil {
			return err
		}
		// Listen (and so look ready) only once the stub has heard from
		// enough bricks to write, or the first requests are 503s that say
		// nothing about the system; a front end started while bricks are
		// down still comes up, after startLiveWait.
		want := min(s.Stub.W, len(s.Stub.Bricks))
		if s.Stub.Style == stub.Passive {
			// The primary is the lowest-numbered live brick when the
			// first request comes: wait for all, so it is brick 1's.
			want = len(s.Stub.Bricks)
		}
		wait, cancel := context.WithTimeout(ctx, startLiveWait)
		if err := st.WaitLive(wait, want); err != nil {
			logger.Printf("serving with fewer than %d live bricks: %v", want, err)
		}
		cancel()
		backend = app.SSM{Stub: st}
	case "memory":
		backend = app.NewMemory()
	case "file":
		f, err := app.NewFile(s.FileDir)
		if err != nil {
			return err
		}
		backend = f
	}
	defer backend.Close()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("%s node %d: %w", AppKind, cfg.Node, err)
	}
	srv := &http.Server{Handler: app.Handler(backend, s.App), ReadHeaderTimeout: 10 * time.Second}
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
