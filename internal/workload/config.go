package workload

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"time"
)

// Target is one node the clients send to.
type Target struct {
	Node int    // node number (1-based), copied into every record
	Addr string // host:port
}

// Config describes the emulated users of one run. Zero values take the
// defaults of DefaultConfig when passed through WithDefaults; Validate
// rejects what remains impossible.
type Config struct {
	Driver          string        // "http" (default) | "ssm" | "session" (docs/ssm.md's session protocol) | "null" (sends nothing; measures the generator itself)
	Rate            float64       // offered attempts per second, all clients together
	Arrivals        string        // "poisson" (default) | "constant" | "trace" (timing of a clf: trace)
	Clients         int           // independent client emulators, each with Rate/Clients (default 1)
	ConnectTimeout  time.Duration // default 2s
	ResponseTimeout time.Duration // default 6s, counted from the moment the connection is up
	Keepalive       bool          // reuse connections; default is a new connection per request
	// MaxConns caps a client's open keep-alive connections to one node;
	// an attempt that finds them all busy waits for one, and the wait
	// counts against ConnectTimeout. 0 (default) is no cap: every attempt
	// that finds no idle connection opens one.
	MaxConns    int
	Trace       string   // zipf:N:s | paths:FILE | clf:FILE
	MaxInFlight int      // outstanding attempts per client (default 10000)
	Users       int      // ssm/session drivers: users per client (0: DefaultUsers)
	Flow        int      // session driver: requests per session (0: DefaultFlow)
	KV          KVConfig // kv driver: keys, reads, value size, API (kv.go)
	Seed        int64
	Targets     []Target // round-robin over these, in order
	// PacingTick, when not 0, releases the open loop's arrivals at the
	// run's start plus whole ticks, never before their scheduled instant:
	// each is at most a tick late, and the generator wakes once a tick
	// for every client instead of once an arrival (pacing.go).
	PacingTick time.Duration
	// Model is "open" (default: Rate and Arrivals schedule every attempt
	// in advance) or "closed" (closed.go: Users per client, each sending
	// its next request when the previous one ended plus Think).
	Model string
	// Think is the closed-loop users' think-time law: "0", fixed(D) or
	// exponential(MEAN).
	Think string

	// Verify checks the body of a complete 2xx response to target (its URL
	// path). nil accepts any 2xx. It is called from many goroutines at once
	// and must not keep body, which is reused after it returns.
	Verify func(target string, body []byte) bool

	// AllowRemote lets targets resolve outside loopback and OwnHosts.
	AllowRemote bool
	// OwnHosts are addresses of hosts this run created (network namespaces,
	// containers); targets may resolve to them without AllowRemote.
	OwnHosts []netip.Addr
	// BaseDir resolves relative trace file names (the scenario's directory).
	BaseDir string
	// TraceMinUsable is the share of a clf: log's lines that must parse;
	// the rest are skipped (0: DefaultTraceMinUsable).
	TraceMinUsable float64

	// Requests (http driver) are sent instead of GETs of the trace's
	// paths: templated methods, paths, headers and bodies, drawn by
	// weight, each answer checked against its expectations
	// (docs/real-services.md). A har: trace gives them instead.
	Requests []RequestSpec
	// TLS, when set, makes the http driver speak HTTPS to every target.
	TLS *TLSSpec
	// MaxBody bounds the response body kept for checks (0: DefaultMaxBody).
	MaxBody int64
}

// Defaults of Broadwell (2004) §3.3: the browser gives up on connecting after 2 s and
// on the page 6 s after connecting.
const (
	DefaultConnectTimeout  = 2 * time.Second
	DefaultResponseTimeout = 6 * time.Second
	DefaultMaxInFlight     = 10000
)

// Bounds that keep a run's memory and schedule finite.
const (
	maxClients     = 4096
	maxRate        = 10_000_000
	maxMaxInFlight = 1 << 20
	maxTargets     = 1 << 16
	maxUsers       = 1 << 16
)

// WithDefaults returns cfg with every unset field given its default.
func WithDefaults(cfg Config) Config {
	if cfg.Driver == "" {
		cfg.Driver = "http"
	}
	if cfg.Arrivals == "" {
		cfg.Arrivals = "poisson"
	}
	if cfg.Clients == 0 {
		cfg.Clients = 1
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.ResponseTimeout == 0 {
		cfg.ResponseTimeout = DefaultResponseTimeout
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	return cfg
}

// ErrConfig is wrapped by every error Validate returns.
var ErrConfig = errors.New("invalid workload")

// Validate checks cfg after WithDefaults, without touching the network or
// the file system (New does both). Every problem is reported, joined.
func Validate(cfg Config) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...))
	}
	if _, ok := drivers[cfg.Driver]; !ok {
		bad("driver %q is unknown (want http, ssm, session, kv, or null to send nothing)", cfg.Driver)
	}
	if cfg.Driver == "kv" {
		if err := cfg.KV.withDefaults().validate(); err != nil {
			bad("%v", err)
		}
	}
	switch {
	case cfg.Model == ModelClosed:
		if _, err := ParseThink(cfg.Think); err != nil {
			bad("%v", err)
		}
		if cfg.Arrivals == "trace" {
			bad("arrivals trace replays a log's timing; closed-loop users set their own")
		}
	case cfg.Model != "" && cfg.Model != "open":
		bad("model %q is unknown (want open or closed)", cfg.Model)
	}
	switch cfg.Arrivals {
	case "poisson", "constant":
		if cfg.Model == ModelClosed {
			break // users pace themselves
		}
		if !(cfg.Rate > 0) || cfg.Rate > maxRate || math.IsInf(cfg.Rate, 0) {
			bad("rate %v must be above 0 and at most %d per second", cfg.Rate, maxRate)
		}
	case "trace":
		// The access log sets the timing; rate is ignored.
	default:
		bad("arrivals %q is unknown (want poisson, constant or trace)", cfg.Arrivals)
	}
	switch {
	case cfg.PacingTick == 0:
	case cfg.Model == ModelClosed:
		bad("pacing_tick paces scheduled arrivals; closed-loop users send when their previous answer came")
	case cfg.PacingTick < 0:
		bad("pacing_tick %v must be positive (or 0: every arrival at its instant)", cfg.PacingTick)
	}
	if cfg.Clients < 1 || cfg.Clients > maxClients {
		bad("clients %d must be between 1 and %d", cfg.Clients, maxClients)
	}
	if cfg.ConnectTimeout <= 0 {
		bad("connect_timeout %v must be positive", cfg.ConnectTimeout)
	}
	if cfg.ResponseTimeout <= 0 {
		bad("response_timeout %v must be positive", cfg.ResponseTimeout)
	}
	if cfg.MaxConns < 0 || cfg.MaxConns > maxMaxInFlight {
		bad("max_conns %d must be between 0 (no cap) and %d", cfg.MaxConns, maxMaxInFlight)
	}
	if cfg.Users < 0 || cfg.Users > maxUsers {
		bad("users %d must be between 1 and %d", cfg.Users, maxUsers)
	}
	if cfg.Flow < 0 {
		bad("flow %d must be positive", cfg.Flow)
	}
	if cfg.MaxInFlight < 1 || cfg.MaxInFlight > maxMaxInFlight {
		bad("max_in_flight %d must be between 1 and %d", cfg.MaxInFlight, maxMaxInFlight)
	}
	errs = append(errs, validateRequests(cfg)...)
	spec, err := ParseTraceSpec(cfg.Trace)
	switch {
	case len(cfg.Requests) > 0 && cfg.Trace == "":
		// The requests are the workload; no trace is needed.
	case err != nil:
		errs = append(errs, fmt.Errorf("%w: %w", ErrConfig, err))
	case cfg.Arrivals == "trace" && spec.Kind != "clf":
		bad("arrivals: trace replays the timing of an access log and needs a clf:FILE trace, not %q", cfg.Trace)
	}
	if len(cfg.Targets) == 0 {
		bad("no targets: the run has no nodes to send to")
	}
	if len(cfg.Targets) > maxTargets {
		bad("%d targets, at most %d", len(cfg.Targets), maxTargets)
	}
	for _, t := range cfg.Targets {
		if _, _, err := splitHostPort(t.Addr); err != nil {
			bad("node %d: %v", t.Node, err)
		}
	}
	return errors.Join(errs...)
}
