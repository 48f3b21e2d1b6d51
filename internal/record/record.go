// Package record defines what a run records — one Request per attempt, one
// Event per timeline entry — and reads and writes the results directory's
// files (requests.parquet, requests.csv, events.jsonl, windows.csv).
//
// The column names and outcome strings are the contract of DESIGN §3: other
// tools read these files, so names never change.
package record

import (
	"fmt"
)

// Outcome classifies one request attempt. Every attempt has exactly one.
type Outcome uint8

// The six outcome classes of DESIGN §3, in the order windows.csv lists them.
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
}

// Names of the files in a results directory (DESIGN §3).
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
// requests.csv and `faultbench export --csv`.
var Columns = []string{"t_start_s", "latency_s", "outcome", "node", "client", "bytes", "status", "target"}

// WindowColumns are the fixed leading columns of windows.csv; system metric
// series (e.g. "redundancy") follow them.
var WindowColumns = []string{"t_start_s", "offered", "ok", "conn_error", "conn_abort", "timeout", "http_error", "data_error",
	"throughput_ok_per_s", "latency_mean_s", "latency_p50_s", "latency_p90_s", "latency_p99_s", "latency_max_s"}
