package report

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// panelsFigure lays plots out in a grid of cols columns, row by row, with a
// legend underneath. Panels of one row share their data area's left edge.
func panelsFigure(name, title, caption string, plots []*plot.Plot, cols int, panelH vg.Length, legend []legendItem) *figure {
	width := vg.Length(10 * vg.Inch)
	if cols < 1 {
		cols = 1
	}
	rows := (len(plots) + cols - 1) / cols
	legendH := vg.Length(0)
	if len(legend) > 0 {
		legendH = legendHeight(width-vg.Inch, legend)
	}
	const gap = vg.Length(8)
	return &figure{
		Name: name, Title: title, Caption: caption, W: width, H: vg.Length(rows)*(panelH+gap) + legendH,
		draw: func(dc draw.Canvas) {
			cw := (dc.Max.X - dc.Min.X) / vg.Length(cols)
			var cs []draw.Canvas
			for i := range plots {
				row, col := i/cols, i%cols
				c := dc
				c.Max.Y = dc.Max.Y - vg.Length(row)*(panelH+gap)
				c.Min.Y = c.Max.Y - panelH
				c.Min.X = dc.Min.X + vg.Length(col)*cw
				c.Max.X = c.Min.X + cw - gap
				cs = append(cs, c)
			}
			for col := 0; col < cols; col++ {
				var ps []*plot.Plot
				var idx []int
				for i := col; i < len(plots); i += cols {
					ps, idx = append(ps, plots[i]), append(idx, i)
				}
				sub := make([]draw.Canvas, len(idx))
				for k, i := range idx {
					sub[k] = cs[i]
				}
				alignLeft(ps, sub)
				for k, i := range idx {
					cs[i] = sub[k]
				}
			}
			for i, p := range plots {
				p.Draw(cs[i])
			}
			if len(legend) > 0 {
				lc := dc
				lc.Max.Y = dc.Min.Y + legendH
				lc.Min.X += 0.5 * vg.Inch
				drawLegend(lc, legend)
			}
		},
	}
}

// barSeries is one coloured series of a grouped bar chart; NaN draws no bar.
type barSeries struct {
	Name   string
	Color  color.Color
	Values []float64 // one per category
}

// groupedBars draws, per category, one bar per series side by side.
type groupedBars struct {
	series []barSeries
	n      int // categories
}

func newBarPlot(title, yLabel string, cats []string, series []barSeries) *plot.Plot {
	p := newPlot(title, "", yLabel)
	p.NominalX(cats...)
	p.X.Tick.Label.Font.Size = 8
	p.Add(&groupedBars{series: series, n: len(cats)})
	p.Y.Min = 0
	if p.Y.Max <= 0 {
		p.Y.Max = 1
	}
	p.Y.Max *= 1.05
	p.Add(&hlines{ys: []float64{0}, style: line(okabeBlack, 0.5)})
	return p
}

func (g *groupedBars) Plot(c draw.Canvas, p *plot.Plot) {
	x, y := p.Transforms(&c)
	k := len(g.series)
	bw := 0.8 / float64(max(k, 1))
	for j, s := range g.series {
		for i, v := range s.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			center := float64(i) + (float64(j)-float64(k-1)/2)*bw
			r := vg.Rectangle{Min: vg.Point{X: x(center - bw*0.45), Y: y(math.Max(p.Y.Min, 0))}, Max: vg.Point{X: x(center + bw*0.45), Y: y(math.Min(v, p.Y.Max))}}
			c.SetColor(s.Color)
			c.Fill(r.Path())
		}
	}
}

func (g *groupedBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = -0.5, float64(g.n)-0.5, 0, 0
	for _, s := range g.series {
		for _, v := range s.Values {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				ymax = math.Max(ymax, v)
			}
		}
	}
	return
}

// logSeconds is a logarithmic axis ticker labelled in s/ms/µs at decades.
type logSeconds struct{}

func (logSeconds) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for d := math.Pow(10, math.Floor(math.Log10(lo))); d <= hi*1.0001; d *= 10 {
		if d >= lo*0.9999 {
			ts = append(ts, plot.Tick{Value: d, Label: latencyTick(d)})
		}
		for k := 2.0; k < 10; k++ {
			if m := d * k; m >= lo && m <= hi {
				ts = append(ts, plot.Tick{Value: m})
			}
		}
	}
	return ts
}

func setLogSeconds(a *plot.Axis, lo, hi float64) {
	a.Scale = plot.LogScale{}
	a.Tick.Marker = logSeconds{}
	a.Min = math.Pow(10, math.Floor(math.Log10(lo)))
	a.Max = math.Pow(10, math.Ceil(math.Log10(hi)))
	if a.Max <= a.Min {
		a.Max = a.Min * 10
	}
}

func runLegend(runs []*run) []legendItem {
	if len(runs) < 2 {
		return nil
	}
	var items []legendItem
	for i, r := range runs {
		items = append(items, legendItem{Label: r.Label, Fill: seriesColor(i)})
	}
	return items
}

// periodNames is the union of the runs' periods: phases in first-seen
// order, then failure, then overall.
func periodNames(runs []*run) []string {
	var names []string
	seen := map[string]bool{}
	var failure bool
	for _, r := range runs {
		for _, p := range r.Periods {
			switch {
			case p.Name == periodFailure:
				failure = true
			case p.Name == periodOverall || seen[p.Name]:
			default:
				seen[p.Name] = true
				names = append(names, p.Name)
			}
		}
	}
	if failure {
		names = append(names, periodFailure)
	}
	return append(names, periodOverall)
}
