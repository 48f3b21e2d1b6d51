package sweep

import (
	"bytes"
	"fmt"
	"html"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/faultbench/faultbench/internal/record"
)

// IsSweepDir reports whether dir is a sweep directory: it holds the copy
// of the sweep file that Execute and Plan write, or run directories named
// cfg-NNNN-rR.
func IsSweepDir(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "sweep.yaml")); err == nil {
		return true
	}
	dirs, _ := RunDirs(dir)
	return len(dirs) > 0
}

// RunDirs lists the run directories of a sweep directory, in order.
func RunDirs(dir string) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "cfg-*-r*"))
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, m := range matches {
		if _, err := os.Stat(filepath.Join(m, record.ScenarioFile)); err == nil {
			dirs = append(dirs, m)
		}
	}
	sort.Strings(dirs)
	return dirs, nil
}

// Reanalyze reads a sweep directory's runs and recomputes its table and
// analysis (written back as sweep.csv, sweep.parquet and sweep.json).
func Reanalyze(dir string, opt AnalyzeOptions) (*Table, *Analysis, error) {
	dirs, err := RunDirs(dir)
	if err != nil {
		return nil, nil, err
	}
	if len(dirs) == 0 {
		return nil, nil, fmt.Errorf("%s: no run directories (cfg-NNNN-rR/) in this sweep directory", dir)
	}
	t, err := ReadTable(dirs)
	if err != nil {
		return nil, nil, err
	}
	a, err := Analyze(t, opt)
	if err != nil {
		return nil, nil, err
	}
	if err := t.WriteCSV(filepath.Join(dir, CSVFile)); err != nil {
		return nil, nil, err
	}
	if err := t.WriteParquet(filepath.Join(dir, ParquetFile)); err != nil {
		return nil, nil, err
	}
	return t, a, writeJSON(filepath.Join(dir, AnalysisFile), a)
}

// WriteText prints Table 1, Fig. 2(b), the haircut in numbers and the
// knob view as plain tables.
func WriteText(w io.Writer, a *Analysis) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "sweep %s: %d configurations, %d runs (%d not complete)\n\n", a.Sweep, len(a.Configs), a.Runs, a.Failed)
	fmt.Fprintln(tw, "Table 1: share of all two-sided 3σ outliers by parameter value (share of samples in brackets)")
	for _, kb := range a.Breakdown {
		var cells []string
		for _, v := range kb.Values {
			cells = append(cells, fmt.Sprintf("%s: %s (%s)", v.Value, pct(v.Share), pct(v.Samples)))
		}
		fmt.Fprintf(tw, "  %s\t%s\n", kb.Key, strings.Join(cells, "\t"))
	}
	fmt.Fprintln(tw, "\nFig. 2(b): configurations by their percentage of 3σ outliers")
	for _, b := range a.OutlierHistogram {
		fmt.Fprintf(tw, "  %s\t%d\t%s\n", b.Label, b.Configs, pct(b.Fraction))
	}
	fmt.Fprintf(tw, "  after trimming the top 1%%, %s of configurations pass the 3σ test\n", pct(a.ConformAfterTrim))
	fmt.Fprintf(tw, "\nFig. 3 (haircut): median over configurations of max/mean %.1f, of p99/mean %.2f\n",
		float64(a.MaxOverMeanMedian), float64(a.P99OverMeanMedian))
	fmt.Fprintln(tw, "  config\tmean\tp99\tp99 95% CI\tmax\toutliers\tparameters")
	for _, c := range sortedByMean(a.Configs) {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t[%s, %s]\t%s\t%s\t%s\n", c.Config, secs(c.Dist.Mean), secs(c.Dist.P99), secs(c.Dist.P99Low),
			secs(c.Dist.P99High), secs(c.Dist.Max), pct(c.Dist.OutlierFraction), paramText(a.Keys, c.Params))
	}
	if k := a.Knob; k != nil {
		fmt.Fprintf(tw, "\nKnob: configurations with p99 ≤ %s, cheapest first (cost: %s)\n", secs(Float(k.P99GoalS)), strings.Join(k.CostKeys, ", "))
		if len(k.Meeting) == 0 {
			fmt.Fprintln(tw, "  none")
		}
		for _, c := range k.Meeting {
			conf := "p99 only"
			if c.Confident {
				conf = "95% upper bound too"
			}
			fmt.Fprintf(tw, "  %d\tp99 %s\t(%s)\t%s\n", c.Config, secs(c.P99), conf, paramText(a.Keys, c.Params))
		}
	}
	return tw.Flush()
}

func paramText(keys []string, p map[string]string) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + p[k]
	}
	return strings.Join(parts, " ")
}

func pct(f Float) string {
	if math.IsNaN(float64(f)) {
		return "–"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(f))
}

func secs(f Float) string {
	v := float64(f)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "–"
	case v >= 1:
		return fmt.Sprintf("%.3gs", v)
	case v >= 1e-3:
		return fmt.Sprintf("%.3gms", v*1e3)
	}
	return fmt.Sprintf("%.3gµs", v*1e6)
}

// WriteHTML writes a self-contained report of the analysis: the text
// tables and the figures of the paper as inline SVG.
func WriteHTML(path string, a *Analysis) error {
	var text bytes.Buffer
	if err := WriteText(&text, a); err != nil {
		return err
	}
	figs := []struct {
		title string
		p     *plot.Plot
	}{
		{"Fig. 3(a): means and maxima, configurations sorted by mean", haircutPlot(a, false)},
		{"Fig. 3(b): means and 99th percentiles — the haircut", haircutPlot(a, true)},
		{"Fig. 2(b): configurations by percentage of 3σ outliers", outlierPlot(a)},
		{"Box plots, configurations sorted by mean: box Q1–Q3, bar the median, whiskers minimum to maximum, dot the mean", boxPlot(a)},
	}
	for _, kt := range a.ByValue {
		figs = append(figs, struct {
			title string
			p     *plot.Plot
		}{"Fig. 2(a): mean and maximum latency against " + kt.Key, trendPlot(kt)})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><html><head><meta charset=\"utf-8\"><title>sweep %s</title>", html.EscapeString(a.Sweep))
	b.WriteString("<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}pre{font-size:12px}figure{margin:1em 0}</style></head><body>")
	fmt.Fprintf(&b, "<h1>Sweep %s</h1><p>The analysis of Dumitras and Narasimhan (2005): every configuration's latency distribution, its 3σ outliers (both sides), and what trimming the top 1%% leaves.</p>", html.EscapeString(a.Sweep))
	for _, f := range figs {
		svg, err := renderSVG(f.p)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "<figure>%s<figcaption>%s</figcaption></figure>", svg, html.EscapeString(f.title))
	}
	fmt.Fprintf(&b, "<h2>Tables</h2><pre>%s</pre></body></html>\n", html.EscapeString(text.String()))
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func renderSVG(p *plot.Plot) (string, error) {
	c := vgsvg.New(9*vg.Inch, 3.5*vg.Inch)
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	s := buf.String()
	if i := strings.Index(s, "<svg"); i > 0 {
		s = s[i:]
	}
	return s, nil
}

var (
	blue = color.NRGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	red  = color.NRGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
)

func haircutPlot(a *Analysis, p99 bool) *plot.Plot {
	p := plot.New()
	p.X.Label.Text = "configurations sorted by mean latency"
	p.Y.Label.Text = "latency (s, log)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	means, tops := plotter.XYs{}, plotter.XYs{}
	for i, h := range a.Haircut {
		top := h.Max
		if p99 {
			top = h.P99
		}
		if h.Mean > 0 && top > 0 {
			means = append(means, plotter.XY{X: float64(i + 1), Y: float64(h.Mean)})
			tops = append(tops, plotter.XY{X: float64(i + 1), Y: float64(top)})
		}
	}
	name := "maximum"
	if p99 {
		name = "99th percentile"
	}
	addLine(p, means, blue, "mean")
	addLine(p, tops, red, name)
	return p
}

func addLine(p *plot.Plot, xy plotter.XYs, c color.Color, name string) {
	if len(xy) == 0 {
		return
	}
	l, s, err := plotter.NewLinePoints(xy)
	if err != nil {
		return
	}
	l.Color, s.Color = c, c
	s.Shape = draw.CircleGlyph{}
	s.Radius = vg.Points(1.5)
	p.Add(l, s)
	p.Legend.Add(name, l)
	p.Legend.Top = true
}

func outlierPlot(a *Analysis) *plot.Plot {
	p := plot.New()
	p.Y.Label.Text = "fraction of configurations"
	vals := plotter.Values{}
	var names []string
	for _, b := range a.OutlierHistogram {
		v := float64(b.Fraction)
		if math.IsNaN(v) {
			v = 0
		}
		vals = append(vals, v)
		names = append(names, b.Label)
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(30))
	if err == nil {
		bars.Color = blue
		p.Add(bars)
		p.NominalX(names...)
	}
	return p
}

func trendPlot(kt KeyTrend) *plot.Plot {
	p := plot.New()
	p.X.Label.Text = kt.Key
	p.Y.Label.Text = "latency (s, log)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	means, maxes, p99s := plotter.XYs{}, plotter.XYs{}, plotter.XYs{}
	var names []string
	for i, v := range kt.Values {
		names = append(names, v.Value)
		if v.MeanOfMean > 0 && v.MaxOfMax > 0 {
			means = append(means, plotter.XY{X: float64(i), Y: float64(v.MeanOfMean)})
			maxes = append(maxes, plotter.XY{X: float64(i), Y: float64(v.MaxOfMax)})
			p99s = append(p99s, plotter.XY{X: float64(i), Y: float64(v.MeanOfP99)})
		}
	}
	addLine(p, means, blue, "mean of means")
	addLine(p, p99s, color.NRGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, "mean of p99")
	addLine(p, maxes, red, "maximum")
	p.NominalX(names...)
	return p
}

// boxes draws one box per configuration from its Dist: the box spans the
// quartiles, a bar marks the median, whiskers reach the minimum and the
// maximum (the paper's point is how far the maximum strays), and a dot
// marks the mean.
type boxes struct{ dists []Dist }

func (b boxes) Plot(c draw.Canvas, p *plot.Plot) {
	x, y := p.Transforms(&c)
	line := draw.LineStyle{Color: blue, Width: vg.Points(0.6)}
	half := (x(1) - x(0)) * 0.35
	for i, d := range b.dists {
		m := x(float64(i + 1))
		c.StrokeLine2(line, m, y(float64(d.Min)), m, y(float64(d.Q1)))
		c.StrokeLine2(line, m, y(float64(d.Q3)), m, y(float64(d.Max)))
		box := vg.Rectangle{Min: vg.Point{X: m - half, Y: y(float64(d.Q1))}, Max: vg.Point{X: m + half, Y: y(float64(d.Q3))}}
		c.StrokeLines(line, []vg.Point{box.Min, {X: box.Max.X, Y: box.Min.Y}, box.Max, {X: box.Min.X, Y: box.Max.Y}, box.Min})
		med := line
		med.Color, med.Width = red, vg.Points(1)
		c.StrokeLine2(med, m-half, y(float64(d.Median)), m+half, y(float64(d.Median)))
		c.DrawGlyph(draw.GlyphStyle{Color: color.Black, Radius: vg.Points(1.2), Shape: draw.CircleGlyph{}}, vg.Point{X: m, Y: y(float64(d.Mean))})
	}
}

// DataRange makes the plot's axes cover every whisker.
func (b boxes) DataRange() (xmin, xmax, ymin, ymax float64) {
	ymin, ymax = math.Inf(1), math.Inf(-1)
	for _, d := range b.dists {
		ymin, ymax = math.Min(ymin, float64(d.Min)), math.Max(ymax, float64(d.Max))
	}
	return 0, float64(len(b.dists) + 1), ymin, ymax
}

// boxPlot draws every configuration whose samples are all positive (a log
// axis cannot show a zero latency), in the order of Fig. 3.
func boxPlot(a *Analysis) *plot.Plot {
	p := plot.New()
	p.X.Label.Text = "configurations sorted by mean latency"
	p.Y.Label.Text = "latency (s, log)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	var b boxes
	for _, c := range sortedByMean(a.Configs) {
		if d := c.Dist; d.N > 0 && d.Min > 0 {
			b.dists = append(b.dists, d)
		}
	}
	if len(b.dists) > 0 {
		p.Add(b)
	}
	return p
}

// sortedByMean is the configurations in the order of Fig. 3, lowest mean
// latency first.
func sortedByMean(cs []ConfigResult) []ConfigResult {
	byMean := append([]ConfigResult(nil), cs...)
	sort.SliceStable(byMean, func(i, j int) bool { return byMean[i].Dist.Mean < byMean[j].Dist.Mean })
	return byMean
}
