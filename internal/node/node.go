// Package node runs one node program of the cluster: `faultbench node KIND`.
// The testbed starts every reference node as a child process of the same
// binary; this package is the contract between the two sides — the flags a
// node takes (Config.Args writes them, BindFlags reads them) and the registry
// of node kinds.
//
// A kind (static, press, ssm-brick, ...) registers a Func in an init function
// of its package; the CLI imports the packages for their side effect.
package node

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/pflag"
)

// Config is what every node program is told at start.
type Config struct {
	Listen   string            // host:port to serve on, from the backend's plan
	Node     int               // this node's number, 1-based
	Peers    []string          // every node's Listen address, index i = node i+1
	Dir      string            // per-node working directory (may be empty)
	Mode     string            // system-specific mode, e.g. press: perf | ha | robust
	Pages    int               // synthetic page set: number of pages
	PageSize int               // synthetic page set: bytes per page
	Options  map[string]string // system-specific settings

	// Alone is set by `faultbench node`, where the node is its process's
	// only job: it may then set process-wide things, such as how many
	// threads run Go code (an ssm-brick's procs). Nodes run in a test's
	// process leave them as they are. Not a flag: Args does not write it.
	Alone bool
}

// Args renders c as the flags BindFlags parses, in a stable order.
func (c Config) Args() []string {
	args := []string{"--listen", c.Listen, "--node", strconv.Itoa(c.Node)}
	if len(c.Peers) > 0 {
		args = append(args, "--peers", strings.Join(c.Peers, ","))
	}
	if c.Dir != "" {
		args = append(args, "--dir", c.Dir)
	}
	if c.Mode != "" {
		args = append(args, "--mode", c.Mode)
	}
	if c.Pages > 0 {
		args = append(args, "--pages", strconv.Itoa(c.Pages))
	}
	if c.PageSize > 0 {
		args = append(args, "--page-size", strconv.Itoa(c.PageSize))
	}
	for _, k := range slices.Sorted(maps.Keys(c.Options)) {
		args = append(args, "--option", k+"="+c.Options[k])
	}
	return args
}

// Defaults of the synthetic page set (Broadwell 2004, §3.3.2: ~18,000 pages of 26 KB).
const (
	DefaultPages    = 18000
	DefaultPageSize = 26 * 1024
)

// BindFlags defines the node flags on fs, writing into c.
func BindFlags(fs *pflag.FlagSet, c *Config) {
	fs.StringVar(&c.Listen, "listen", "", "host:port to serve on (required; the backend plans it)")
	fs.IntVar(&c.Node, "node", 1, "this node's number (1-based)")
	fs.StringSliceVar(&c.Peers, "peers", nil, "every node's listen address, in node order")
	fs.StringVar(&c.Dir, "dir", "", "per-node working directory")
	fs.StringVar(&c.Mode, "mode", "", "system-specific mode")
	fs.IntVar(&c.Pages, "pages", DefaultPages, "number of synthetic pages")
	fs.IntVar(&c.PageSize, "page-size", DefaultPageSize, "bytes per synthetic page")
	fs.StringToStringVar(&c.Options, "option", nil, "system-specific setting KEY=VALUE (repeatable)")
}

// ErrConfig is matched (errors.Is) by a Func's error when the node was
// given a bad configuration (flags or options) rather than failing to
// serve; `faultbench node` then exits with the bad-input status. A kind
// wraps it in its own sentinel, e.g. press.ErrConfig.
var ErrConfig = errors.New("bad config")

// Func runs a node until ctx is cancelled or it fails. It must return a
// non-nil error when it cannot serve (e.g. the address is in use), so the
// process exits non-zero and the testbed reports the cause.
type Func func(ctx context.Context, cfg Config) error

var (
	mu    sync.Mutex
	kinds = map[string]Func{}
)

// Register makes a node kind available to `faultbench node KIND`. It panics
// on a duplicate name, like http.Handle.
func Register(kind string, f Func) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := kinds[kind]; dup {
		panic("node: kind registered twice: " + kind)
	}
	kinds[kind] = f
}

// Kinds lists the registered node kinds, sorted.
func Kinds() []string {
	mu.Lock()
	defer mu.Unlock()
	return slices.Sorted(maps.Keys(kinds))
}

// Run runs the node of the given kind.
func Run(ctx context.Context, kind string, cfg Config) error {
	mu.Lock()
	f, ok := kinds[kind]
	mu.Unlock()
	if !ok {
		return fmt.Errorf("unknown node kind %q (known: %s)", kind, strings.Join(Kinds(), ", "))
	}
	if cfg.Listen == "" && kind != ReaperKind { // the reaper serves nothing
		return fmt.Errorf("%w: --listen is required: the host:port this node serves on, as the backend planned it", ErrConfig)
	}
	return f(ctx, cfg)
}
