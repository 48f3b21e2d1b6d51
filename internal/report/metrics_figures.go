package report

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/faultbench/faultbench/internal/analysis"
)

// metricBars builds one bar chart of a summary metric: categories are the
// periods, one bar per run.
func metricBars(runs []*run, title, yLabel string, get func(*analysis.Metrics) float64) *plot.Plot {
	cats := periodNames(runs)
	var series []barSeries
	for i, r := range runs {
		s := barSeries{Name: r.Label, Color: seriesColor(i)}
		for _, c := range cats {
			v := math.NaN()
			if m := r.metrics(c); m != nil {
				v = get(m)
			}
			s.Values = append(s.Values, v)
		}
		series = append(series, s)
	}
	return newBarPlot(title, yLabel, cats, series)
}

// baselineLines marks each run's baseline value on p, dashed in its colour.
func baselineLines(p *plot.Plot, runs []*run, get func(*analysis.Baseline) float64) bool {
	any := false
	for i, r := range runs {
		if b := r.Summary.Baseline; b != nil {
			if v := get(b); !math.IsNaN(v) {
				col := seriesColor(i)
				if len(runs) == 1 {
					col = grey
				}
				p.Add(&hlines{ys: []float64{v}, style: line(col, 1, 5, 3)})
				p.Y.Max = math.Max(p.Y.Max, v*1.1)
				any = true
			}
		}
	}
	return any
}

func f(v analysis.Float) float64 { return float64(v) }

// rawFigure is Broadwell (2004) Fig. 14: totals, which only compare runs of equal length.
func rawFigure(runs []*run) *figure {
	tp := metricBars(runs, "Total throughput", "ok requests", func(m *analysis.Metrics) float64 { return float64(m.ThroughputTotal) })
	lat := metricBars(runs, "Total latency", "seconds waited (all attempts)", func(m *analysis.Metrics) float64 { return f(m.LatencyTotalS) })
	return panelsFigure("raw-totals", "Raw throughput and latency",
		"Totals per period (Broadwell 2004, Fig. 14): ok requests and the sum of every attempt's latency. Totals grow with a period's length, so compare runs within one period only.",
		[]*plot.Plot{tp, lat}, 2, 2.6*vg.Inch, runLegend(runs))
}

// averageFigure is Broadwell (2004) Fig. 15: rates and the 95% trimmed mean latency,
// comparable across periods of different lengths, with the baseline.
func averageFigure(runs []*run) *figure {
	tp := metricBars(runs, "Mean throughput", "ok requests/s", func(m *analysis.Metrics) float64 { return f(m.ThroughputMeanPerS) })
	hasTP := baselineLines(tp, runs, func(b *analysis.Baseline) float64 { return b.Mean })
	trimmed := true
	for _, r := range runs {
		if !r.Summary.Overall.LatencyTrimmedMeanS.Valid() {
			trimmed = false
		}
	}
	latTitle, latGet := "95% trimmed mean latency", func(m *analysis.Metrics) float64 { return f(m.LatencyTrimmedMeanS) }
	if !trimmed {
		latTitle, latGet = "Mean latency", func(m *analysis.Metrics) float64 { return f(m.LatencyMeanS) }
	}
	lat := metricBars(runs, latTitle, "seconds", latGet)
	hasLat := baselineLines(lat, runs, func(b *analysis.Baseline) float64 { return f(b.LatencyMeanS) })
	caption := "Rates per period (Broadwell 2004, Fig. 15): ok requests per second and " + lowerFirst(latTitle) + " of all attempts."
	var legend []legendItem
	if hasTP || hasLat {
		caption += " Dashed lines: the fault-free baseline (ideal) of each run."
		legend = append(legend, legendItem{Label: "baseline (ideal)", Line: line(grey, 1, 5, 3)})
	}
	return panelsFigure("averages", "Average throughput and latency", caption, []*plot.Plot{tp, lat}, 2, 2.6*vg.Inch, append(runLegend(runs), legend...))
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]+'a'-'A') + s[1:]
}

// goodputFigure is Broadwell (2004) Fig. 16: both metrics are fractions, 1 is ideal.
func goodputFigure(runs []*run) *figure {
	gp := metricBars(runs, "Goodput", "ok/s ÷ offered/s", func(m *analysis.Metrics) float64 { return f(m.Goodput) })
	pu := metricBars(runs, "Punctuality", "ideal ÷ observed mean latency", func(m *analysis.Metrics) float64 { return f(m.Punctuality) })
	for _, p := range []*plot.Plot{gp, pu} {
		p.Y.Max = math.Max(p.Y.Max, 1.05)
		p.Add(&hlines{ys: []float64{1}, style: line(grey, 1, 5, 3)})
	}
	return panelsFigure("goodput-punctuality", "Goodput and punctuality",
		"Broadwell (2004) Fig. 16: goodput is ok requests per second over offered attempts per second; punctuality is the baseline's mean latency over the period's. Both are 1 when the system is as good as fault-free (dashed line). Punctuality needs a baseline: without one it is missing.",
		[]*plot.Plot{gp, pu}, 2, 2.6*vg.Inch, runLegend(runs))
}

// demeritsFigure is Broadwell (2004) Fig. 19.
func demeritsFigure(runs []*run) *figure {
	p := metricBars(runs, "", "demerits", func(m *analysis.Metrics) float64 { return f(m.Demerits) })
	return panelsFigure("demerits", "Demerits",
		"User-experience demerits per period (Broadwell 2004, Fig. 19): weighted counts of aborted connections, connection errors and timeouts, plus demerits per second of mean latency above the ideal; weights from the scenario.",
		[]*plot.Plot{p}, 1, 2.6*vg.Inch, runLegend(runs))
}

// pExceedFigure is Broadwell (2004) Fig. 18: for each period the fraction of
// attempts slower than each threshold; one panel per run, same y axis.
func pExceedFigure(runs []*run) *figure {
	cats := periodNames(runs)
	var plots []*plot.Plot
	for _, r := range runs {
		var series []barSeries
		for k, t := range pExceedKeys {
			s := barSeries{Name: "> " + t.key + " s", Color: seriesColor(k)}
			for _, c := range cats {
				v := math.NaN()
				if m := r.metrics(c); m != nil {
					if pv, ok := m.PExceed[t.key]; ok {
						v = f(pv)
					}
				}
				s.Values = append(s.Values, v)
			}
			series = append(series, s)
		}
		title := ""
		if len(runs) > 1 {
			title = r.Label
		}
		plots = append(plots, newBarPlot(title, "P(latency > T)", cats, series))
	}
	// One y scale for every panel, zoomed to the data: small
	// probabilities matter most.
	var top float64
	for _, p := range plots {
		top = math.Max(top, p.Y.Max)
	}
	for _, p := range plots {
		p.Y.Max = math.Min(1, niceMax(top))
	}
	var legend []legendItem
	for k, t := range pExceedKeys {
		legend = append(legend, legendItem{Label: "T = " + t.key + " s", Fill: seriesColor(k)})
	}
	return panelsFigure("p-exceed", "Threshold probabilities",
		"Broadwell (2004) Fig. 18: the probability that an attempt waits longer than each threshold T (0.1 s: feels instant; 1 s: flow of thought kept; 10 s: attention lost). A slower attempt counts towards every lower threshold.",
		plots, min(len(runs), 2), 2.6*vg.Inch, legend)
}

func fmtFraction(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.3g", v)
}
