package report

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/faultbench/faultbench/internal/knee"
)

// loadKnee reads knee.csv, the steps of the run's knee search, if present.
func (r *run) loadKnee() error {
	path := filepath.Join(r.Dir, knee.File)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	r.Knee, r.KneeBounds, err = knee.ReadCSV(f, path)
	return err
}

// kneeFigure draws each knee search (Brown and Patterson 2000, §3.3): ok throughput and p99
// latency against the offered rate, passing steps filled, failing ones
// hollow, with the knee and the rate the run used. nil when no run searched.
func kneeFigure(runs []*run) *figure {
	var plots []*plot.Plot
	for _, r := range runs {
		if len(r.Knee) == 0 {
			continue
		}
		steps := append([]knee.Step(nil), r.Knee...)
		sort.SliceStable(steps, func(i, j int) bool { return steps[i].Rate < steps[j].Rate })
		kneeRate, runRate := 0.0, math.NaN()
		for _, s := range steps {
			if s.Pass {
				kneeRate = math.Max(kneeRate, s.Rate)
			}
		}
		if r.Scenario != nil && r.Scenario.Workload.Knee == nil && r.Scenario.Workload.Rate > 0 {
			runRate = r.Scenario.Workload.Rate
		}
		prefix := ""
		if len(runs) > 1 {
			prefix = r.Label + ": "
		}
		tp := newPlot(prefix+"ok throughput", "offered (requests/s)", "ok requests/s")
		lat := newPlot(prefix+"p99 latency", "offered (requests/s)", "seconds")
		var xs, tps, p99s []float64
		for _, s := range steps {
			g := s.Goodput
			if math.IsNaN(g) {
				g = 0
			}
			xs, tps, p99s = append(xs, s.Rate), append(tps, g*s.Rate), append(p99s, s.P99.Seconds())
		}
		ideal := &gappedLine{xs: []float64{0, xs[len(xs)-1]}, ys: []float64{0, xs[len(xs)-1]}, style: line(grey, 0.8, 1, 3)}
		tp.Add(ideal, &gappedLine{xs: xs, ys: tps, style: line(okabeBlue, 1.2), ranged: true}, &stepMarks{xs: xs, ys: tps, steps: steps})
		lat.Add(&gappedLine{xs: xs, ys: p99s, style: line(okabeBlue, 1.2), ranged: true}, &stepMarks{xs: xs, ys: p99s, steps: steps})
		if b := r.KneeBounds.P99.Seconds(); b > 0 {
			lat.Add(&hlines{ys: []float64{b}, style: line(okabeVermilion, 1, 2, 2)})
			lat.Y.Max = math.Max(lat.Y.Max, b)
		}
		for _, p := range []*plot.Plot{tp, lat} {
			p.X.Min, p.Y.Min = 0, 0
			p.X.Max = niceMax(xs[len(xs)-1] * 1.05)
			p.Add(&rateMarks{knee: kneeRate, run: runRate})
		}
		tp.Y.Max = niceMax(math.Max(tp.Y.Max, 1) * 1.15)
		lat.Y.Max = niceMax(math.Max(lat.Y.Max, 1e-3) * 1.15)
		plots = append(plots, tp, lat)
	}
	if len(plots) == 0 {
		return nil
	}
	legend := []legendItem{
		{Label: "step passed", Fill: okabeGreen},
		{Label: "step failed", Fill: okabeVermilion},
		{Label: "knee (highest passing rate)", Line: line(okabeBlack, 1, 5, 3)},
		{Label: "rate of the run", Line: line(okabeOrange, 1.5)},
		{Label: "throughput = offered", Line: line(grey, 0.8, 1, 3)},
		{Label: "p99 bound", Line: line(okabeVermilion, 1, 2, 2)},
	}
	return panelsFigure("knee", "Knee search",
		"The search for the saturation point before the run (Brown and Patterson 2000, §3.3): each step offered one rate, open loop, for the same time; "+
			"it passed with goodput and p99 within the bounds of workload.knee (knee.csv has every step and why it failed). "+
			"The run offered a fraction of the knee.",
		plots, 2, 2.4*vg.Inch, legend)
}

// stepMarks draws each step's point, coloured by its verdict.
type stepMarks struct {
	xs, ys []float64
	steps  []knee.Step
}

func (m *stepMarks) Plot(c draw.Canvas, p *plot.Plot) {
	x, y := p.Transforms(&c)
	for i, s := range m.steps {
		if math.IsNaN(m.ys[i]) {
			continue
		}
		pt := vg.Point{X: x(m.xs[i]), Y: y(m.ys[i])}
		if !c.Contains(pt) {
			continue
		}
		var col color.Color = okabeGreen
		if !s.Pass {
			col = okabeVermilion
		}
		c.DrawGlyph(draw.GlyphStyle{Color: col, Radius: 3.5, Shape: draw.CircleGlyph{}}, pt)
	}
}

// rateMarks draws the knee and the run's rate as vertical lines, labelled.
type rateMarks struct{ knee, run float64 }

func (m *rateMarks) Plot(c draw.Canvas, p *plot.Plot) {
	x, _ := p.Transforms(&c)
	rows := newLabelRows(c, 8, 0)
	if m.knee > 0 {
		c.StrokeLine2(line(okabeBlack, 1, 5, 3), x(m.knee), c.Min.Y, x(m.knee), c.Max.Y)
		rows.place(c, x(m.knee)+2, fmt.Sprintf("knee %s/s", num(m.knee)), okabeBlack)
	}
	if !math.IsNaN(m.run) {
		c.StrokeLine2(line(okabeOrange, 1.5), x(m.run), c.Min.Y, x(m.run), c.Max.Y)
		rows.place(c, x(m.run)+2, fmt.Sprintf("run %s/s", num(m.run)), okabeOrange)
	}
}
