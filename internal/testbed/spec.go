package testbed

import (
	"errors"
	"fmt"
	"time"

	"github.com/faultbench/faultbench/internal/scenario"
)

// Clock tells the time since the run started; events are stamped with it.
type Clock interface{ Now() time.Duration }

// ClockFunc adapts a function to Clock.
type ClockFunc func() time.Duration

// Now calls f.
func (f ClockFunc) Now() time.Duration { return f() }

// Since is the wall clock of a run that started at start.
func Since(start time.Time) Clock {
	return ClockFunc(func() time.Duration { return time.Since(start) })
}

// CommandSystem is the Spec.System of the user's own service (docs/scenario.md).
const CommandSystem = "command"

// RunIDEnv is the environment variable through which every process a run
// starts learns the run's id (Spec.RunID), so that whatever a killed run
// left behind can be found by it.
const RunIDEnv = "FAULTBENCH_RUN_ID"

// Spec says what cluster to start. Every other System is a node kind of this
// binary, started as `EXE node SYSTEM --listen ADDR ...`.
type Spec struct {
	System  string // a node kind (static, press, ...) or "command"
	Mode    string
	Nodes   int
	Command []string // system command: argv with {addr} {port} {node} {dir}
	// Image and ImageEnv are system container's (backend docker): the
	// user's image and the environment of its containers.
	Image    string
	ImageEnv []string
	// Port is the port every node listens on at its own address; 0 picks a
	// free port per node (tests; concurrent runs).
	Port int
	// Ready is the HTTP path polled until 200; empty means /health for node
	// kinds of this binary and a TCP connect for a command.
	Ready        string
	ReadyTimeout time.Duration // default 10s
	Boot         time.Duration // how long a downed host stays down (used by fault and operator); default 30s
	StopGrace    time.Duration // SIGTERM to SIGKILL on a graceful stop; default 2s
	Dir          string        // results dir; node i works in Dir/node-i and logs to Dir/node-i.log
	Pages        int
	PageSize     int
	Options      map[string]string
	// CPUs, when not empty, is the CPU list (cluster.cpus) every node
	// process is pinned to; only a backend that is a CPUPinner takes it.
	CPUs string
	// NodeOptions, when set, gives node i options of its own (addresses
	// that differ per node, such as press's peer.J proxies), merged over
	// Options; a key it returns wins. It is called at every start of the
	// node, so a restarted node gets the same options.
	NodeOptions func(node int) map[string]string
	// Executable is the binary holding the node programs; default os.Executable().
	Executable string
	// Env is appended to the environment of every node (tests use it to make
	// a test binary act as `faultbench node`).
	Env []string
	// FirstHost is where a backend starts numbering its hosts (the local
	// backend: the last octet of node 1's loopback address); 0 is the
	// backend's default. Tests use it to keep concurrent clusters apart.
	FirstHost int
	// RunID labels everything the run starts: the backend passes it to
	// every process in RunIDEnv (and on the command line where it can
	// label things). Empty outside a run.
	RunID string
	// Clock stamps events; default: time since the cluster started.
	Clock Clock
	// Window is the run's analysis window (workload.window, scaled); a
	// Sampler samples at least this often. Zero outside a run.
	Window time.Duration
	// Attach, when set, names running containers to use as the nodes
	// instead of starting any (backend docker; Nodes may be 0 until the
	// backend's Plan has found them).
	Attach *scenario.Attach
}

// FromScenario fills a Spec from a scenario's cluster section.
func FromScenario(c scenario.ClusterSpec, dir string) Spec {
	return Spec{
		System: c.System, Mode: c.Mode, Nodes: c.Nodes, Command: c.Command, Port: c.Port,
		Ready: c.Ready, ReadyTimeout: c.ReadyTimeout.Duration, Boot: c.Boot.Duration,
		Dir: dir, Pages: c.Pages, PageSize: c.PageSize, Options: c.Options,
		Image: c.Image, ImageEnv: c.Env, CPUs: c.CPUs, Attach: c.Attach,
	}
}

// DefaultBoot is the boot time when the scenario gives none (fault.Expand
// uses the same default).
const DefaultBoot = 30 * time.Second

// MaxNodes bounds the cluster (the local backend keeps every address
// inside one /24).
const MaxNodes = 200

// ErrStopped is returned by a node operation after Stop.
var ErrStopped = errors.New("cluster stopped")

// Validate fills the defaults of s (ReadyTimeout, StopGrace, Boot) and
// checks what every backend needs. A backend calls it first in Plan and
// Start, and adds its own limits.
func (s *Spec) Validate() error {
	if s.ReadyTimeout <= 0 {
		s.ReadyTimeout = 10 * time.Second
	}
	if s.StopGrace <= 0 {
		s.StopGrace = 2 * time.Second
	}
	if s.Boot <= 0 {
		s.Boot = DefaultBoot
	}
	switch {
	case s.System == "":
		return errors.New("cluster: no system given")
	case (s.Nodes < 1 && s.Attach == nil) || s.Nodes > MaxNodes:
		return fmt.Errorf("cluster: nodes must be 1..%d, got %d", MaxNodes, s.Nodes)
	case s.System == CommandSystem && len(s.Command) == 0:
		return errors.New("cluster: system command needs a command")
	case s.Port < 0 || s.Port > 65535:
		return fmt.Errorf("cluster: port %d out of range", s.Port)
	}
	return nil
}
