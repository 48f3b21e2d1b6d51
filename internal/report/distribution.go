package report

import (
	"math"
	"sort"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// boxStats summarises one latency distribution for a box plot, in seconds.
type boxStats struct {
	P1, P25, P50, P75, P99, Max, Mean float64
}

func statsOf(p *period) (boxStats, bool) {
	h := p.Hist
	if h.TotalCount() == 0 {
		return boxStats{}, false
	}
	q := h.ValueAtPercentiles([]float64{1, 25, 50, 75, 99})
	s := func(v int64) float64 { return float64(v) / 1e6 }
	return boxStats{P1: s(q[1]), P25: s(q[25]), P50: s(q[50]), P75: s(q[75]), P99: s(q[99]), Max: s(h.Max()),
		Mean: p.LatencySum / float64(p.Attempts)}, true
}

// boxPlot draws boxes at (category + offset) positions.
type boxPlot struct {
	boxes []placedBox
	width float64 // in category units
}

type placedBox struct {
	X     float64
	S     boxStats
	Color draw.LineStyle
}

func (b *boxPlot) Plot(c draw.Canvas, p *plot.Plot) {
	x, y := p.Transforms(&c)
	for _, bx := range b.boxes {
		sty := bx.Color
		l, r, m := x(bx.X-b.width/2), x(bx.X+b.width/2), x(bx.X)
		// Whiskers p1–p99 with caps.
		c.StrokeLine2(sty, m, y(bx.S.P1), m, y(bx.S.P25))
		c.StrokeLine2(sty, m, y(bx.S.P75), m, y(bx.S.P99))
		cap := (r - l) / 4
		c.StrokeLine2(sty, m-cap, y(bx.S.P1), m+cap, y(bx.S.P1))
		c.StrokeLine2(sty, m-cap, y(bx.S.P99), m+cap, y(bx.S.P99))
		box := vg.Rectangle{Min: vg.Point{X: l, Y: y(bx.S.P25)}, Max: vg.Point{X: r, Y: y(bx.S.P75)}}
		c.SetColor(alpha(sty.Color, 0x40))
		c.Fill(box.Path())
		c.StrokeLines(sty, []vg.Point{box.Min, {X: r, Y: box.Min.Y}, box.Max, {X: l, Y: box.Max.Y}, box.Min})
		med := sty
		med.Width *= 2
		c.StrokeLine2(med, l, y(bx.S.P50), r, y(bx.S.P50))
		// Mean: filled diamond; max: open circle (Broadwell 2004, Fig. 17).
		d := vg.Length(4)
		ym := y(bx.S.Mean)
		c.FillPolygon(okabeBlack, []vg.Point{{X: m, Y: ym + d}, {X: m + d, Y: ym}, {X: m, Y: ym - d}, {X: m - d, Y: ym}})
		c.DrawGlyph(draw.GlyphStyle{Color: sty.Color, Radius: 3, Shape: draw.RingGlyph{}}, vg.Point{X: m, Y: y(bx.S.Max)})
	}
}

// boxFigure is Broadwell (2004) Fig. 17: latency per period on a log axis, one box
// per run side by side.
func boxFigure(runs []*run) *figure {
	cats := periodNames(runs)
	p := newPlot("", "", "latency")
	p.NominalX(cats...)
	p.X.Tick.Label.Font.Size = 8
	k := len(runs)
	w := 0.8 / float64(k)
	bp := &boxPlot{width: w * 0.7}
	lo, hi := math.Inf(1), math.Inf(-1)
	for j, r := range runs {
		for i, c := range cats {
			pr := r.period(c)
			if pr == nil {
				continue
			}
			s, ok := statsOf(pr)
			if !ok {
				continue
			}
			bp.boxes = append(bp.boxes, placedBox{X: float64(i) + (float64(j)-float64(k-1)/2)*w, S: s, Color: line(seriesColor(j), 1)})
			lo, hi = math.Min(lo, s.P1), math.Max(hi, s.Max)
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1e-3, 1
	}
	p.Add(bp)
	p.X.Min, p.X.Max = -0.5, float64(len(cats))-0.5
	setLogSeconds(&p.Y, lo, hi)
	legend := append(runLegend(runs),
		legendItem{Label: "box p25–p75, bar median", Fill: alpha(grey, 0x40)},
		legendItem{Label: "whiskers p1–p99", Line: line(grey, 1)},
		legendItem{Label: "mean (diamond)", Fill: okabeBlack},
		legendItem{Label: "max (ring)", Line: line(grey, 1)})
	return panelsFigure("latency-box", "Latency distribution per period",
		"Box-and-whiskers of every attempt's latency per period, logarithmic axis (Broadwell 2004, Fig. 17): box from the 25th to the 75th percentile with the median; whiskers from the 1st to the 99th percentile; diamond: mean; circle: maximum. "+
			"Timeouts and connection aborts cluster at the client's time limits.",
		[]*plot.Plot{p}, 1, 3*vg.Inch, legend)
}

// logBins returns bin edges spaced evenly in log10 from lo to hi.
func logBins(lo, hi float64, perDecade int) []float64 {
	var edges []float64
	step := 1 / float64(perDecade)
	for e := math.Log10(lo); e <= math.Log10(hi)+1e-9; e += step {
		edges = append(edges, math.Pow(10, e))
	}
	return edges
}

// binCounts distributes h's recorded values over edges (seconds).
func binCounts(h *hdrhistogram.Histogram, edges []float64) []float64 {
	counts := make([]float64, len(edges)-1)
	for _, b := range h.Distribution() {
		if b.Count == 0 {
			continue
		}
		v := float64(b.From+b.To) / 2 / 1e6
		i := sort.SearchFloat64s(edges, v) - 1
		i = max(0, min(i, len(counts)-1))
		counts[i] += float64(b.Count)
	}
	return counts
}

// distLines is what the histogram and CDF draw: per run, or per phase of
// a single run.
type distLine struct {
	Label string
	Hist  *hdrhistogram.Histogram
	Style draw.LineStyle
}

func distLines(runs []*run) []distLine {
	var out []distLine
	if len(runs) == 1 {
		for i, p := range runs[0].phases() {
			if p.Hist.TotalCount() > 0 {
				out = append(out, distLine{Label: p.Name, Hist: p.Hist, Style: line(seriesColor(i), 1.5)})
			}
		}
		return out
	}
	for i, r := range runs {
		if p := r.period(periodOverall); p != nil && p.Hist.TotalCount() > 0 {
			out = append(out, distLine{Label: r.Label, Hist: p.Hist, Style: line(seriesColor(i), 1.5)})
		}
	}
	return out
}

func latencyRange(lines []distLine) (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, l := range lines {
		lo = math.Min(lo, float64(l.Hist.Min())/1e6)
		hi = math.Max(hi, float64(l.Hist.Max())/1e6)
	}
	if math.IsInf(lo, 1) {
		return 1e-3, 1
	}
	lo = math.Pow(10, math.Floor(math.Log10(math.Max(lo, 1e-6))))
	hi = math.Pow(10, math.Ceil(math.Log10(math.Max(hi, lo*10))))
	return lo, hi
}

// histogramFigure and cdfFigure show the whole latency distribution.
func histogramFigure(runs []*run) *figure {
	lines := distLines(runs)
	lo, hi := latencyRange(lines)
	edges := logBins(lo, hi, 10)
	hp := newPlot("Histogram", "latency", "fraction of attempts per bin")
	cp := newPlot("Cumulative distribution", "latency", "fraction of attempts ≤ latency")
	var legend []legendItem
	for _, l := range lines {
		counts := binCounts(l.Hist, edges)
		total := float64(l.Hist.TotalCount())
		var xs, ys, cx, cy []float64
		var cum float64
		for i, n := range counts {
			xs = append(xs, edges[i], edges[i+1])
			ys = append(ys, n/total, n/total)
			cum += n
			cx, cy = append(cx, edges[i+1]), append(cy, cum/total)
		}
		hp.Add(&gappedLine{xs: xs, ys: ys, style: l.Style, ranged: true})
		cp.Add(&gappedLine{xs: cx, ys: cy, style: l.Style})
		legend = append(legend, legendItem{Label: l.Label, Line: l.Style})
	}
	for _, p := range []*plot.Plot{hp, cp} {
		setLogSeconds(&p.X, lo, hi)
	}
	hp.Y.Min = 0
	cp.Y.Min, cp.Y.Max = 0, 1
	what := "each phase"
	if len(runs) > 1 {
		what = "each run"
	}
	return panelsFigure("latency-distribution", "Latency histogram and CDF",
		"Latency of every attempt of "+what+", in logarithmic bins (10 per decade).",
		[]*plot.Plot{hp, cp}, 2, 2.8*vg.Inch, legend)
}

// haircutFigure is Dumitras and Narasimhan (2005) Fig. 3, per window instead of per experiment:
// windows sorted by mean latency; left, mean against maximum (the maxima
// look random); right, mean against the maximum after trimming the top 1%
// (the p99), which follows the mean.
func haircutFigure(runs []*run) *figure {
	var plots []*plot.Plot
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range runs {
		for _, w := range r.Windows {
			for _, v := range []float64{w.LatencyMean, w.LatencyMax, w.LatencyP99} {
				if v > 0 {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1e-3, 1
	}
	meanSty, maxSty := draw.GlyphStyle{Color: okabeBlue, Radius: 1.8, Shape: draw.CircleGlyph{}}, draw.GlyphStyle{Color: okabeVermilion, Radius: 1.8, Shape: draw.CrossGlyph{}}
	trimSty := draw.GlyphStyle{Color: okabeGreen, Radius: 1.8, Shape: draw.TriangleGlyph{}}
	for _, r := range runs {
		ws := append(r.Windows[:0:0], r.Windows...)
		kept := ws[:0]
		for _, w := range ws {
			if w.LatencyMean > 0 {
				kept = append(kept, w)
			}
		}
		sort.SliceStable(kept, func(i, j int) bool { return kept[i].LatencyMean < kept[j].LatencyMean })
		var xs, mean, mx, p99 []float64
		for i, w := range kept {
			xs = append(xs, float64(i))
			mean, mx, p99 = append(mean, w.LatencyMean), append(mx, w.LatencyMax), append(p99, w.LatencyP99)
		}
		prefix := ""
		if len(runs) > 1 {
			prefix = r.Label + ": "
		}
		a := newPlot(prefix+"(a) all attempts", "windows, by increasing mean latency", "latency")
		b := newPlot(prefix+"(b) top 1% trimmed", "windows, by increasing mean latency", "latency")
		a.Add(&points{xs: xs, ys: mx, sty: maxSty}, &points{xs: xs, ys: mean, sty: meanSty})
		b.Add(&points{xs: xs, ys: p99, sty: trimSty}, &points{xs: xs, ys: mean, sty: meanSty})
		for _, p := range []*plot.Plot{a, b} {
			setLogSeconds(&p.Y, lo, hi)
			p.X.Min, p.X.Max = -0.5, math.Max(float64(len(xs))-0.5, 0.5)
		}
		plots = append(plots, a, b)
	}
	legend := []legendItem{{Label: "mean", Fill: okabeBlue}, {Label: "max", Fill: okabeVermilion}, {Label: "max after trimming the top 1% (p99)", Fill: okabeGreen}}
	return panelsFigure("haircut", "The magical 1% (haircut)",
		"Dumitras and Narasimhan (2005) Fig. 3 per window: windows sorted by mean latency. (a) The maximum latency of a window bears little relation to its mean. (b) After removing the slowest 1% of attempts the maximum (the 99th percentile) follows the mean: the unpredictability lives in 1% of the attempts.",
		plots, 2, 2.4*vg.Inch, legend)
}

// points is a scatter of glyphs that skips NaN.
type points struct {
	xs, ys []float64
	sty    draw.GlyphStyle
}

func (s *points) Plot(c draw.Canvas, p *plot.Plot) {
	x, y := p.Transforms(&c)
	for i := range s.xs {
		if v := s.ys[i]; v > 0 && !math.IsInf(v, 0) {
			c.DrawGlyph(s.sty, vg.Point{X: x(s.xs[i]), Y: y(v)})
		}
	}
}
