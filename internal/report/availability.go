package report

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/faultbench/faultbench/internal/record"
)

// availabilityFigure is the availability graph (Broadwell 2004, Figs. 9–10; Brown and Patterson
// 2000, Fig. 1): per window, the attempts of each outcome stacked in
// requests/s; mean and p99 latency on a logarithmic right axis; phases,
// faults, operator actions and the baseline band. Several runs are stacked
// one panel each with identical axes. System metric series (e.g.
// redundancy) get a strip under their run's panel, on the same time axis:
// they share no unit with latency, so a third scale on the same area would
// mislead.
func availabilityFigure(runs []*run) *figure {
	sc := availabilityScales(runs)
	const mainH, stripH, gap = vg.Length(2.9 * vg.Inch), vg.Length(1.0 * vg.Inch), vg.Length(0.12 * vg.Inch)
	width := vg.Length(10 * vg.Inch)
	items := availabilityLegend(runs, sc)
	legendH := legendHeight(width-vg.Inch, items)
	height := legendH + gap + 8
	for _, r := range runs {
		height += mainH + gap
		if len(r.Series) > 0 {
			height += stripH
		}
	}
	caption := "Per 5 s window: attempts by outcome (stacked, requests/s, left axis); mean and p99 latency (right axis, logarithmic; gaps where a window had no attempts). " +
		"Grey bands are phases; shaded red spans are active faults (solid line: inject, dashed: clear); dotted lines are the operator's detection and repair actions; " +
		"dashed blue horizontal lines bound the 99% baseline band of ok throughput, read on the left axis (mean ± 2.576σ of fault-free window throughput)."
	if hasInvalidWindows(runs) {
		caption += " Grey hatched windows are not a valid measurement of the service: the load generator refused arrivals (its own limits: max_in_flight, users, connections), " +
			"cut attempts short at the end of an interrupted run, or sent its attempts late (p99 send lag above 10% of the window, at most 100 ms); " +
			"the grey layer on top of the bars is the arrivals it refused or cut short, which are not charged to the service."
	}
	if len(runs) > 0 && runs[0].WindowS != 5 {
		caption = strings.Replace(caption, "5 s", fmt.Sprintf("%g s", runs[0].WindowS), 1)
	}
	return &figure{
		Name: "availability", Title: "Availability graph", W: width, H: height, Caption: caption,
		draw: func(dc draw.Canvas) {
			var plots []*plot.Plot
			var canvases []draw.Canvas
			top := dc.Max.Y - 8 // the top tick labels overhang the data area
			for _, r := range runs {
				main, strip := availabilityPlots(r, sc, len(runs) > 1, seriesNames(runs))
				c := dc
				c.Max.Y, c.Min.Y = top, top-mainH
				c.Max.X -= 0.8 * vg.Inch // room for the right axis
				plots, canvases = append(plots, main), append(canvases, c)
				top -= mainH
				if strip != nil {
					s := dc
					s.Max.Y, s.Min.Y = top, top-stripH
					s.Max.X -= 0.8 * vg.Inch
					plots, canvases = append(plots, strip), append(canvases, s)
					top -= stripH
				}
				top -= gap
			}
			alignLeft(plots, canvases)
			for i, p := range plots {
				p.Draw(canvases[i])
			}
			lc := dc
			lc.Max.Y, lc.Min.Y = top, dc.Min.Y
			// The legend wraps within the width legendHeight was given, with
			// half an inch each side, so no item runs off the right edge.
			lc.Min.X, lc.Max.X = dc.Min.X+0.5*vg.Inch, dc.Max.X-0.5*vg.Inch
			drawLegend(lc, items)
		},
	}
}

// scales shared by every panel so runs compare at a glance.
type availScales struct {
	xMax, yMax   float64
	latLo, latHi float64 // right axis range, whole decades
	outcomes     []record.Outcome
	hasLatency   bool
	hasBand      bool
	hasFault     bool
	hasUnplanned bool // a fault nobody injected: drawn in its own colour
	hasOperator  bool
	hasGenerator bool // some window has arrivals the generator refused or cut short
	hasInvalid   bool // some window is not a valid measurement of the service
}

func hasInvalidWindows(runs []*run) bool {
	for _, r := range runs {
		for _, w := range r.Windows {
			if !w.Valid {
				return true
			}
		}
	}
	return false
}

func availabilityScales(runs []*run) availScales {
	s := availScales{latLo: math.Inf(1), latHi: math.Inf(-1)}
	var nonzero [record.NumOutcomes]bool
	for _, r := range runs {
		s.xMax = math.Max(s.xMax, r.EndS)
		for _, w := range r.Windows {
			var total int64
			for o, n := range w.Outcomes {
				total += n
				nonzero[o] = nonzero[o] || n > 0
			}
			total += w.GenRefused + w.CutShort
			s.hasGenerator = s.hasGenerator || w.GenRefused+w.CutShort > 0
			s.hasInvalid = s.hasInvalid || !w.Valid
			s.yMax = math.Max(s.yMax, float64(total)/r.WindowS)
			s.xMax = math.Max(s.xMax, w.StartS+r.WindowS)
			for _, l := range []float64{w.LatencyMean, w.LatencyP99} {
				if l > 0 && !math.IsInf(l, 0) {
					s.latLo, s.latHi = math.Min(s.latLo, l), math.Max(s.latHi, l)
				}
			}
		}
		if b := r.Summary.Baseline; b != nil {
			s.yMax = math.Max(s.yMax, b.High)
			s.hasBand = true
		}
		for _, f := range r.Faults {
			if f.unplanned() {
				s.hasUnplanned = true
			} else {
				s.hasFault = true
			}
		}
		for _, e := range r.Events {
			s.hasOperator = s.hasOperator || strings.HasPrefix(e.Kind, "operator.")
		}
	}
	for _, o := range record.Outcomes() {
		if nonzero[o] {
			s.outcomes = append(s.outcomes, o)
		}
	}
	if len(s.outcomes) == 0 {
		s.outcomes = []record.Outcome{record.OK}
	}
	if s.yMax <= 0 {
		s.yMax = 1
	}
	// Headroom keeps the label rows above the bars.
	s.yMax = niceMax(s.yMax * 1.3)
	s.hasLatency = !math.IsInf(s.latLo, 1)
	if !s.hasLatency {
		s.latLo, s.latHi = 1e-3, 1
	}
	s.latLo = math.Pow(10, math.Floor(math.Log10(s.latLo)))
	s.latHi = math.Pow(10, math.Ceil(math.Log10(s.latHi)))
	if s.latHi <= s.latLo {
		s.latHi = s.latLo * 10
	}
	if s.xMax <= 0 {
		s.xMax = 1
	}
	return s
}

var (
	meanLatencyStyle = line(okabeBlack, 1.6)
	p99LatencyStyle  = line(okabeBlack, 1, 2, 2)
	bandStyle        = line(okabeBlue, 1.2, 8, 4)
	injectStyle      = line(okabeVermilion, 1.3)
	clearStyle       = line(okabeVermilion, 1.3, 4, 2)
	operatorStyle    = line(grey, 1.2, 1.5, 2)
	faultFill        = alpha(okabeVermilion, 0x1E)
	// An unplanned failure is not the experiment's doing: purple, with a
	// dash-dot line where it began, so it is never taken for an injection.
	unplannedFill       = alpha(okabePurple, 0x30)
	unplannedStyle      = line(okabePurple, 1.3, 6, 2, 1, 2)
	unplannedClearStyle = line(okabePurple, 1.3, 4, 2)
	generatorFill       = rgb(0x99, 0x99, 0x99)              // arrivals the generator refused or cut short
	invalidWash         = alpha(rgb(0x60, 0x60, 0x60), 0x30) // windows that do not measure the service
	invalidHatch        = line(alpha(rgb(0x40, 0x40, 0x40), 0x90), 0.6)
)

func availabilityLegend(runs []*run, s availScales) []legendItem {
	var items []legendItem
	for _, o := range s.outcomes {
		items = append(items, legendItem{Label: o.String(), Fill: outcomeColors[o]})
	}
	if s.hasGenerator {
		items = append(items, legendItem{Label: "refused or cut short by the generator", Fill: generatorFill})
	}
	if s.hasInvalid {
		items = append(items, legendItem{Label: "window not a valid measurement (hatched)", Fill: invalidWash})
	}
	if s.hasLatency {
		items = append(items, legendItem{Label: "mean latency (right)", Line: meanLatencyStyle},
			legendItem{Label: "p99 latency (right)", Line: p99LatencyStyle})
	}
	if s.hasBand {
		items = append(items, legendItem{Label: "99% baseline band of ok/s (left)", Line: bandStyle})
	}
	if s.hasFault {
		items = append(items, legendItem{Label: "fault active", Fill: faultFill})
	}
	if s.hasUnplanned {
		items = append(items, legendItem{Label: "unplanned failure (not injected)", Fill: unplannedFill})
	}
	if s.hasOperator {
		items = append(items, legendItem{Label: "operator", Line: operatorStyle})
	}
	for _, n := range seriesNames(runs) {
		items = append(items, legendItem{Label: n + " (strip)", Line: seriesStyle(seriesNames(runs), n)})
	}
	return items
}

func seriesNames(runs []*run) []string {
	var names []string
	seen := map[string]bool{}
	for _, r := range runs {
		for _, n := range r.Series {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	return names
}

// availabilityPlots builds one run's panel and, when it has system metric
// series, the strip beneath it.
func availabilityPlots(r *run, s availScales, titled bool, allSeries []string) (*plot.Plot, *plot.Plot) {
	title := ""
	if titled {
		title = r.Label
	}
	p := newPlot(title, "time since start (s)", fmt.Sprintf("requests/s (%g s windows)", r.WindowS))
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, s.xMax, 0, s.yMax
	tl := &timeline{r: r}
	p.Add(&timelineBackground{tl}, &stackedOutcomes{r: r, outcomes: s.outcomes}, &invalidWindows{r: r})
	if b := r.Summary.Baseline; b != nil {
		p.Add(&hlines{ys: []float64{b.Low, b.High}, style: bandStyle, label: "99% baseline band (ok/s, left axis)", labelColor: okabeBlue})
	}
	if s.hasLatency {
		toY := func(l float64) float64 {
			l = math.Min(math.Max(l, s.latLo), s.latHi)
			return s.yMax * math.Log10(l/s.latLo) / math.Log10(s.latHi/s.latLo)
		}
		mean, p99 := make([]float64, len(r.Windows)), make([]float64, len(r.Windows))
		xs := make([]float64, len(r.Windows))
		for i, w := range r.Windows {
			xs[i] = w.StartS + r.WindowS/2
			mean[i], p99[i] = toY(w.LatencyMean), toY(w.LatencyP99)
			if !(w.LatencyMean > 0) {
				mean[i] = math.NaN()
			}
			if !(w.LatencyP99 > 0) {
				p99[i] = math.NaN()
			}
		}
		p.Add(&gappedLine{xs: xs, ys: p99, style: p99LatencyStyle}, &gappedLine{xs: xs, ys: mean, style: meanLatencyStyle})
		p.Add(&rightLogAxis{lo: s.latLo, hi: s.latHi, label: "latency (s)"})
	}
	p.Add(&timelineForeground{tl})
	if len(r.Series) == 0 {
		return p, nil
	}
	// The strip carries the time axis; the panel above ends where it begins.
	p.HideX()
	p.X.Label.Text = ""
	strip := newPlot("", "time since start (s)", stripLabel(r.Series))
	strip.X.Min, strip.X.Max = 0, s.xMax
	strip.Y.Tick.Marker = niceTicks{N: 3}
	strip.Add(&timelineBackground{&timeline{r: r, noPhaseShade: true}})
	for _, n := range r.Series {
		xs := make([]float64, len(r.Windows))
		ys := make([]float64, len(r.Windows))
		for i, w := range r.Windows {
			xs[i] = w.StartS + r.WindowS/2
			ys[i] = w.Series[n]
		}
		strip.Add(&gappedLine{xs: xs, ys: ys, style: seriesStyle(allSeries, n), ranged: true})
	}
	strip.Y.Min = math.Min(strip.Y.Min, 0)
	strip.Y.Max *= 1.15
	if strip.Y.Max <= strip.Y.Min {
		strip.Y.Max = strip.Y.Min + 1
	}
	return p, strip
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return 0
}

// timeline draws a run's phases, faults and operator events.
type timeline struct {
	r            *run
	noPhaseShade bool
}

type timelineBackground struct{ *timeline }
type timelineForeground struct{ *timeline }

func (t *timelineBackground) Plot(c draw.Canvas, p *plot.Plot) {
	x, _ := p.Transforms(&c)
	band := func(from, to float64, col color.Color) {
		r := vg.Rectangle{Min: vg.Point{X: x(math.Max(from, p.X.Min)), Y: c.Min.Y}, Max: vg.Point{X: x(math.Min(to, p.X.Max)), Y: c.Max.Y}}
		c.SetColor(col)
		c.Fill(r.Path())
	}
	if !t.noPhaseShade {
		for i, ph := range t.r.phases() {
			if i%2 == 1 {
				from, to := t.r.phaseBounds(ph)
				band(from, to, lightGrey)
			}
		}
	}
	for _, f := range t.r.Faults {
		to := f.ClearS
		if math.IsNaN(to) {
			to = p.X.Max
		}
		fill := faultFill
		if f.unplanned() {
			fill = unplannedFill
		}
		band(f.InjectS, to, fill)
	}
}

func (t *timelineForeground) Plot(c draw.Canvas, p *plot.Plot) {
	x, _ := p.Transforms(&c)
	vl := func(at float64, sty draw.LineStyle) {
		if at >= p.X.Min && at <= p.X.Max {
			c.StrokeLine2(sty, x(at), c.Min.Y, x(at), c.Max.Y)
		}
	}
	phaseRow := newLabelRows(c, 9, 0)
	for _, ph := range t.r.phases() {
		from, _ := t.r.phaseBounds(ph)
		phaseRow.place(c, x(from)+3, ph.Name, grey)
	}
	labels := phaseRow.below(8)
	for _, f := range t.r.Faults {
		inject, clear := injectStyle, clearStyle
		if f.unplanned() {
			inject, clear = unplannedStyle, unplannedClearStyle
		}
		vl(f.InjectS, inject)
		if !math.IsNaN(f.ClearS) {
			vl(f.ClearS, clear)
		}
	}
	for _, e := range t.r.Events {
		if strings.HasPrefix(e.Kind, "operator.") {
			vl(e.TS, operatorStyle)
		}
	}
	// Labels after every line so no line crosses a label.
	for _, e := range t.r.Events {
		if e.TS < p.X.Min || e.TS > p.X.Max {
			continue
		}
		switch e.Kind {
		case "fault.inject":
			f := faultSpan{Type: e.Fault, Node: e.Node}
			labels.place(c, x(e.TS)+2, f.label(), f.color())
		case "fault.clear":
			f := faultSpan{Type: e.Fault, Node: e.Node}
			labels.place(c, x(e.TS)+2, "clear "+f.label(), f.color())
		case "operator.detect":
			labels.place(c, x(e.TS)+2, operatorLabel("detect", e), grey)
		case "operator.action":
			labels.place(c, x(e.TS)+2, operatorLabel("", e), grey)
		}
	}
	if !hasFaultEvents(t.r.Events) { // faults known only from summary.json
		for _, f := range t.r.Faults {
			labels.place(c, x(f.InjectS)+2, f.label(), f.color())
		}
	}
}

// operatorLabel is the short label of an operator event: "detect n3",
// "restart-failed n3", "done n3" — the whole action, never cut, with the
// node as the fault labels name it.
func operatorLabel(verb string, e record.Event) string {
	node := ""
	if e.Node > 0 {
		node = fmt.Sprintf(" n%d", e.Node)
	}
	if verb != "" {
		return verb + node
	}
	d := strings.TrimSpace(e.Detail)
	if i := strings.Index(d, " on node "); i >= 0 {
		d = d[:i] // the node is in the label already
	}
	switch {
	case strings.HasSuffix(d, " begins"):
		d = strings.TrimSuffix(d, " begins")
	case strings.HasSuffix(d, " done"):
		d = "done"
	}
	if d == "" {
		d = "action"
	}
	return shorten(d, 40) + node
}

func hasFaultEvents(evs []record.Event) bool {
	for _, e := range evs {
		if e.Kind == "fault.inject" {
			return true
		}
	}
	return false
}

func shorten(s string, n int) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// stackedOutcomes draws each outcome's rate per window as a stacked step
// area: one polygon per outcome, so 720 windows stay a light SVG.
type stackedOutcomes struct {
	r        *run
	outcomes []record.Outcome
}

func (s *stackedOutcomes) Plot(c draw.Canvas, p *plot.Plot) {
	x, y := p.Transforms(&c)
	ws := s.r.Windows
	if len(ws) == 0 {
		return
	}
	base := make([]float64, len(ws))
	for _, o := range s.outcomes {
		top := make([]float64, len(ws))
		any := false
		for i, w := range ws {
			top[i] = base[i] + float64(w.Outcomes[o])/s.r.WindowS
			any = any || w.Outcomes[o] > 0
		}
		if any {
			pts := make([]vg.Point, 0, 4*len(ws))
			for i, w := range ws {
				x0, x1 := x(w.StartS), x(math.Min(w.StartS+s.r.WindowS, p.X.Max))
				pts = append(pts, vg.Point{X: x0, Y: y(top[i])}, vg.Point{X: x1, Y: y(top[i])})
			}
			for i := len(ws) - 1; i >= 0; i-- {
				w := ws[i]
				x0, x1 := x(w.StartS), x(math.Min(w.StartS+s.r.WindowS, p.X.Max))
				pts = append(pts, vg.Point{X: x1, Y: y(base[i])}, vg.Point{X: x0, Y: y(base[i])})
			}
			c.FillPolygon(outcomeColors[o], pts)
		}
		base = top
	}
	// The generator's refused and cut-short arrivals on top: offered load
	// the service was never asked to carry (or whose answer was not awaited).
	for i, w := range ws {
		n := w.GenRefused + w.CutShort
		if n == 0 {
			continue
		}
		x0, x1 := x(w.StartS), x(math.Min(w.StartS+s.r.WindowS, p.X.Max))
		top := math.Min(base[i]+float64(n)/s.r.WindowS, p.Y.Max)
		c.FillPolygon(generatorFill, []vg.Point{{X: x0, Y: y(base[i])}, {X: x1, Y: y(base[i])}, {X: x1, Y: y(top)}, {X: x0, Y: y(top)}})
	}
}

// invalidWindows greys and hatches the windows that are not a valid
// measurement of the service (record.Window.Judge), over the whole height
// of the panel, so no one reads a dip the generator caused as the
// service's.
type invalidWindows struct{ r *run }

func (v *invalidWindows) Plot(c draw.Canvas, p *plot.Plot) {
	x, _ := p.Transforms(&c)
	const step = vg.Length(6)
	for _, w := range v.r.Windows {
		if w.Valid {
			continue
		}
		x0, x1 := x(math.Max(w.StartS, p.X.Min)), x(math.Min(w.StartS+v.r.WindowS, p.X.Max))
		if x1 <= x0 {
			continue
		}
		y0, y1 := c.Min.Y, c.Max.Y
		c.SetColor(invalidWash)
		c.Fill(vg.Rectangle{Min: vg.Point{X: x0, Y: y0}, Max: vg.Point{X: x1, Y: y1}}.Path())
		// 45° hatching, each line clipped to the window's rectangle; the
		// phase of the lines follows the canvas, so adjacent windows join.
		h := y1 - y0
		first := vg.Length(math.Floor(float64((x0-h-c.Min.X)/step)))*step + c.Min.X
		for d := first; d < x1; d += step {
			ax, ay := d, y0
			bx, by := d+h, y1
			if ax < x0 {
				ay += x0 - ax
				ax = x0
			}
			if bx > x1 {
				by -= bx - x1
				bx = x1
			}
			if ay < by {
				c.StrokeLine2(invalidHatch, ax, ay, bx, by)
			}
		}
	}
}

// gappedLine is a polyline that breaks at NaN values.
type gappedLine struct {
	xs, ys []float64
	style  draw.LineStyle
	ranged bool // contributes its data range to the axes
}

func (g *gappedLine) Plot(c draw.Canvas, p *plot.Plot) {
	x, y := p.Transforms(&c)
	var seg []vg.Point
	flush := func() {
		if len(seg) == 1 { // an isolated point still shows
			seg = append(seg, vg.Point{X: seg[0].X + 1, Y: seg[0].Y})
		}
		if len(seg) > 1 {
			c.StrokeLines(g.style, c.ClipLinesXY(seg)...)
		}
		seg = seg[:0]
	}
	for i := range g.xs {
		if math.IsNaN(g.ys[i]) || math.IsInf(g.ys[i], 0) {
			flush()
			continue
		}
		seg = append(seg, vg.Point{X: x(g.xs[i]), Y: y(g.ys[i])})
	}
	flush()
}

func (g *gappedLine) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	if !g.ranged {
		return
	}
	for i := range g.xs {
		if v := g.ys[i]; !math.IsNaN(v) && !math.IsInf(v, 0) {
			xmin, xmax = math.Min(xmin, g.xs[i]), math.Max(xmax, g.xs[i])
			ymin, ymax = math.Min(ymin, v), math.Max(ymax, v)
		}
	}
	return
}

// hlines draws horizontal lines across the data area; a label, when set,
// goes just above the highest line at its left end, beside the axis whose
// unit the lines are in.
type hlines struct {
	ys         []float64
	style      draw.LineStyle
	label      string
	labelColor color.Color
}

func (h *hlines) Plot(c draw.Canvas, p *plot.Plot) {
	_, y := p.Transforms(&c)
	top := math.NaN()
	for _, v := range h.ys {
		if v >= p.Y.Min && v <= p.Y.Max && !math.IsNaN(v) {
			c.StrokeLine2(h.style, c.Min.X, y(v), c.Max.X, y(v))
			if math.IsNaN(top) || v > top {
				top = v
			}
		}
	}
	if h.label == "" || math.IsNaN(top) {
		return
	}
	sty := textStyle(8)
	sty.Color = h.labelColor
	sty.YAlign = draw.YBottom
	at := vg.Point{X: c.Min.X + 3, Y: y(top) + 2}
	w, ht := sty.Width(h.label), sty.Height(h.label)
	if at.Y+ht > c.Max.Y { // no room above: below the line
		sty.YAlign = draw.YTop
		at.Y = y(top) - 2
	}
	r := vg.Rectangle{Min: vg.Point{X: at.X - 1, Y: at.Y}, Max: vg.Point{X: at.X + w + 1, Y: at.Y + ht}}
	if sty.YAlign == draw.YTop {
		r = vg.Rectangle{Min: vg.Point{X: at.X - 1, Y: at.Y - ht}, Max: vg.Point{X: at.X + w + 1, Y: at.Y}}
	}
	c.SetColor(alpha(color.White, 0xC0))
	c.Fill(r.Path())
	c.FillText(sty, at, h.label)
}

// rightLogAxis draws a logarithmic axis on the right edge of the data area
// for series that were mapped linearly in log10 onto the left axis's range.
type rightLogAxis struct {
	lo, hi float64
	label  string
}

func (a *rightLogAxis) Plot(c draw.Canvas, p *plot.Plot) {
	sty := textStyle(9)
	sty.YAlign = draw.YCenter
	ax := line(okabeBlack, 0.5)
	c.StrokeLine2(ax, c.Max.X, c.Min.Y, c.Max.X, c.Max.Y)
	decades := math.Log10(a.hi / a.lo)
	var widest vg.Length
	for v := a.lo; v <= a.hi*1.0001; v *= 10 {
		y := c.Min.Y + vg.Length(math.Log10(v/a.lo)/decades)*(c.Max.Y-c.Min.Y)
		c.StrokeLine2(ax, c.Max.X, y, c.Max.X+5, y)
		lbl := latencyTick(v)
		c.FillText(sty, vg.Point{X: c.Max.X + 7, Y: y}, lbl)
		widest = max(widest, sty.Width(lbl))
		for k := 2.0; k < 10 && decades <= 4; k++ { // minor ticks
			if m := v * k; m < a.hi {
				ym := c.Min.Y + vg.Length(math.Log10(m/a.lo)/decades)*(c.Max.Y-c.Min.Y)
				c.StrokeLine2(ax, c.Max.X, ym, c.Max.X+2.5, ym)
			}
		}
	}
	lsty := textStyle(10)
	lsty.Rotation = -math.Pi / 2
	lsty.XAlign, lsty.YAlign = draw.XCenter, draw.YBottom
	c.FillText(lsty, vg.Point{X: c.Max.X + 12 + widest, Y: (c.Min.Y + c.Max.Y) / 2}, a.label)
}

func latencyTick(v float64) string {
	switch {
	case v < 1e-3:
		return fmt.Sprintf("%gµs", v*1e6)
	case v < 1:
		return fmt.Sprintf("%gms", math.Round(v*1e3*1000)/1000)
	}
	return fmt.Sprintf("%gs", v)
}
