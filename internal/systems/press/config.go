package press

import (
	"fmt"
	"slices"
	"time"

	nodeprog "github.com/faultbench/faultbench/internal/node"
)

// Mode selects the PRESS variant.
type Mode uint8

const (
	Perf   Mode = iota + 1 // Broadwell's (2004) Perf-PRESS / Nagaraja et al.'s (2002) TCP-PRESS
	HA                     // Broadwell's (2004) HA-PRESS / Nagaraja et al.'s (2002) TCP-PRESS-HB
	Robust                 // faultbench's repaired variant
	Via0                   // Nagaraja et al.'s (2002) VIA-PRESS-0: VIA messaging, connection breaks reconfigure at once
	Via3                   // Nagaraja et al.'s (2002) VIA-PRESS-3: Via0 with remote memory writes for every message
	Via5                   // Nagaraja et al.'s (2002) VIA-PRESS-5: Via3 with zero-copy file transfers (cached pages pinned)
)

// Modes lists every mode in order.
var Modes = []Mode{Perf, HA, Robust, Via0, Via3, Via5}

// VIA reports whether m emulates one of Nagaraja et al.'s (2002) VIA versions: messaging
// over pre-allocated channels, failure detection by connection breaks with
// reconfiguration at once, rejoin by reconnecting, no merge after a
// partition, and fail-fast on a descriptor error.
func (m Mode) VIA() bool { return m == Via0 || m == Via3 || m == Via5 }

// RemoteWrite reports whether m sends every message as a remote memory
// write (via3, via5): an error is reported on both ends.
func (m Mode) RemoteWrite() bool { return m == Via3 || m == Via5 }

// ZeroCopy reports whether m sends file data straight from pinned cache
// pages (via5): a pinnable-memory shortage makes the node drop cached files.
func (m Mode) ZeroCopy() bool { return m == Via5 }

// Preallocated reports whether m allocates its communication buffers once,
// at start (robust and the VIA modes): mem-alloc-fail leaves it untouched.
func (m Mode) Preallocated() bool { return m == Robust || m.VIA() }

func (m Mode) String() string {
	switch m {
	case Perf:
		return "perf"
	case HA:
		return "ha"
	case Robust:
		return "robust"
	case Via0:
		return "via0"
	case Via3:
		return "via3"
	case Via5:
		return "via5"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// ErrConfig is matched (errors.Is) by every configuration error: ParseMode,
// Config.Validate and ConfigFromNode. A CLI maps it to "bad input".
// It wraps node.ErrConfig, so `faultbench node press` exits 2 on it.
var ErrConfig = fmt.Errorf("press: %w", nodeprog.ErrConfig)

// ErrBadMode is returned by ParseMode and Config.Validate for an unknown
// mode; it also matches ErrConfig.
var ErrBadMode = fmt.Errorf("%w: unknown mode", ErrConfig)

// ErrTooFewNodes is returned by Config.Validate and ConfigFromNode when the
// cluster would have fewer than two nodes; it also matches ErrConfig.
var ErrTooFewNodes = fmt.Errorf("%w: a cluster needs at least 2 nodes", ErrConfig)

// modeNames is what ParseMode accepts, for error messages.
const modeNames = "perf, ha, robust, via0, via3 or via5"

// ParseMode maps "perf", "ha", "robust", "via0", "via3" or "via5" to a Mode.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("%w %q (want %s)", ErrBadMode, s, modeNames)
}

// MaxNodes bounds the cluster size (directory entries are 64-bit node sets).
const MaxNodes = 64

// Config configures one PRESS node. Zero durations and sizes take the
// defaults of DefaultConfig; Validate checks the result before any socket
// is opened.
type Config struct {
	Node      int            // this node's id, 1..MaxNodes
	Mode      Mode           // Perf, HA, Robust, Via0, Via3 or Via5
	HTTPAddr  string         // client HTTP listen address, e.g. 127.0.0.11:8080
	IntraAddr string         // intra-cluster listen address, e.g. 127.0.0.11:9080
	Peers     map[int]string // every other node's id → the address this node dials to reach it (a proxy or its IntraAddr)

	// ControlAddr, when set, serves the fault-control endpoint (see
	// control.go); ControlToken must then be set and every request must
	// carry "Authorization: Bearer <token>".
	ControlAddr  string
	ControlToken string

	Pages      int // page set size; default 18,000
	PageSize   int // bytes per page; default 26 KiB
	CachePages int // memory cache capacity in pages; default 1,200 (≈31 MiB)

	Heartbeat      time.Duration // heartbeat period (ha, robust) and retry period; default 1s
	MissedBeats    int           // beats missed before a node is declared failed; default 3
	ForwardTimeout time.Duration // robust: wait for a forwarded file before reading it locally; default 500ms
	MessageTimeout time.Duration // robust: per-message send deadline; default 1s
	StallLimit     time.Duration // perf, ha: safety bound on any wait (stands in for TCP's 10–15 min timeout); default 2m
	MaxConns       int           // open client requests above which perf/ha ignore new connections and robust answers 503; default 512
	BusyConns      int           // a peer reporting more open requests than this is not forwarded to; default 256
	QueueLen       int           // per-peer send queue (messages); default 128 in ha (PRESS's small helper queue, whose overflow during a short hang makes the sequence gaps of Broadwell 2004, §4.3), 1024 otherwise
	JoinWindow     time.Duration // perf: how long to keep dialling for the initial full mesh before reporting; default 30s

	// ProcessTime is the processing every client request for a page
	// needs on one of the node's ProcessCPUs before it is served (a
	// CGI-like workload, Broadwell 2004, §4.4); 0 (default) serves static
	// pages with no processing, as the paper's experiments did. See
	// process.go for why it is a wait on an emulated CPU, not CPU work.
	ProcessTime time.Duration
	ProcessCPUs int // processors a node's requests share for ProcessTime; default 2, the paper's dual-CPU nodes

	Incarnation uint32 // distinguishes restarts; default from the clock
	Seed        int64  // drives every random choice of the node (fault offsets, sizes)

	// OnEvent receives system.* events (membership changes, comm faults).
	// It is called from the node's goroutines, must not block, and must be
	// safe for concurrent use. Nil drops events.
	OnEvent func(kind, detail string) `json:"-"`
}

// DefaultConfig returns a Config with every default filled in and no
// addresses.
func DefaultConfig() Config {
	return Config{
		Mode:           HA,
		Pages:          18000,
		PageSize:       26 * 1024,
		CachePages:     1200,
		Heartbeat:      time.Second,
		MissedBeats:    3,
		ForwardTimeout: 500 * time.Millisecond,
		MessageTimeout: time.Second,
		StallLimit:     2 * time.Minute,
		MaxConns:       512,
		BusyConns:      256,
		QueueLen:       1024,
		JoinWindow:     30 * time.Second,
		ProcessCPUs:    2,
	}
}

// withDefaults fills zero fields from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	setInt := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	setDur := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	setInt(&c.Pages, d.Pages)
	setInt(&c.PageSize, d.PageSize)
	setInt(&c.CachePages, d.CachePages)
	setInt(&c.MissedBeats, d.MissedBeats)
	setInt(&c.MaxConns, d.MaxConns)
	setInt(&c.BusyConns, d.BusyConns)
	setInt(&c.ProcessCPUs, d.ProcessCPUs)
	if c.Mode == HA {
		d.QueueLen = 128
	}
	setInt(&c.QueueLen, d.QueueLen)
	setDur(&c.Heartbeat, d.Heartbeat)
	setDur(&c.ForwardTimeout, d.ForwardTimeout)
	setDur(&c.MessageTimeout, d.MessageTimeout)
	setDur(&c.StallLimit, d.StallLimit)
	setDur(&c.JoinWindow, d.JoinWindow)
	return c
}

// Validate reports the first problem of c (after defaults), naming the field.
func (c Config) Validate() error {
	c = c.withDefaults()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: node %d: %s", ErrConfig, c.Node, fmt.Sprintf(format, args...))
	}
	if !slices.Contains(Modes, c.Mode) {
		return fmt.Errorf("%w %d (want %s)", ErrBadMode, c.Mode, modeNames)
	}
	if len(c.Peers)+1 < 2 {
		return fmt.Errorf("%w, got %d (give the other nodes' intra-cluster addresses as peers)", ErrTooFewNodes, len(c.Peers)+1)
	}
	if len(c.Peers)+1 > MaxNodes {
		return bad("%d nodes, at most %d supported", len(c.Peers)+1, MaxNodes)
	}
	if c.Node < 1 || c.Node > MaxNodes {
		return bad("node id %d outside 1..%d", c.Node, MaxNodes)
	}
	for id, addr := range c.Peers {
		switch {
		case id == c.Node:
			return bad("peers include the node itself (%d)", id)
		case id < 1 || id > MaxNodes:
			return bad("peer id %d outside 1..%d", id, MaxNodes)
		case addr == "":
			return bad("peer %d has no address", id)
		}
	}
	switch {
	case c.HTTPAddr == "":
		return bad("http address is empty")
	case c.IntraAddr == "":
		return bad("intra-cluster address is empty")
	case c.ControlAddr != "" && c.ControlToken == "":
		return bad("control address %s needs a control token", c.ControlAddr)
	case c.Pages < 1 || c.Pages > 1<<30:
		return bad("pages %d outside 1..2^30", c.Pages)
	case c.PageSize < 64 || c.PageSize > MaxBody-64:
		return bad("page size %d outside 64..%d", c.PageSize, MaxBody-64)
	case c.CachePages < 1:
		return bad("cache pages %d, want at least 1", c.CachePages)
	case c.MissedBeats < 1:
		return bad("missed beats %d, want at least 1", c.MissedBeats)
	case c.Heartbeat < time.Millisecond, c.ForwardTimeout < time.Millisecond,
		c.MessageTimeout < time.Millisecond, c.StallLimit < time.Millisecond, c.JoinWindow < time.Millisecond:
		return bad("durations must be at least 1ms (heartbeat %v, forward timeout %v, message timeout %v, stall limit %v, join window %v)",
			c.Heartbeat, c.ForwardTimeout, c.MessageTimeout, c.StallLimit, c.JoinWindow)
	case c.MaxConns < 1 || c.BusyConns < 1 || c.QueueLen < 1:
		return bad("max conns %d, busy conns %d and queue length %d must be positive", c.MaxConns, c.BusyConns, c.QueueLen)
	case c.ProcessTime < 0 || c.ProcessTime > MaxProcessTime:
		return bad("process time %v outside 0..%v (0 serves pages with no processing)", c.ProcessTime, MaxProcessTime)
	case c.ProcessCPUs < 1 || c.ProcessCPUs > 1024:
		return bad("process cpus %d outside 1..1024", c.ProcessCPUs)
	}
	return nil
}
