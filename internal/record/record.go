// Package record defines what a run records — one Request per attempt, one
// Event per timeline entry — and reads and writes the results directory's
// files (requests.parquet, requests.csv, events.jsonl, windows.csv).
//
// The record is crash safe: while a run goes on, the Recorder writes
// requests as Parquet segments sealed every few seconds (requests/, see
// SegmentDir), rewrites windows.csv as windows settle, and the EventLog
// writes each event through; a clean Close merges the segments into
// requests.parquet. ReadRequests and RequestFiles read either form, and
// RunState tells from the files whether the run ended cleanly.
//
// The column names and outcome strings are the contract of docs/results.md: other
// tools read these files, so names never change.
package record

import (
	"fmt"
)

// Outcome classifies one request attempt. Every attempt has exactly one.
type Outcome uint8

// The six outcome classes of docs/results.md, in the order windows.csv lists them.
const (
	OK        Outcome = iota // complete and correct response
	ConnError                // connection failed at once (refused, reset before response)
	ConnAbort                // not connected within connect_timeout
	Timeout                  // connected, but no complete response within response_timeout
	HTTPError                // the service answered with an error status
	DataError                // a response arrived but its content failed verification
	numOutcomes
)

// NumOutcomes is the number of outcome classes; Outcome values are 0..NumOutcomes-1.
const NumOutcomes = int(numOutcomes)

var outcomeNames = [numOutcomes]string{"ok", "conn_error", "conn_abort", "timeout", "http_error", "data_error"}

// String returns the outcome's contract name, e.g. "conn_abort".
func (o Outcome) String() string {
	if o < numOutcomes {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// Outcomes lists every outcome in contract order.
func Outcomes() []Outcome {
	return []Outcome{OK, ConnError, ConnAbort, Timeout, HTTPError, DataError}
}

// ParseOutcome maps a contract name back to its Outcome.
func ParseOutcome(s string) (Outcome, error) {
	for i, n := range outcomeNames {
		if n == s {
			return Outcome(i), nil
		}
	}
	return 0, fmt.Errorf("unknown outcome %q (want one of ok, conn_error, conn_abort, timeout, http_error, data_error)", s)
}

// Request is one request attempt as the client saw it.
//
// StartS is when the attempt was *scheduled* (seconds since the run started),
// and LatencyS runs from that scheduled time to the outcome, so a server that
// delays the sender is charged for the delay (no coordinated omission).
type Request struct {
	StartS   float64 // seconds since run start, scheduled send time
	LatencyS float64 // seconds from scheduled start to outcome
	Outcome  Outcome
	Node     int    // node the request was sent to (1-based), 0 if none
	Client   int    // client emulator that sent it (0-based)
	Bytes    int64  // response body bytes received
	Status   int    // HTTP status, or 0
	Target   string // URL path, or the operation for non-HTTP drivers

	// SendLagS is the generator's own delay: seconds from the scheduled
	// time to the moment the attempt was handed to its connection (a new
	// connection's dial began, or a kept one was taken). It is part of
	// LatencyS, never in addition to it. For an attempt never handed over
	// (refused, or cut short before it was sent) it is the time it waited.
	SendLagS float64
	// Refused says why the generator itself did not send the attempt;
	// NotRefused for every attempt it sent. A refused attempt measures the
	// generator, not the service: analysis keeps it out of the six
	// outcome classes (its Outcome is ConnError, what earlier versions
	// recorded, so that older readers still parse the row).
	Refused Refusal
	// CutShort marks an attempt still unfinished when the run was cut
	// (interrupted, or its drain bound reached): LatencyS is the time it
	// had waited so far, and its Outcome (ConnError) is not a service
	// outcome. It is not a timeout: nobody knows whether an answer would
	// have come within response_timeout.
	CutShort bool
	// Check names the failed expectation ("REQUEST: CHECK"), or "".
	Check string
}

// Measured reports whether r is a measurement of the service: sent by the
// generator and finished before the run was cut. Only measured attempts
// enter the six outcome classes and the latency figures.
func (r *Request) Measured() bool { return r.Refused == NotRefused && !r.CutShort }

// Refusal is why the generator itself refused an attempt.
type Refusal uint8

// The generator's refusals, with their names in the gen_refused column.
const (
	NotRefused         Refusal = iota // "" : the attempt was sent
	RefusedMaxInFlight                // "max_in_flight": the client had max_in_flight attempts outstanding
	RefusedNoUser                     // "no_user": every user of a session client was busy
	RefusedNoConn                     // "no_conn": no connection of the client's max_conns came free before connect_timeout
	numRefusals
)

// NumRefusals is the number of Refusal values, NotRefused included.
const NumRefusals = int(numRefusals)

var refusalNames = [numRefusals]string{"", "max_in_flight", "no_user", "no_conn"}

// String returns the refusal's gen_refused name ("" when not refused).
func (f Refusal) String() string {
	if f < numRefusals {
		return refusalNames[f]
	}
	return fmt.Sprintf("refusal(%d)", uint8(f))
}

// ParseRefusal maps a gen_refused name back to its Refusal.
func ParseRefusal(s string) (Refusal, error) {
	for i, n := range refusalNames {
		if n == s {
			return Refusal(i), nil
		}
	}
	return 0, fmt.Errorf("unknown gen_refused %q (want empty, max_in_flight, no_user or no_conn)", s)
}

// Event is one entry of the run's timeline (events.jsonl).
//
// Kinds include phase.start, fault.inject, fault.clear, operator.detect,
// operator.action, node.down, node.up and system.* (events a reference
// system reports). Node is 0 when the event concerns no single node.
type Event struct {
	TS     float64 `json:"t_s"`
	Kind   string  `json:"kind"`
	Node   int     `json:"node,omitempty"`
	Fault  string  `json:"fault,omitempty"`
	Detail string  `json:"detail,omitempty"`
	// ID ties a fault.clear to its fault.inject (same ID); optional.
	ID int `json:"id,omitempty"`
	// RunID is the id of the run that wrote the event (the runner sets it
	// on every event of a run).
	RunID string `json:"run_id,omitempty"`
}

// Names of the files in a results directory (docs/results.md).
const (
	ScenarioFile = "scenario.yaml"
	RequestsFile = "requests.parquet"
	RequestsCSV  = "requests.csv"
	WindowsFile  = "windows.csv"
	EventsFile   = "events.jsonl"
	SummaryFile  = "summary.json"
	ReportFile   = "report.html"
)

// Columns are the per-request columns, in order, of requests.parquet,
// requests.csv and `faultbench export --csv`: every reader requires them.
var Columns = []string{"t_start_s", "latency_s", "outcome", "node", "client", "bytes", "status", "target"}

// GeneratorColumns follow Columns in what this version writes: what the
// generator says about itself (send lag, its own refusals, attempts cut
// short). Readers take them when present; records written before they
// existed read as sent on time, not refused, not cut short.
//
// The last, check, is not the generator's: it names the expectation
// (workload.requests[].expect, docs/real-services.md) whose failure made
// the attempt an http_error or data_error, as "REQUEST: CHECK"; empty
// for every other attempt. Records written before it read as empty.
var GeneratorColumns = []string{"send_lag_s", "gen_refused", "cut_short", "check"}

// WindowColumns are the fixed leading columns of windows.csv; system metric
// series (e.g. "redundancy") follow them.
var WindowColumns = []string{"t_start_s", "offered", "ok", "conn_error", "conn_abort", "timeout", "http_error", "data_error",
	"throughput_ok_per_s", "latency_mean_s", "latency_p50_s", "latency_p90_s", "latency_p99_s", "latency_max_s"}

// WindowGeneratorColumns follow WindowColumns (and precede the system
// series) in what this version writes: the window's attempts the generator
// refused or cut short (offered = the six outcomes + these two), its send
// lag, and whether the window is a valid measurement of the service (1) or
// not (0; see Window.Valid). Readers take them by name when present.
var WindowGeneratorColumns = []string{"gen_refused", "cut_short", "send_lag_p99_s", "send_lag_max_s", "valid"}
