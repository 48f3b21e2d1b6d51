package live

import (
	"encoding/json"
	"math"

	"github.com/faultbench/faultbench/internal/record"
)

// Line is one JSON line of --live: a windows.csv row (same names; an empty
// cell is null), the phase the window starts in, the system series, the
// faults active at some moment of the window, the run's results directory
// and, in a sweep, the run's place in it.
type Line struct {
	TStartS      float64             `json:"t_start_s"`
	Offered      int64               `json:"offered"`
	OK           int64               `json:"ok"`
	ConnError    int64               `json:"conn_error"`
	ConnAbort    int64               `json:"conn_abort"`
	Timeout      int64               `json:"timeout"`
	HTTPError    int64               `json:"http_error"`
	DataError    int64               `json:"data_error"`
	ThroughputOK *float64            `json:"throughput_ok_per_s"`
	LatencyMean  *float64            `json:"latency_mean_s"`
	LatencyP50   *float64            `json:"latency_p50_s"`
	LatencyP90   *float64            `json:"latency_p90_s"`
	LatencyP99   *float64            `json:"latency_p99_s"`
	LatencyMax   *float64            `json:"latency_max_s"`
	GenRefused   int64               `json:"gen_refused"`
	CutShort     int64               `json:"cut_short"`
	SendLagP99   *float64            `json:"send_lag_p99_s"`
	SendLagMax   *float64            `json:"send_lag_max_s"`
	Valid        int                 `json:"valid"`
	Phase        string              `json:"phase,omitempty"`
	Series       map[string]*float64 `json:"series,omitempty"`
	ActiveFaults []FaultState        `json:"active_faults"`
	RunDir       string              `json:"run_dir,omitempty"`
	Sweep        *Position           `json:"sweep,omitempty"`
}

// num is v, or nil (null) when v is not a number.
func num(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// lineOf is the JSON line of w. The caller holds h.mu.
func (h *Hub) lineOf(w *record.Window) Line {
	l := Line{TStartS: w.StartS, Offered: w.Offered, GenRefused: w.GenRefused, CutShort: w.CutShort,
		ThroughputOK: num(w.ThroughputOK), LatencyMean: num(w.LatencyMean), LatencyP50: num(w.LatencyP50),
		LatencyP90: num(w.LatencyP90), LatencyP99: num(w.LatencyP99), LatencyMax: num(w.LatencyMax),
		SendLagP99: num(w.SendLagP99), SendLagMax: num(w.SendLagMax)}
	o := w.Outcomes
	l.OK, l.ConnError, l.ConnAbort = o[record.OK], o[record.ConnError], o[record.ConnAbort]
	l.Timeout, l.HTTPError, l.DataError = o[record.Timeout], o[record.HTTPError], o[record.DataError]
	if w.Valid {
		l.Valid = 1
	}
	for _, p := range h.cfg.Phases {
		if w.StartS >= p.StartS && w.StartS < p.EndS {
			l.Phase = p.Name
		}
	}
	if len(w.Series) > 0 {
		l.Series = make(map[string]*float64, len(w.Series))
		for k, v := range w.Series {
			l.Series[k] = num(v)
		}
	}
	l.ActiveFaults = h.activeFaults(w.StartS, w.StartS+h.cfg.WindowS)
	if l.ActiveFaults == nil {
		l.ActiveFaults = []FaultState{}
	}
	l.RunDir, l.Sweep = h.cfg.Dir, h.cfg.Position
	return l
}

// writeLine writes w's line to every --live writer. The caller holds h.mu.
func (h *Hub) writeLine(w *record.Window) {
	if len(h.lines) == 0 || h.lineErr != nil {
		return
	}
	b, err := json.Marshal(h.lineOf(w))
	if err != nil {
		h.lineErr = err
		return
	}
	b = append(b, '\n')
	for _, out := range h.lines {
		if _, err := out.Write(b); err != nil {
			h.lineErr = err
			return
		}
	}
}
