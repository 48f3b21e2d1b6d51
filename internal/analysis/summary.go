package analysis

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/faultbench/faultbench/internal/placement"
	"github.com/faultbench/faultbench/internal/provenance"
)

// Summary is summary.json (docs/results.md). Key names are a contract: add, never rename.
type Summary struct {
	// SchemaVersion is the results schema of the faultbench that computed
	// this summary (provenance.SchemaVersion); a summary without it is of
	// schema 1.
	SchemaVersion int  `json:"schema_version"`
	Complete      bool `json:"complete"`
	// IncompleteReason says what cut the run short when Complete is false.
	IncompleteReason string `json:"incomplete_reason,omitempty"`
	// Provenance is what made the record (provenance.json); null for
	// results of schema 1 and from other tools.
	Provenance *provenance.Info `json:"provenance"`
	// Definitions are the run's choices that the metrics depend on; two
	// runs are comparable only when they agree (CompareDefinitions).
	Definitions *Definitions       `json:"definitions"`
	Run         RunInfo            `json:"run"`
	Overall     Metrics            `json:"overall"`
	Phases      map[string]Metrics `json:"phases"`
	PhaseOrder  []string           `json:"phase_order"` // phase names in run order (maps lose it)
	Failure     *Metrics           `json:"failure"`     // the failure interval; null when no failure was found (see docs/metrics.md)
	Baseline    *Baseline          `json:"baseline"`    // null when no fault-free windows exist
	Deviations  []Deviation        `json:"deviations"`
	// DeviationSummary condenses Deviations (Brown and Patterson 2000, §2.3); null without a band.
	DeviationSummary *DeviationSummary `json:"deviation_summary"`
	Faults           []FaultResult     `json:"faults"`
	// Thresholds are the scenario's declared checks and whether the run met them.
	Thresholds []ThresholdResult `json:"thresholds,omitempty"`
	// Trace is what the access-log replay skipped (malformed Common Log
	// Format lines); absent when nothing was skipped.
	Trace *TraceInfo `json:"trace,omitempty"`
	// KV is what the kv driver's read-your-writes checker found; absent
	// without a kv history (kv.go).
	KV *KVSummary `json:"kv,omitempty"`
	// Aborted says what stopped the run early: the scenario's guard
	// (docs/guard.md), read from the abort event; absent otherwise.
	Aborted *Aborted `json:"aborted,omitempty"`
	// Notes say, in a sentence each, what limits how the numbers may be
	// read (e.g. a record that was its own baseline).
	Notes []string `json:"notes,omitempty"`
}

// RunInfo identifies the run.
type RunInfo struct {
	Name      string  `json:"name"`
	DurationS float64 `json:"duration_s"`
	Attempts  int64   `json:"attempts"`
	Seed      int64   `json:"seed"`
	WindowS   float64 `json:"window_s"`
	// Phases are the phase names in run order (the "phases" object of
	// Summary cannot keep an order).
	Phases []string `json:"phases"`
	// Placement is where the nodes and the controller ran (CPUs pinned,
	// mechanism), from provenance.json; absent for results without it.
	Placement *placement.Record `json:"placement,omitempty"`
}

// Definitions are what a metric's value depends on beyond the record: the
// window (band, deviations, failure duration), the timeouts (which attempts
// are timeout or conn_abort), the demerit weights and the baseline.
type Definitions struct {
	WindowS          float64            `json:"window_s"`
	ConnectTimeoutS  Float              `json:"connect_timeout_s"`  // null without a scenario
	ResponseTimeoutS Float              `json:"response_timeout_s"` // null without a scenario
	Demerits         map[string]float64 `json:"demerits"`
	// Baseline says where the band and punctuality's ideal came from:
	// "phase" (the scenario's baseline phase, warm-up settled), "run" (a
	// baseline run, --baseline), "window" (--baseline-window) or "self"
	// (no fault-free period was known, so the whole record was its own
	// baseline: punctuality near 1 and the band then mean nothing).
	Baseline string `json:"baseline"`
	// BaselineWindowS is the --baseline-window [start, end) in seconds.
	BaselineWindowS []float64 `json:"baseline_window_s,omitempty"`
	// Judge is the figure each window was held against the band by
	// (schema 3): "throughput" (ok/s; every summary of schema 2 and before,
	// and closed-loop users) or "goodput" (ok/offered × the baseline's
	// offered rate; open-loop arrivals). Deviations, failure durations,
	// classes and stage bounds depend on it; `analyze --judge` chooses.
	Judge string `json:"judge,omitempty"`
}

// Metrics is the metric set M of docs/results.md over one period.
// Values that a period cannot define (no attempts, no baseline) are NaN in Go
// and null in JSON.
type Metrics struct {
	StartS               float64            `json:"start_s"`
	EndS                 float64            `json:"end_s"`
	DurationS            float64            `json:"duration_s"` // seconds the period covers (less than end−start when the failure interval has gaps)
	Attempts             int64              `json:"attempts"`
	Outcomes             map[string]int64   `json:"outcomes"`
	ThroughputTotal      int64              `json:"throughput_total"`
	ThroughputMeanPerS   Float              `json:"throughput_mean_per_s"`
	OfferedPerS          Float              `json:"offered_per_s"`
	LatencyTotalS        Float              `json:"latency_total_s"`
	LatencyMeanS         Float              `json:"latency_mean_s"`
	LatencyTrimmedMeanS  Float              `json:"latency_trimmed_mean_s"`
	LatencyStddevS       Float              `json:"latency_stddev_s"`
	LatencyP50S          Float              `json:"latency_p50_s"`
	LatencyP90S          Float              `json:"latency_p90_s"`
	LatencyP99S          Float              `json:"latency_p99_s"`
	LatencyP999S         Float              `json:"latency_p999_s"`
	LatencyMaxS          Float              `json:"latency_max_s"`
	Goodput              Float              `json:"goodput"`
	Punctuality          Float              `json:"punctuality"`
	Yield                Float              `json:"yield"`
	Demerits             Float              `json:"demerits"`
	PExceed              map[string]Float   `json:"p_exceed"` // keys "0.1", "1", "2", "8", "10" (seconds)
	Outliers3SigmaFrac   Float              `json:"outliers_3sigma_fraction"`
	LatencyMaxTrimmed1pc Float              `json:"latency_max_trimmed_1pct_s"`
	Extra                map[string]float64 `json:"extra,omitempty"`

	// Outliers3SigmaTwoSidedFrac counts attempts farther than 3σ from the
	// mean on either side, as Dumitras and Narasimhan (2005) §2.2 do;
	// outliers_3sigma_fraction keeps counting the high side only.
	Outliers3SigmaTwoSidedFrac Float `json:"outliers_3sigma_two_sided_fraction"`
	// The generator's own account, apart from the service's figures above
	// (which count measured attempts only; docs/metrics.md).
	// Arrivals = Attempts + GenRefused + CutShort: every attempt scheduled.
	Arrivals int64 `json:"arrivals"`
	// GenRefused counts arrivals the generator itself did not send, and
	// GenRefusedBy by reason: max_in_flight, no_user, no_conn.
	GenRefused   int64            `json:"gen_refused"`
	GenRefusedBy map[string]int64 `json:"gen_refused_by"`
	// CutShort counts attempts unfinished when the run was cut.
	CutShort int64 `json:"cut_short"`
	// CheckFailures counts the attempts whose expectation failed, by the
	// check's name ("REQUEST: CHECK", docs/real-services.md); absent when
	// the workload checks nothing or nothing failed. Every one of them is
	// also counted in outcomes (http_error for a status, data_error else).
	CheckFailures map[string]int64 `json:"check_failures,omitempty"`
	// SendLagP99S and SendLagMaxS: from scheduled time to the moment an
	// attempt was handed to its connection, over the attempts sent.
	SendLagP99S Float `json:"send_lag_p99_s"`
	SendLagMaxS Float `json:"send_lag_max_s"`
	// InvalidWindows counts the period's windows that are not a valid
	// measurement of the service (the generator refused, cut short, or
	// lagged; record.Window.Judge).
	InvalidWindows int `json:"invalid_windows"`
}

// Baseline is the fault-free band: mean ± 2.576σ of the windows' judged
// figure (Judge: ok throughput, or goodput × the offered rate).
type Baseline struct {
	Source  string  `json:"source"` // "warmup" (a phase name) or a baseline run directory
	Windows int     `json:"windows"`
	Mean    float64 `json:"mean"`
	Stddev  float64 `json:"stddev"`
	Low     float64 `json:"low"`
	High    float64 `json:"high"`
	// LatencyMeanS is the baseline's mean latency: the "ideal" of punctuality.
	LatencyMeanS Float `json:"latency_mean_s"`
	// Judge is Definitions.Judge: what Mean, Stddev, Low and High measure
	// (both are in ok/s). OfferedPerS is the baseline windows' mean offered
	// rate: the R a goodput judge scales by (schema 3).
	Judge       string `json:"judge,omitempty"`
	OfferedPerS Float  `json:"offered_per_s"`
}

// Deviation is a maximal run of windows outside the baseline band.
type Deviation struct {
	StartS  float64 `json:"start_s"`
	LengthS float64 `json:"length_s"`
	Depth   float64 `json:"depth"` // largest distance outside the band, requests/s
	Area    float64 `json:"area"`  // sum over windows of distance outside × window length (requests)
	EndS    float64 `json:"end_s"`
	Windows int     `json:"windows"`
	Side    string  `json:"side"` // "low" (below the band), "high" (above) or "both"
}

// FaultResult is the per-fault analysis.
type FaultResult struct {
	Type             string           `json:"type"`
	Node             int              `json:"node"`
	InjectS          float64          `json:"inject_s"`
	ClearS           Float            `json:"clear_s"` // null when never cleared
	FaultDurationS   Float            `json:"fault_duration_s"`
	FailureDurationS Float            `json:"failure_duration_s"` // 0 when users noticed nothing
	Class            string           `json:"class"`              // A, B, C-1, C-2, D; "" without a baseline band
	Stages           map[string]Stage `json:"stages"`             // "A".."G"
	// FailureStartS and FailureEndS bound the failure; null when users noticed nothing.
	FailureStartS Float `json:"failure_start_s"`
	FailureEndS   Float `json:"failure_end_s"`
	// Recovered is false when throughput was still outside the band when the
	// fault's span (up to the next fault or the end of the run) ended.
	Recovered bool `json:"recovered"`
	// Repaired is true when an operator action fell inside the failure.
	Repaired bool `json:"repaired"`
	// Redundancy is what the system's redundancy series did during the
	// fault's span: "kept", "lost" (fell and stayed down), "restored" (fell,
	// then came back: a rebuild); "" when the run has no such series.
	Redundancy string `json:"redundancy,omitempty"`
}

// Stage is one stage of Nagaraja's 7-stage piece-wise linear model.
type Stage struct {
	DurationS  float64 `json:"duration_s"`
	Throughput Float   `json:"throughput"`
	Measured   bool    `json:"measured"`
}

// ThresholdResult is one of the scenario's thresholds evaluated on the run.
type ThresholdResult struct {
	Expr   string `json:"expr"`
	Value  Float  `json:"value"`
	Passed bool   `json:"passed"`
}

// Float is a float64 that is written as null in JSON when it is NaN or ±Inf,
// so summary.json never holds a value JSON cannot represent.
type Float float64

// NaN is the undefined Float.
var NaN = Float(math.NaN())

// Valid reports whether f is a finite number.
func (f Float) Valid() bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }

// MarshalJSON writes null for NaN and ±Inf.
func (f Float) MarshalJSON() ([]byte, error) {
	if !f.Valid() {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, float64(f), 'g', -1, 64), nil
}

// UnmarshalJSON reads null as NaN.
func (f *Float) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = NaN
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Float(v)
	return nil
}

// Aborted is summary.json's "aborted": the guard rule that held and the
// run time at which it did.
type Aborted struct {
	By  string  `json:"by"`
	AtS float64 `json:"at_s"`
}
