package sweep

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/faultbench/faultbench/internal/analysis"
)

// Analysis is sweep.json: the study of Dumitras and Narasimhan (2005) over
// a sweep's configurations.
type Analysis struct {
	Sweep   string         `json:"sweep"`
	Keys    []string       `json:"keys"`
	Runs    int            `json:"runs"`
	Failed  int            `json:"runs_failed"`
	Configs []ConfigResult `json:"configs"`
	// OutlierHistogram is Fig. 2(b): the fraction of configurations whose
	// two-sided 3σ outliers are below 1%, 1–2%, ... ≥ 4% of the samples.
	OutlierHistogram []OutlierBin `json:"outlier_histogram"`
	// ConformAfterTrim is the fraction of configurations whose samples pass
	// the 3σ test once the top 1% is dropped (§3: "in most cases,
	// eliminating only 1% ... would make all the remaining samples conform").
	ConformAfterTrim Float `json:"conform_after_1pct_trim_fraction"`
	// Breakdown is Table 1: for each grid key, the share of all outliers
	// that fell in configurations with each of its values.
	Breakdown []KeyBreakdown `json:"outlier_breakdown"`
	// Haircut is Fig. 3: configurations sorted by mean latency, with their
	// maxima (a) and 99th percentiles (b).
	Haircut []HaircutPoint `json:"haircut"`
	// HaircutSpread sums Fig. 3 up: the median over configurations of
	// max/mean and of p99/mean.
	MaxOverMeanMedian Float `json:"max_over_mean_median"`
	P99OverMeanMedian Float `json:"p99_over_mean_median"`
	// ByValue is Fig. 2(a) for every grid key: means and maxima per value.
	ByValue []KeyTrend `json:"by_value"`
	// Knob lists the configurations meeting the p99 goal, cheapest first;
	// empty without a goal.
	Knob *Knob `json:"knob,omitempty"`
}

// ConfigResult is one configuration's pooled repetitions.
type ConfigResult struct {
	Config int               `json:"config"`
	Params map[string]string `json:"params"`
	Runs   int               `json:"runs"`
	Dist   Dist              `json:"latency"`
	// ThroughputPerS is the mean over its complete runs of summary.json's
	// throughput_mean_per_s.
	ThroughputPerS Float `json:"throughput_mean_per_s"`
	params         []string
}

// OutlierBin is one bar of Fig. 2(b).
type OutlierBin struct {
	Label    string `json:"label"` // "<1%", "1-2%", ..., ">=4%"
	Configs  int    `json:"configs"`
	Fraction Float  `json:"fraction"`
}

// KeyBreakdown is one column of Table 1.
type KeyBreakdown struct {
	Key    string       `json:"key"`
	Values []ValueShare `json:"values"`
}

// ValueShare is one cell of Table 1.
type ValueShare struct {
	Value    string `json:"value"`
	Outliers int    `json:"outliers"`
	Share    Float  `json:"share"` // of all outliers of the sweep
	// Samples is the share of all samples, to read Share against: a value
	// that got more samples gets more outliers at the same rate.
	Samples Float `json:"samples_share"`
}

// HaircutPoint is one configuration in Fig. 3.
type HaircutPoint struct {
	Config int   `json:"config"`
	Mean   Float `json:"mean_s"`
	Max    Float `json:"max_s"`
	P99    Float `json:"p99_s"`
}

// KeyTrend is Fig. 2(a) for one grid key.
type KeyTrend struct {
	Key    string       `json:"key"`
	Values []ValueTrend `json:"values"`
}

// ValueTrend summarises the configurations sharing one value of a key.
type ValueTrend struct {
	Value      string `json:"value"`
	Configs    int    `json:"configs"`
	MeanOfMean Float  `json:"mean_of_means_s"`
	MeanOfP99  Float  `json:"mean_of_p99_s"`
	MaxOfMax   Float  `json:"max_of_maxima_s"`
	MeanOfMax  Float  `json:"mean_of_maxima_s"`
}

// Knob is the high-level latency knob of §3.1: which configurations keep
// their 99th percentile under the goal.
type Knob struct {
	P99GoalS float64  `json:"p99_goal_s"`
	CostKeys []string `json:"cost_keys"`
	// Meeting lists the configurations whose p99 is within the goal,
	// cheapest first (cost keys ascending, in their order; then lower p99).
	// Confident says the goal also holds for the p99's 95% upper bound.
	Meeting []KnobChoice `json:"meeting"`
}

// KnobChoice is one configuration that meets the goal.
type KnobChoice struct {
	Config    int               `json:"config"`
	Params    map[string]string `json:"params"`
	P99       Float             `json:"p99_s"`
	P99High   Float             `json:"p99_ci95_high_s"`
	Confident bool              `json:"confident"`
}

// AnalyzeOptions adjust Analyze.
type AnalyzeOptions struct {
	// P99Goal, when positive, fills the knob view.
	P99Goal time.Duration
	// CostKeys order the configurations meeting the goal: numerically
	// ascending in the first key, then the next.
	CostKeys []string
}

// Analyze computes the sweep analysis from the runs of t: the attempts of
// a configuration's complete runs are pooled (every outcome, as the
// latency metrics of docs/metrics.md) and described; failed and incomplete runs
// are counted and left out. Memory is one configuration's samples.
func Analyze(t *Table, opt AnalyzeOptions) (*Analysis, error) {
	a := &Analysis{Keys: t.Keys, Runs: len(t.Rows)}
	for _, k := range opt.CostKeys {
		if !contains(t.Keys, k) {
			return nil, fmt.Errorf("cost key %s is not a grid key (%v)", k, t.Keys)
		}
	}
	// Group rows by configuration, keeping row order.
	type group struct {
		rows []*Row
	}
	var order []int
	groups := map[int]*group{}
	for i := range t.Rows {
		r := &t.Rows[i]
		if a.Sweep == "" {
			a.Sweep = r.Sweep
		}
		if r.Status != StatusComplete {
			a.Failed++
			continue
		}
		g, ok := groups[r.Config]
		if !ok {
			g = &group{}
			groups[r.Config] = g
			order = append(order, r.Config)
		}
		g.rows = append(g.rows, r)
	}
	var samples []float64
	for _, c := range order {
		g := groups[c]
		samples = samples[:0]
		var tput float64
		for _, r := range g.rows {
			if err := analysis.EachLatency(r.Dir, func(l float64) error { samples = append(samples, l); return nil }); err != nil {
				return nil, fmt.Errorf("%s: %w", r.Dir, err)
			}
			tput += r.Metrics["throughput_mean_per_s"]
		}
		cr := ConfigResult{Config: c, Params: map[string]string{}, Runs: len(g.rows), Dist: Describe(samples),
			ThroughputPerS: Float(tput / float64(len(g.rows)))}
		for _, k := range t.Keys {
			cr.Params[k] = g.rows[0].Param(k)
			cr.params = append(cr.params, g.rows[0].Param(k))
		}
		a.Configs = append(a.Configs, cr)
	}
	a.fig2b()
	a.table1(t)
	a.fig3()
	a.fig2a(t)
	if opt.P99Goal > 0 {
		a.knob(opt.P99Goal.Seconds(), opt.CostKeys)
	}
	return a, nil
}

func (a *Analysis) fig2b() {
	labels := []string{"<1%", "1-2%", "2-3%", "3-4%", ">=4%"}
	counts := make([]int, len(labels))
	conform := 0
	for _, c := range a.Configs {
		if c.Dist.N == 0 {
			continue
		}
		pct := 100 * float64(c.Dist.OutlierFraction)
		counts[min(len(labels)-1, int(math.Floor(pct)))]++
		if c.Dist.TrimmedConforms {
			conform++
		}
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	for i, l := range labels {
		a.OutlierHistogram = append(a.OutlierHistogram, OutlierBin{Label: l, Configs: counts[i], Fraction: ratio(counts[i], total)})
	}
	a.ConformAfterTrim = ratio(conform, total)
}

func (a *Analysis) table1(t *Table) {
	totalOut, totalN := 0, 0
	for _, c := range a.Configs {
		totalOut += c.Dist.Outliers
		totalN += c.Dist.N
	}
	for ki, k := range t.Keys {
		kb := KeyBreakdown{Key: k}
		for _, v := range valuesOf(a.Configs, ki) {
			out, n := 0, 0
			for _, c := range a.Configs {
				if c.params[ki] == v {
					out += c.Dist.Outliers
					n += c.Dist.N
				}
			}
			kb.Values = append(kb.Values, ValueShare{Value: v, Outliers: out, Share: ratio(out, totalOut), Samples: ratio(n, totalN)})
		}
		a.Breakdown = append(a.Breakdown, kb)
	}
}

func (a *Analysis) fig3() {
	var maxRatio, p99Ratio []float64
	for _, c := range a.Configs {
		if c.Dist.N == 0 {
			continue
		}
		a.Haircut = append(a.Haircut, HaircutPoint{Config: c.Config, Mean: c.Dist.Mean, Max: c.Dist.Max, P99: c.Dist.P99})
		if c.Dist.Mean > 0 {
			maxRatio = append(maxRatio, float64(c.Dist.Max/c.Dist.Mean))
			p99Ratio = append(p99Ratio, float64(c.Dist.P99/c.Dist.Mean))
		}
	}
	sort.SliceStable(a.Haircut, func(i, j int) bool { return a.Haircut[i].Mean < a.Haircut[j].Mean })
	sort.Float64s(maxRatio)
	sort.Float64s(p99Ratio)
	a.MaxOverMeanMedian, a.P99OverMeanMedian = Float(Quantile(maxRatio, 0.5)), Float(Quantile(p99Ratio, 0.5))
}

func (a *Analysis) fig2a(t *Table) {
	for ki, k := range t.Keys {
		kt := KeyTrend{Key: k}
		for _, v := range valuesOf(a.Configs, ki) {
			vt := ValueTrend{Value: v, MaxOfMax: Float(math.Inf(-1))}
			var sm, sp, sx float64
			for _, c := range a.Configs {
				if c.params[ki] != v || c.Dist.N == 0 {
					continue
				}
				vt.Configs++
				sm += float64(c.Dist.Mean)
				sp += float64(c.Dist.P99)
				sx += float64(c.Dist.Max)
				vt.MaxOfMax = Float(math.Max(float64(vt.MaxOfMax), float64(c.Dist.Max)))
			}
			n := float64(vt.Configs)
			vt.MeanOfMean, vt.MeanOfP99, vt.MeanOfMax = Float(sm/n), Float(sp/n), Float(sx/n)
			kt.Values = append(kt.Values, vt)
		}
		a.ByValue = append(a.ByValue, kt)
	}
}

func (a *Analysis) knob(goal float64, cost []string) {
	k := &Knob{P99GoalS: goal, CostKeys: cost, Meeting: []KnobChoice{}}
	idx := make([]int, len(cost))
	for i, c := range cost {
		idx[i] = indexOf(a.Keys, c)
	}
	var meet []ConfigResult
	for _, c := range a.Configs {
		if c.Dist.N > 0 && float64(c.Dist.P99) <= goal {
			meet = append(meet, c)
		}
	}
	sort.SliceStable(meet, func(i, j int) bool {
		for _, ki := range idx {
			if d := compareValues(meet[i].params[ki], meet[j].params[ki]); d != 0 {
				return d < 0
			}
		}
		return meet[i].Dist.P99 < meet[j].Dist.P99
	})
	for _, c := range meet {
		high := c.Dist.P99High
		k.Meeting = append(k.Meeting, KnobChoice{Config: c.Config, Params: c.Params, P99: c.Dist.P99, P99High: high,
			Confident: !math.IsNaN(float64(high)) && float64(high) <= goal})
	}
	a.Knob = k
}

// valuesOf lists a key's values in the order configurations first use them.
func valuesOf(cs []ConfigResult, ki int) []string {
	var vs []string
	for _, c := range cs {
		if !contains(vs, c.params[ki]) {
			vs = append(vs, c.params[ki])
		}
	}
	return vs
}

// compareValues orders numbers numerically and anything else as text.
func compareValues(a, b string) int {
	fa, ea := strconv.ParseFloat(a, 64)
	fb, eb := strconv.ParseFloat(b, 64)
	if ea == nil && eb == nil {
		switch {
		case fa < fb:
			return -1
		case fa > fb:
			return 1
		}
		return 0
	}
	if da, err := time.ParseDuration(a); err == nil {
		if db, err := time.ParseDuration(b); err == nil {
			return int(da - db)
		}
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func ratio(a, b int) Float {
	if b == 0 {
		return Float(math.NaN())
	}
	return Float(float64(a) / float64(b))
}

func contains(xs []string, x string) bool { return indexOf(xs, x) >= 0 }

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
