package analysis

import (
	"encoding/json"
	"math"
	"strconv"
)

// Summary is summary.json (DESIGN §3). Key names are a contract: add, never rename.
type Summary struct {
	Complete   bool               `json:"complete"`
	Run        RunInfo            `json:"run"`
	Overall    Metrics            `json:"overall"`
	Phases     map[string]Metrics `json:"phases"`
	PhaseOrder []string           `json:"phase_order"` // phase names in run order (maps lose it)
	Failure    *Metrics           `json:"failure"`     // the failure interval; null when no failure was found (see docs/metrics.md)
	Baseline   *Baseline          `json:"baseline"`    // null when no fault-free windows exist
	Deviations []Deviation        `json:"deviations"`
	// DeviationSummary condenses Deviations (seed 003 §2.3); null without a band.
	DeviationSummary *DeviationSummary `json:"deviation_summary"`
	Faults           []FaultResult     `json:"faults"`
	// Thresholds are the scenario's declared checks and whether the run met them.
	Thresholds []ThresholdResult `json:"thresholds,omitempty"`
}

// RunInfo identifies the run.
type RunInfo struct {
	Name      string  `json:"name"`
	DurationS float64 `json:"duration_s"`
	Attempts  int64   `json:"attempts"`
	Seed      int64   `json:"seed"`
	WindowS   float64 `json:"window_s"`
}

// Metrics is the metric set M of DESIGN §3 over one period.
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
}

// Baseline is the fault-free throughput band: mean ± 2.576σ of window throughput.
type Baseline struct {
	Source  string  `json:"source"` // "warmup" (a phase name) or a baseline run directory
	Windows int     `json:"windows"`
	Mean    float64 `json:"mean"`
	Stddev  float64 `json:"stddev"`
	Low     float64 `json:"low"`
	High    float64 `json:"high"`
	// LatencyMeanS is the baseline's mean latency: the "ideal" of punctuality.
	LatencyMeanS Float `json:"latency_mean_s"`
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
