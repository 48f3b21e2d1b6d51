// Package scenario is the experiment file of DESIGN §3: its schema, defaults,
// validation with line numbers, time scaling and the seed.
//
// Load parses and validates a whole file before anything runs; every error
// names the file, line and key. Scale multiplies every duration.
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
	Cluster    Cluster            `yaml:"cluster"`
	Workload   Workload           `yaml:"workload"`
	Phases     []Phase            `yaml:"phases"`
	Faults     []Fault            `yaml:"faults,omitempty"`
	Operator   Operator           `yaml:"operator,omitempty"`
	Thresholds []string           `yaml:"thresholds,omitempty"`
	Demerits   map[string]float64 `yaml:"demerits,omitempty"` // conn_abort, conn_error, timeout, http_error, data_error, latency_second, latency_scale
	Baseline   string             `yaml:"baseline,omitempty"` // phase whose settled windows form the baseline band; default: first phase

	file, dir string     // where it was loaded from
	root      *yaml.Node // the parsed file, for line numbers in errors
}

// Cluster says what to start: a reference system or the user's own service.
type Cluster struct {
	System  string   `yaml:"system"`            // static | command | press | ssm | raid | container
	Mode    string   `yaml:"mode,omitempty"`    // system-specific, e.g. press: perf | ha | robust
	Nodes   int      `yaml:"nodes"`             // number of nodes, numbered 1..Nodes
	Backend string   `yaml:"backend,omitempty"` // local (default) | netns | docker
	Command []string `yaml:"command,omitempty"` // system: command; placeholders {addr} {port} {node} {dir}
	Port    int      `yaml:"port,omitempty"`    // port every node listens on at its own address
	Ready   string   `yaml:"ready,omitempty"`   // HTTP path polled until 200 before the run starts
	// ReadyTimeout bounds how long a node may take to become ready.
	ReadyTimeout Duration `yaml:"ready_timeout,omitempty"`
	// Boot is how long a crashed or rebooted node stays unreachable before its services restart.
	Boot Duration `yaml:"boot,omitempty"`
	// Pages and PageSize describe the synthetic page set of static/press nodes.
	Pages    int `yaml:"pages,omitempty"`
	PageSize int `yaml:"page_size,omitempty"`
	// Options are system-specific settings passed through to the node (e.g. cache size).
	Options map[string]string `yaml:"options,omitempty"`
}

// Workload describes the emulated users (seed 000 §3.3.2).
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
	// Users is the ssm/session drivers' pool of emulated users per client
	// (default 64); each makes one request at a time, and an arrival that
	// finds none free is recorded as conn_error with target no-user.
	Users int `yaml:"users,omitempty"`
	// Flow is the session driver's requests per session (default 20).
	Flow int `yaml:"flow,omitempty"`
	// Knee, when given, finds Rate before the run: a search for the rate
	// at which the system saturates (seed 003 §3.3); the run then offers
	// Fraction × that rate. Rate must then be left out.
	Knee *Knee `yaml:"knee,omitempty"`
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

// Phase is a named stretch of the run; phases follow each other.
type Phase struct {
	Name     string   `yaml:"name"`
	Duration Duration `yaml:"duration"`
}

// Fault is one entry of the fault schedule (DESIGN §4).
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
