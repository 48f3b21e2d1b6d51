package report

import (
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/faultbench/faultbench/internal/analysis"
)

// stageNames are the stages of Nagaraja's 7-stage model (Nagaraja et al. 2002, Fig. 1).
var stageNames = []string{"A", "B", "C", "D", "E", "F", "G"}

// stagesFigure draws, per run, the measured ok throughput per window and,
// from each fault's injection on, the piece-wise constant stage model A–G
// of summary.json: solid where measured, dashed where supplied. It returns
// nil when no run has stages.
func stagesFigure(runs []*run) *figure {
	var plots []*plot.Plot
	sc := availabilityScales(runs)
	any := false
	for _, r := range runs {
		title := ""
		if len(runs) > 1 {
			title = r.Label
		}
		p := newPlot(title, "time since start (s)", "ok requests/s")
		p.X.Min, p.X.Max, p.Y.Min = 0, sc.xMax, 0
		var xs, ys []float64
		for _, w := range r.Windows {
			xs = append(xs, w.StartS, w.StartS+r.WindowS)
			v := w.ThroughputOK
			ys = append(ys, v, v)
		}
		p.Add(&timelineBackground{&timeline{r: r, noPhaseShade: true}}, &gappedLine{xs: xs, ys: ys, style: line(okabeSky, 1.2), ranged: true})
		if b := r.Summary.Baseline; b != nil {
			p.Add(&hlines{ys: []float64{b.Low, b.High}, style: bandStyle})
			p.Y.Max = math.Max(p.Y.Max, b.High)
		}
		for _, fr := range r.Summary.Faults {
			if len(fr.Stages) > 0 {
				any = true
				p.Add(&stageModel{fault: fr})
			}
		}
		p.Y.Max *= 1.25
		plots = append(plots, p)
	}
	if !any {
		return nil
	}
	legend := []legendItem{
		{Label: "measured ok throughput", Line: line(okabeSky, 1.2)},
		{Label: "stage model (measured)", Line: line(okabeVermilion, 2.2)},
		{Label: "stage model (supplied)", Line: line(okabeVermilion, 2.2, 5, 3)},
		{Label: "99% baseline band", Line: bandStyle},
		{Label: "fault active", Fill: faultFill},
	}
	return panelsFigure("stages", "Seven-stage model",
		"The 7-stage piece-wise model of Nagaraja et al. (2002) Fig. 1 fitted to each fault: from injection, stages A (detection) to G (back to normal), each at its mean throughput. Stages that did not occur have no length. Solid segments were measured, dashed ones supplied (e.g. from the scenario's operator model).",
		plots, 1, 2.6*vg.Inch, legend)
}

// stageModel draws one fault's stages as a connected step line with letters.
type stageModel struct{ fault analysis.FaultResult }

func (s *stageModel) Plot(c draw.Canvas, p *plot.Plot) {
	x, y := p.Transforms(&c)
	sty := textStyle(9)
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YBottom
	sty.Color = okabeVermilion
	t := s.fault.InjectS
	var prev *vg.Point
	for _, name := range stageNames {
		st, ok := s.fault.Stages[name]
		if !ok || st.DurationS <= 0 {
			continue
		}
		from, to := t, t+st.DurationS
		t = to
		if !st.Throughput.Valid() {
			prev = nil
			continue
		}
		ls := line(okabeVermilion, 2.2)
		if !st.Measured {
			ls.Dashes = []vg.Length{5, 3}
		}
		v := math.Min(float64(st.Throughput), p.Y.Max)
		a, b := vg.Point{X: x(from), Y: y(v)}, vg.Point{X: x(math.Min(to, p.X.Max)), Y: y(v)}
		if prev != nil {
			c.StrokeLine2(line(okabeVermilion, 0.8), prev.X, prev.Y, a.X, a.Y)
		}
		c.StrokeLine2(ls, a.X, a.Y, b.X, b.Y)
		c.FillText(sty, vg.Point{X: (a.X + b.X) / 2, Y: a.Y + 2}, name)
		prev = &b
	}
}
