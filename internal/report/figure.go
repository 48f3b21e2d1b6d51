package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// figure is one drawing of the report, rendered inline (SVG) and beside the
// report as Name.svg and Name.png.
type figure struct {
	Name    string // file stem, e.g. "availability"
	Title   string
	Caption string
	W, H    vg.Length
	draw    func(dc draw.Canvas)
}

// pngDPI makes the PNGs sharp enough for a paper at full column width.
const pngDPI = 150

func (f *figure) svg() ([]byte, error) {
	c := vgsvg.New(f.W, f.H)
	f.draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (f *figure) png() ([]byte, error) {
	c := vgimg.NewWith(vgimg.UseWH(f.W, f.H), vgimg.UseDPI(pngDPI))
	f.draw(draw.New(c))
	var b bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// inlineSVG strips the XML prolog so the SVG can sit inside HTML.
func inlineSVG(b []byte) string {
	s := string(b)
	if i := strings.Index(s, "<svg"); i > 0 {
		s = s[i:]
	}
	return s
}

// Colours: the Okabe–Ito palette, distinguishable with every common form
// of colour blindness.
var (
	okabeBlack     = rgb(0x00, 0x00, 0x00)
	okabeOrange    = rgb(0xE6, 0x9F, 0x00)
	okabeSky       = rgb(0x56, 0xB4, 0xE9)
	okabeGreen     = rgb(0x00, 0x9E, 0x73)
	okabeYellow    = rgb(0xF0, 0xE4, 0x42)
	okabeBlue      = rgb(0x00, 0x72, 0xB2)
	okabeVermilion = rgb(0xD5, 0x5E, 0x00)
	okabePurple    = rgb(0xCC, 0x79, 0xA7)
	grey           = rgb(0x60, 0x60, 0x60)
	lightGrey      = rgb(0xEE, 0xEE, 0xEE)
)

// outcomeColors are indexed by record.Outcome: ok is the calm bulk, the
// failures are the loud colours.
var outcomeColors = []color.Color{rgb(0xA3, 0xD5, 0xF2), okabeVermilion, okabeOrange, okabePurple, okabeYellow, okabeGreen}

// seriesColors colour runs, phases and thresholds in order.
var seriesColors = []color.Color{okabeBlue, okabeOrange, okabeGreen, okabePurple, okabeSky, okabeVermilion, okabeYellow, okabeBlack}

func seriesColor(i int) color.Color { return seriesColors[i%len(seriesColors)] }

func rgb(r, g, b uint8) color.Color { return color.NRGBA{R: r, G: g, B: b, A: 0xFF} }

func alpha(c color.Color, a uint8) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: a}
}

var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

func textStyle(size vg.Length) text.Style {
	return text.Style{Color: color.Black, Font: font.From(sans, size), Handler: plot.DefaultTextHandler}
}

// newPlot returns a plot in the report's type face.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, 11)
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 10)
		a.Tick.Label.Font = font.From(sans, 9)
	}
	p.Legend.TextStyle.Font = font.From(sans, 9)
	p.X.Tick.Marker, p.Y.Tick.Marker = niceTicks{N: 8}, niceTicks{N: 5}
	return p
}

// line returns a line style.
func line(c color.Color, width vg.Length, dashes ...vg.Length) draw.LineStyle {
	return draw.LineStyle{Color: c, Width: width, Dashes: dashes}
}

// legendItem is one entry of a horizontal legend: a filled swatch or a line.
type legendItem struct {
	Label string
	Fill  color.Color    // swatch colour, or nil for a line sample
	Line  draw.LineStyle // used when Fill is nil
}

// drawLegend lays the items out left to right, wrapping, within c, and
// returns the height used.
func drawLegend(c draw.Canvas, items []legendItem) vg.Length {
	sty := textStyle(9)
	sty.YAlign = draw.YCenter
	const sw, gap = vg.Length(16), vg.Length(12)
	rowH := sty.Height("Xg") + 4
	x, y := c.Min.X, c.Max.Y-rowH/2
	for _, it := range items {
		w := sw + 4 + sty.Width(it.Label)
		if x+w > c.Max.X && x > c.Min.X {
			x, y = c.Min.X, y-rowH
		}
		if it.Fill != nil {
			r := vg.Rectangle{Min: vg.Point{X: x, Y: y - 4}, Max: vg.Point{X: x + sw, Y: y + 4}}
			c.SetColor(it.Fill)
			c.Fill(r.Path())
		} else {
			c.StrokeLine2(it.Line, x, y, x+sw, y)
		}
		c.FillText(sty, vg.Point{X: x + sw + 4, Y: y}, it.Label)
		x += w + gap
	}
	return c.Max.Y - y + rowH/2
}

func legendHeight(width vg.Length, items []legendItem) vg.Length {
	sty := textStyle(9)
	const sw, gap = vg.Length(16), vg.Length(12)
	rowH := sty.Height("Xg") + 4
	rows, x := 1, vg.Length(0)
	for _, it := range items {
		w := sw + 4 + sty.Width(it.Label)
		if x+w > width && x > 0 {
			rows, x = rows+1, 0
		}
		x += w + gap
	}
	return vg.Length(rows)*rowH + 4
}

// sub returns the part of c between heights bottom and top (from c's bottom).
func sub(c draw.Canvas, bottom, top vg.Length) draw.Canvas {
	c.Rectangle = vg.Rectangle{Min: vg.Point{X: c.Min.X, Y: c.Min.Y + bottom}, Max: vg.Point{X: c.Max.X, Y: c.Min.Y + top}}
	return c
}

// alignLeft crops each canvas so every plot's data area starts at the same
// x as the widest y axis needs: stacked panels then share one time axis.
func alignLeft(plots []*plot.Plot, cs []draw.Canvas) {
	var left vg.Length
	for i, p := range plots {
		if d := p.DataCanvas(cs[i]).Min.X - cs[i].Min.X; d > left {
			left = d
		}
	}
	for i, p := range plots {
		d := p.DataCanvas(cs[i]).Min.X - cs[i].Min.X
		cs[i].Min.X += left - d
	}
}

// vline is a vertical marker line with an optional label placed by
// labelRows so labels never overlap.
type vline struct {
	X     float64
	Style draw.LineStyle
	Label string
	Color color.Color
}

// labelRows places text labels in the top rows of a data area, each in the
// first row where it does not overlap an earlier one.
type labelRows struct {
	sty   text.Style
	right []vg.Length      // per row, the rightmost end of its labels
	spans [][][2]vg.Length // per row, every label's [left, right]
	top   vg.Length
	rowH  vg.Length
}

func newLabelRows(c draw.Canvas, size vg.Length, skipRows int) *labelRows {
	sty := textStyle(size)
	sty.YAlign = draw.YTop
	h := sty.Height("Xg") + 1
	return &labelRows{sty: sty, top: c.Max.Y - 2 - vg.Length(skipRows)*h, rowH: h}
}

// below returns label rows of the given size that start under every row
// l has used, so labels of the two never overlap.
func (l *labelRows) below(size vg.Length) *labelRows {
	sty := textStyle(size)
	sty.YAlign = draw.YTop
	return &labelRows{sty: sty, top: l.top - vg.Length(len(l.right))*l.rowH, rowH: sty.Height("Xg") + 1}
}

// place draws s at x in the first row where it overlaps no earlier label,
// moved left where it would run past the data area's right edge. Each row
// remembers every label in it, so labels placed out of x order never
// overlap either.
func (l *labelRows) place(c draw.Canvas, x vg.Length, s string, col color.Color) {
	w := l.sty.Width(s)
	if x+w > c.Max.X {
		x = c.Max.X - w
	}
	x = max(x, c.Min.X)
	row := 0
	for ; row < len(l.spans); row++ {
		free := true
		for _, sp := range l.spans[row] {
			if x <= sp[1]+3 && x+w+3 >= sp[0] {
				free = false
				break
			}
		}
		if free {
			break
		}
	}
	if row == len(l.spans) {
		l.spans = append(l.spans, nil)
		l.right = append(l.right, 0)
	}
	l.spans[row] = append(l.spans[row], [2]vg.Length{x, x + w})
	l.right[row] = max(l.right[row], x+w)
	sty := l.sty
	sty.Color = col
	y := l.top - vg.Length(row)*l.rowH
	// A white halo keeps labels readable over bars.
	r := vg.Rectangle{Min: vg.Point{X: x - 1, Y: y - l.rowH + 1}, Max: vg.Point{X: x + w + 1, Y: y}}
	c.SetColor(alpha(color.White, 0xC0))
	c.Fill(r.Path())
	c.FillText(sty, vg.Point{X: x, Y: y}, s)
}

// fmtSeconds prints a duration in seconds for labels and tables.
func fmtSeconds(s float64) string {
	switch {
	case math.IsNaN(s) || math.IsInf(s, 0):
		return "–"
	case s == 0:
		return "0"
	case math.Abs(s) < 1e-3:
		return fmt.Sprintf("%.0f µs", s*1e6)
	case math.Abs(s) < 1:
		return fmt.Sprintf("%.3g ms", s*1e3)
	}
	return fmt.Sprintf("%.4g s", s)
}

// niceTicks labels a linear axis at 1, 2 or 5 × 10^k steps, aiming at
// about N labelled ticks, with unlabelled minor ticks between.
type niceTicks struct{ N int }

func (t niceTicks) Ticks(lo, hi float64) []plot.Tick {
	n := t.N
	if n < 2 {
		n = 6
	}
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: num(lo)}}
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	minor := step / 2
	if s := step / mag; s == 2 {
		minor = step / 4
	}
	var ts []plot.Tick
	for v := math.Ceil(lo/minor) * minor; v <= hi+minor*1e-9; v += minor {
		v = math.Round(v/minor) * minor
		tk := plot.Tick{Value: v}
		if r := v / step; math.Abs(r-math.Round(r)) < 1e-9 {
			tk.Label = strconvG(v)
		}
		ts = append(ts, tk)
	}
	return ts
}

func strconvG(v float64) string {
	if v == 0 {
		return "0"
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// niceMax rounds v up to a value niceTicks labels.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*mag >= v {
			return m * mag
		}
	}
	return 10 * mag
}
