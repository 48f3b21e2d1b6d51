package press

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	nodeprog "github.com/faultbench/faultbench/internal/node"
)

// Kind is the node kind name: `faultbench node press`.
const Kind = "press"

func init() { nodeprog.Register(Kind, RunNode) }

// RunNode is `faultbench node press`: it turns the node program's flags into
// a Config and runs Main. System-specific settings come as --option KEY=VALUE:
//
//	intra=HOST:PORT        this node's intra-cluster listen address (default: --listen's host, port+1000)
//	peer.J=HOST:PORT       the address to dial for node J, e.g. a faultnet proxy
//	                       (default: node J's --peers entry, port+1000, no proxy)
//	control=HOST:PORT      control endpoint for comm faults (default: none)
//	token=SECRET           control endpoint token (required with control;
//	                       default: the FAULTBENCH_PRESS_TOKEN environment variable)
//	heartbeat=1s missed-beats=3 cache-pages=1200 forward-timeout=500ms
//	message-timeout=1s stall-limit=2m max-conns=512 busy-conns=256
//	queue-len=1024 join-window=30s seed=N incarnation=N
//	process-time=0 process-cpus=2   per-request processing (Config.ProcessTime)
//	events=stdout|stderr|none   where system.* events go, one JSON object a line
//
// --mode is perf, ha, robust, via0, via3 or via5; --peers lists every node's --listen address
// in node order (the node's own entry included).
func RunNode(ctx context.Context, nc nodeprog.Config) error {
	cfg, err := ConfigFromNode(withEnvToken(nc, os.Getenv(TokenEnv)), os.Stdout, os.Stderr)
	if err != nil {
		return err
	}
	return Main(ctx, cfg)
}

// withEnvToken gives nc the token option tok unless it has one: the testbed
// passes the run's token in the environment, where other users cannot read
// it, rather than in argv.
func withEnvToken(nc nodeprog.Config, tok string) nodeprog.Config {
	if tok == "" || nc.Options["token"] != "" {
		return nc
	}
	nc.Options = maps.Clone(nc.Options)
	if nc.Options == nil {
		nc.Options = map[string]string{}
	}
	nc.Options["token"] = tok
	return nc
}

// ConfigFromNode builds a Config from the node program's flags; events go
// to stdout or stderr as the events option says.
func ConfigFromNode(nc nodeprog.Config, stdout, stderr io.Writer) (Config, error) {
	cfg := DefaultConfig()
	mode, err := ParseMode(nc.Mode)
	if err != nil {
		return cfg, fmt.Errorf("node %d: --mode: %w", nc.Node, err)
	}
	cfg.Mode, cfg.Node, cfg.HTTPAddr = mode, nc.Node, nc.Listen
	if nc.Pages > 0 {
		cfg.Pages = nc.Pages
	}
	if nc.PageSize > 0 {
		cfg.PageSize = nc.PageSize
	}
	if len(nc.Peers) < 2 {
		return cfg, fmt.Errorf("%w: --peers names %d node(s) (list every node's address, this one's included)", ErrTooFewNodes, len(nc.Peers))
	}
	opt := map[string]string{}
	for k, v := range nc.Options {
		opt[k] = v
	}
	take := func(k string) (string, bool) { v, ok := opt[k]; delete(opt, k); return v, ok }
	if v, ok := take("intra"); ok {
		cfg.IntraAddr = v
	} else if cfg.IntraAddr, err = shiftPort(nc.Listen, 1000); err != nil {
		return cfg, fmt.Errorf("%w: node %d: no intra-cluster address: --listen %s: %w (give --option intra=HOST:PORT)", ErrConfig, nc.Node, nc.Listen, err)
	}
	cfg.Peers = map[int]string{}
	for i, addr := range nc.Peers {
		id := i + 1
		if id == nc.Node {
			continue
		}
		if v, ok := take("peer." + strconv.Itoa(id)); ok {
			cfg.Peers[id] = v
			continue
		}
		if cfg.Peers[id], err = shiftPort(addr, 1000); err != nil {
			return cfg, fmt.Errorf("%w: node %d: no intra-cluster address for node %d: --peers entry %s: %w (give --option peer.%d=HOST:PORT)", ErrConfig, nc.Node, id, addr, err, id)
		}
	}
	cfg.ControlAddr, _ = take("control")
	cfg.ControlToken, _ = take("token")
	durs := map[string]*time.Duration{
		"heartbeat": &cfg.Heartbeat, "forward-timeout": &cfg.ForwardTimeout, "message-timeout": &cfg.MessageTimeout,
		"stall-limit": &cfg.StallLimit, "join-window": &cfg.JoinWindow, "process-time": &cfg.ProcessTime,
	}
	for k, p := range durs {
		if v, ok := take(k); ok {
			if *p, err = time.ParseDuration(v); err != nil {
				return cfg, fmt.Errorf("%w: node %d: --option %s=%s: %w", ErrConfig, nc.Node, k, v, err)
			}
		}
	}
	ints := map[string]*int{
		"missed-beats": &cfg.MissedBeats, "cache-pages": &cfg.CachePages, "max-conns": &cfg.MaxConns,
		"busy-conns": &cfg.BusyConns, "queue-len": &cfg.QueueLen, "process-cpus": &cfg.ProcessCPUs,
	}
	for k, p := range ints {
		if v, ok := take(k); ok {
			if *p, err = strconv.Atoi(v); err != nil {
				return cfg, fmt.Errorf("%w: node %d: --option %s=%s: %w", ErrConfig, nc.Node, k, v, err)
			}
		}
	}
	if v, ok := take("seed"); ok {
		if cfg.Seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			return cfg, fmt.Errorf("%w: node %d: --option seed=%s: %w", ErrConfig, nc.Node, v, err)
		}
	}
	if v, ok := take("incarnation"); ok {
		inc, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return cfg, fmt.Errorf("%w: node %d: --option incarnation=%s: %w", ErrConfig, nc.Node, v, err)
		}
		cfg.Incarnation = uint32(inc)
	}
	events, _ := take("events")
	switch events {
	case "", "stdout":
		cfg.OnEvent = JSONEvents(stdout, nc.Node)
	case "stderr":
		cfg.OnEvent = JSONEvents(stderr, nc.Node)
	case "none":
	default:
		return cfg, fmt.Errorf("%w: node %d: --option events=%s: want stdout, stderr or none", ErrConfig, nc.Node, events)
	}
	if len(opt) > 0 {
		var keys []string
		for k := range opt {
			keys = append(keys, k)
		}
		return cfg, fmt.Errorf("%w: node %d: unknown --option %s", ErrConfig, nc.Node, strings.Join(keys, ", "))
	}
	return cfg, cfg.Validate()
}

func shiftPort(addr string, by int) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	p, err := strconv.Atoi(port)
	if err != nil || p+by > 65535 || p <= 0 {
		return "", fmt.Errorf("port %q cannot be shifted by %d", port, by)
	}
	return net.JoinHostPort(host, strconv.Itoa(p+by)), nil
}

// JSONEvents returns an OnEvent that writes one JSON object a line:
// {"kind":"system.member_down","node":2,"detail":"...","unix_s":1.7e9}.
func JSONEvents(w io.Writer, nodeID int) func(kind, detail string) {
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
