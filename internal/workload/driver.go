package workload

import (
	"context"
	"crypto/tls"
	"time"

	"github.com/faultbench/faultbench/internal/kvcheck"
	"github.com/faultbench/faultbench/internal/record"
)

// A Driver turns one scheduled attempt into exactly one outcome. Each client
// emulator has its own Driver; Do is called from many goroutines at once
// (one per outstanding attempt) and may block until the attempt's deadlines,
// which it derives from Attempt.Scheduled. When ctx is cancelled the run is
// being abandoned: Do should return promptly, and an outcome it reaches
// after the cancellation is discarded (the attempt is recorded as cut short).
//
// A Driver that holds resources (idle connections) may implement io.Closer;
// the generator calls Close once, after the client's last attempt returned.
type Driver interface {
	Do(ctx context.Context, a Attempt) Result
}

// Attempt is one request as the scheduler hands it to a Driver.
type Attempt struct {
	Scheduled time.Time // when the user asked; every deadline counts from here
	Addr      string    // ip:port to connect to, resolved and checked before the run
	Host      string    // host:port as configured, for the Host header
	Target    string    // URL path, or the operation for non-HTTP drivers
}

// Result is the outcome of one Attempt. End is when the outcome was reached;
// for conn_abort and timeout it is the deadline itself, so those latencies are
// exact and do not include the timer's wake-up delay.
type Result struct {
	Outcome record.Outcome
	End     time.Time
	Status  int   // HTTP status, or 0
	Bytes   int64 // response body bytes received
	// Check names the expectation that failed (workload.requests[].expect),
	// as "REQUEST: CHECK"; empty when none failed or none was checked.
	// It becomes the record's check column.
	Check string
	// Target, when set, is the record's target instead of the attempt's:
	// drivers whose operation is decided at send time (ssm: read or
	// write) name it here.
	Target string
	// Sent is when the attempt was handed to its connection: the dial of
	// a new one began or a kept one was taken. Drivers that wait for a
	// connection or a user before that set it; zero means the moment Do
	// was called. It is what the generator reports as send lag.
	Sent time.Time
	// Refused, when set, says the driver itself did not send the attempt
	// (no free user, no free connection): the attempt measures the
	// generator, not the service. Outcome and End still say what the user
	// saw.
	Refused record.Refusal
}

// DriverConfig is what a driver needs from Config.
type DriverConfig struct {
	ConnectTimeout  time.Duration
	ResponseTimeout time.Duration
	Keepalive       bool
	MaxConns        int // keep-alive only: open connections per address; 0 = no cap
	Verify          func(target string, body []byte) bool
	// Client is the emulator's number (0-based); drivers with per-client
	// state (the session drivers' user names) use it.
	Client int
	// Users is the session drivers' pool of users per client (0: DefaultUsers).
	Users int
	// Flow is the session driver's requests per session (0: DefaultFlow).
	Flow int
	// Requests, when set, makes the http driver send these (templated
	// methods, paths, headers, bodies) instead of GETs of the trace's
	// paths, and check each answer against its expectations.
	Requests *RequestSet
	// TLS, when set, makes the http driver speak HTTPS.
	TLS *tls.Config
	// MaxBody bounds the response body kept for checks (0: DefaultMaxBody).
	MaxBody int64
	// Seed is the scenario's seed: templated requests draw from it.
	Seed int64
	// KV configures the kv driver; KVHistory, when not nil, receives its
	// history (shared by every client; kvcheck.Writer is safe for that).
	KV        KVConfig
	KVHistory *kvcheck.Writer
}

// drivers maps Config.Driver to a constructor. Drivers in their own files
// (session.go: ssm, session) add themselves in an init function.
var drivers = map[string]func(DriverConfig) Driver{
	"http": func(c DriverConfig) Driver { return NewHTTPDriver(c) },
	"null": func(DriverConfig) Driver { return nullDriver{} },
}

// nullDriver sends nothing: every attempt is ok the moment it is handed over.
// It measures the generator's own floor (scheduling, goroutines, sink), as
// bench/loadgen does side by side with the http driver.
type nullDriver struct{}

func (nullDriver) Do(context.Context, Attempt) Result {
	return Result{Outcome: record.OK, End: time.Now()}
}
