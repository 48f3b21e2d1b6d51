// Package scenario is the experiment file (docs/scenario.md): its schema,
// defaults, validation with line numbers, time scaling and the seed.
//
// Load parses and validates a whole file before anything runs; every error
// names the file, line and key. Scaled multiplies every duration, and
// ScaledChecked also checks that the scaled run stays within the ranges a
// run can carry out (a window of at least 1ms, phases of at least a
// window, some arrivals, faults that do not recur faster than a window).
package scenario

import (
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// Scenario is one experiment: a cluster, a workload, phases, faults and an operator.
type Scenario struct {
	Name       string             `yaml:"name"`
	Seed       int64              `yaml:"seed"`
	Cluster    ClusterSpec        `yaml:"cluster"`
	Workload   Workload           `yaml:"workload"`
	Phases     []Phase            `yaml:"phases"`
	Faults     []Fault            `yaml:"faults,omitempty"`
	Operator   Operator           `yaml:"operator,omitempty"`
	Thresholds []string           `yaml:"thresholds,omitempty"`
	Demerits   map[string]float64 `yaml:"demerits,omitempty"` // conn_abort, conn_error, timeout, http_error, data_error, latency_second, latency_scale
	Baseline   string             `yaml:"baseline,omitempty"` // phase whose settled windows form the baseline band; default: first phase
	// Sweep is set on the scenarios a sweep generates: which configuration
	// and repetition this run is, with its parameters, so that every run
	// directory describes itself wherever it was produced.
	Sweep *SweepRun `yaml:"sweep,omitempty"`
	// Guard stops the experiment when one of its rules holds (docs/guard.md);
	// GuardCooldown is how long the load goes on after that (default 30s).
	Guard         []GuardRule `yaml:"guard,omitempty"`
	GuardCooldown Duration    `yaml:"guard_cooldown,omitempty"`

	file, dir string     // where it was loaded from
	root      *yaml.Node // the parsed file, for line numbers in errors
}

// ClusterSpec is the cluster section of a scenario (Scenario.Cluster): what
// to start, a reference system or the user's own service, and where.
type ClusterSpec struct {
	System  string   `yaml:"system"`            // a registered system (testbed.SystemNames); empty: testbed.DefaultSystem
	Mode    string   `yaml:"mode,omitempty"`    // system-specific, e.g. press: perf | ha | robust
	Nodes   int      `yaml:"nodes"`             // number of nodes, numbered 1..Nodes
	Backend string   `yaml:"backend,omitempty"` // a registered backend; local by default
	Command []string `yaml:"command,omitempty"` // system: command; placeholders {addr} {port} {node} {dir}
	// Image and Env are system: container's (backend docker): the user's
	// local image, and environment entries NAME=VALUE for its containers;
	// Command, when given, replaces the image's command.
	Image string   `yaml:"image,omitempty"`
	Env   []string `yaml:"env,omitempty"`
	Port  int      `yaml:"port,omitempty"`  // port every node listens on at its own address
	Ready string   `yaml:"ready,omitempty"` // HTTP path polled until 200 before the run starts
	// ReadyTimeout bounds how long a node may take to become ready.
	ReadyTimeout Duration `yaml:"ready_timeout,omitempty"`
	// Boot is how long a crashed or rebooted node stays unreachable before its services restart.
	Boot Duration `yaml:"boot,omitempty"`
	// Pages and PageSize describe the synthetic page set of a system that
	// serves it (testbed.System.PageSet, which defaults them: testbed.Resolve).
	Pages    int `yaml:"pages,omitempty"`
	PageSize int `yaml:"page_size,omitempty"`
	// Options are system-specific settings passed through to the node (e.g. cache size).
	Options map[string]string `yaml:"options,omitempty"`
	// CPUs pins every node process to these CPUs, a Linux CPU list such
	// as "1" or "2-3" (docs/scenario.md, "Placement"); empty leaves the
	// nodes where the scheduler puts them. A backend that cannot pin
	// refuses it.
	CPUs string `yaml:"cpus,omitempty"`
	// Attach targets containers already running on the local Docker
	// engine (backend docker) instead of starting nodes: faultbench starts
	// nothing and leaves them as it found them (docs/docker.md).
	Attach *Attach `yaml:"attach,omitempty"`
}

// Attach is cluster.attach: which running containers are the nodes, and
// where the users' clients send. Either Project (a compose project, found
// by its label com.docker.compose.project) or Containers (names or ids).
type Attach struct {
	Project string `yaml:"project,omitempty"`
	// Services are the project's services whose containers are the nodes,
	// numbered by service (in this order), then by container number;
	// default every service but the target's.
	Services []string `yaml:"services,omitempty"`
	// Containers are the nodes, by name or id, node i the i-th.
	Containers []string `yaml:"containers,omitempty"`
	// Target is the users' entry point: SERVICE[:PORT] of the project,
	// CONTAINER[:PORT], or IP:PORT (loopback or an attached container's
	// address). Default: the clients send to every node.
	Target string `yaml:"target,omitempty"`
}

// Workload describes the emulated users (Broadwell 2004, §3.3.2).
type Workload struct {
	Driver          string   `yaml:"driver"`             // http (default) | ssm | session
	Rate            float64  `yaml:"rate,omitempty"`     // offered requests per second, all clients together (found by Knee when that is given)
	Arrivals        string   `yaml:"arrivals,omitempty"` // poisson (default) | constant
	Clients         int      `yaml:"clients,omitempty"`  // independent client emulators (default 1)
	ConnectTimeout  Duration `yaml:"connect_timeout,omitempty"`
	ResponseTimeout Duration `yaml:"response_timeout,omitempty"`
	Keepalive       bool     `yaml:"keepalive,omitempty"`
	Trace           string   `yaml:"trace,omitempty"`  // zipf:N:s | paths:FILE | clf:FILE
	Window          Duration `yaml:"window,omitempty"` // aggregation window (default 5s)
	// MaxInFlight bounds concurrent outstanding requests per client (default 10000);
	// an arrival beyond it is recorded as conn_error without being sent.
	MaxInFlight int `yaml:"max_in_flight,omitempty"`
	// MaxConns caps a client's keep-alive connections per node (0: no cap);
	// an attempt waiting for one is still charged from its scheduled time.
	MaxConns int `yaml:"max_conns,omitempty"`
	// PacingTick (open loop) sends each arrival at the first whole tick
	// from the run's start at or after its scheduled instant: at most a
	// tick late, for one wake a tick instead of one an arrival (0: every
	// arrival at its instant). Not scaled by --time-scale, like rates.
	PacingTick Duration `yaml:"pacing_tick,omitempty"`
	// Users is the ssm/session drivers' pool of emulated users per client
	// (default 64); each makes one request at a time, and an arrival that
	// finds none free is recorded as conn_error with target no-user.
	Users int `yaml:"users,omitempty"`
	// Flow is the session driver's requests per session (default 20).
	Flow int `yaml:"flow,omitempty"`
	// TraceMinUsable is the share of a clf: trace's non-blank lines that
	// must parse (default 0.9); the others are skipped, counted and
	// reported, so one odd line does not stop a replay.
	TraceMinUsable float64 `yaml:"trace_min_usable,omitempty"`
	// Model is open (default: Rate and Arrivals schedule every request in
	// advance) or closed: Users per client, each sending its next request
	// when the previous one ended plus Think (a law: 0, fixed(2ms),
	// exponential(8ms)). Think is not scaled by --time-scale: it is the
	// users' behaviour, which sets the load, not the experiment's length.
	Model string `yaml:"model,omitempty"`
	Think string `yaml:"think,omitempty"`
	// Knee, when given, finds Rate before the run: a search for the rate
	// at which the system saturates (Brown and Patterson 2000, §3.3); the run then offers
	// Fraction × that rate. Rate must then be left out.
	Knee *Knee `yaml:"knee,omitempty"`
	// Requests (driver http) replace GETs of the trace's paths with
	// templated requests drawn by weight, each answer checked against its
	// expect: section (docs/real-services.md). A trace: har:FILE replays a
	// browser's HAR export instead.
	Requests []Request `yaml:"requests,omitempty"`
	// TLS makes the http driver speak HTTPS (handshake counted in latency).
	TLS *TLS `yaml:"tls,omitempty"`
	// MaxBody bounds the response bytes kept for checks (default 1 MiB);
	// the rest is read, counted and dropped.
	MaxBody int64 `yaml:"max_body,omitempty"`
	// KV configures driver: kv (docs/real-services.md); absent: its defaults.
	KV *KV `yaml:"kv,omitempty"`
	// CPUs pins the controller — the client emulators with everything
	// else faultbench runs in its own process — to these CPUs for the run
	// (a CPU list, as cluster.cpus); empty leaves it unpinned.
	CPUs string `yaml:"cpus,omitempty"`
}

// KV is the workload.kv section: the kv driver's keys and API. Zero values
// take the driver's defaults (workload.KVConfig).
type KV struct {
	API       string  `yaml:"api,omitempty"`        // etcd (default): the v3 JSON gateway
	Prefix    string  `yaml:"prefix,omitempty"`     // the API's path prefix (etcd 3.4: /v3, the default)
	Keys      int     `yaml:"keys,omitempty"`       // keys per user (default 8)
	Reads     float64 `yaml:"reads,omitempty"`      // share of gets (default 0.5)
	ValueSize int     `yaml:"value_size,omitempty"` // bytes per value (default 64)
}

// Knee is the workload.knee section: how to search for the saturation
// point. Every field has a default (docs/scenario.md); durations are scaled
// by --time-scale.
type Knee struct {
	Start    float64  `yaml:"start"`     // first rate offered, requests/s (default 50)
	Max      float64  `yaml:"max"`       // highest rate offered (default 20000)
	Factor   float64  `yaml:"factor"`    // growth from one ramp step to the next (default 1.5)
	Refine   int      `yaml:"refine"`    // bisection steps between the last passing and the first failing rate (default 3)
	StepTime Duration `yaml:"step_time"` // how long each rate is offered (default 5s)
	Goodput  float64  `yaml:"goodput"`   // a step passes with goodput at least this (default 0.99) ...
	P99      Duration `yaml:"p99"`       // ... and p99 latency at most this (default 1s)
	Fraction float64  `yaml:"fraction"`  // the run's rate is fraction × knee (default 0.9)
}

// SweepRun places a run in a sweep (faultbench sweep): the sweep's name,
// the configuration's number (from 1), the repetition (from 1) and the
// grid's values for this configuration, in the grid's order.
type SweepRun struct {
	Name       string       `yaml:"name"`
	Config     int          `yaml:"config"`
	Repetition int          `yaml:"repetition"`
	Params     []SweepParam `yaml:"params"`
}

// SweepParam is one grid key (a scenario key path such as workload.users)
// and its value in this configuration, written as YAML flow text.
type SweepParam struct {
	Key   string `yaml:"key"`
	Value string `yaml:"value"`
}

// Phase is a named stretch of the run; phases follow each other.
type Phase struct {
	Name     string   `yaml:"name"`
	Duration Duration `yaml:"duration"`
}

// Fault is one entry of the fault schedule (docs/scenario.md).
type Fault struct {
	Type     string   `yaml:"type"`
	Node     NodeRef  `yaml:"node,omitempty"`
	Nodes    []int    `yaml:"nodes,omitempty"`
	Link     []int    `yaml:"link,omitempty"`
	Group    [][]int  `yaml:"group,omitempty"`
	Disk     *int     `yaml:"disk,omitempty"`
	Scope    string   `yaml:"scope,omitempty"` // "" (intra-cluster) | client
	At       Duration `yaml:"at"`
	Duration Duration `yaml:"duration,omitempty"`
	Mode     string   `yaml:"mode,omitempty"`  // transient (default) | sticky
	Every    string   `yaml:"every,omitempty"` // poisson(120s) | gaussian(120s, 20s) | fixed(60s)
	// Params are fault-specific settings (e.g. delay: 50ms, loss: 0.1, rate: 1MB).
	Params map[string]string `yaml:"params,omitempty"`
}

// Operator is the simulated administrator.
type Operator struct {
	// DetectAfter is how long after a fault's injection the operator notices it (0: never).
	DetectAfter Duration `yaml:"detect_after,omitempty"`
	Policy      string   `yaml:"policy,omitempty"` // restart-failed | restart-all | reboot-node | none
	// ActionTime is how long a repair action takes once started.
	ActionTime Duration `yaml:"action_time,omitempty"`
	// Response is the law of the extra delay between detection and action:
	// fixed(D) | exponential(MEAN). Empty means no extra delay.
	Response string `yaml:"response,omitempty"`
}

// NodeRef is a fault target: a node number, or "any" (one drawn by the seed).
// Zero means unset.
type NodeRef struct {
	N   int
	Any bool
}

// IsSet reports whether a node was given.
func (r NodeRef) IsSet() bool { return r.N != 0 || r.Any }

func (r NodeRef) String() string {
	if r.Any {
		return "any"
	}
	return fmt.Sprint(r.N)
}

// Duration is a time.Duration written as a Go duration string ("90s") in YAML.
type Duration struct{ time.Duration }

// D wraps a time.Duration.
func D(d time.Duration) Duration { return Duration{d} }

func (d Duration) String() string { return d.Duration.String() }

// Seconds is the duration in float seconds.
func (d Duration) Seconds() float64 { return d.Duration.Seconds() }

// GuardRule is one entry of the scenario's guard (docs/guard.md): an
// expression over the run's own record, written as a string
// ("goodput < 0.5 for 10s"), or a mapping holding an HTTP health probe
// (probe: URL) or a PromQL query (promql:, prometheus:, when:).
type GuardRule struct {
	Expr       string   `yaml:"-"`
	Probe      string   `yaml:"probe,omitempty"`      // URL that must answer 2xx or 3xx
	PromQL     string   `yaml:"promql,omitempty"`     // an instant query; its largest value is compared
	Prometheus string   `yaml:"prometheus,omitempty"` // the Prometheus server's base URL
	When       string   `yaml:"when,omitempty"`       // the query's condition, "OP VALUE", e.g. "> 0.5"
	For        Duration `yaml:"for,omitempty"`        // how long the condition must hold; 0: once
	Every      Duration `yaml:"every,omitempty"`      // how often to probe or query; default 1s
	Timeout    Duration `yaml:"timeout,omitempty"`    // per probe or query; default 1s
}
