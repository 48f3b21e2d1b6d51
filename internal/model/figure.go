package model

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// WriteSweepFigure draws Nagaraja et al. (2002) Fig. 6: (a) the unavailability of every
// design at every swept rate, stacked by fault, and (b) the performability
// bars. It writes path with its extension replaced by .svg and .png, and
// returns the two paths.
func WriteSweepFigure(res *SweepResult, path string) ([]string, error) {
	var labels []string
	var faults []string
	seen := map[string]bool{}
	for _, p := range res.Points {
		labels = append(labels, p.Design+" "+p.Label)
		for _, f := range p.Performance.Faults {
			if !seen[f.Name] {
				seen[f.Name] = true
				faults = append(faults, f.Name)
			}
		}
	}
	width := vg.Points(math.Max(14, 260/float64(len(labels))))

	unav := plot.New()
	unav.Title.Text = fmt.Sprintf("(a) unavailability by fault, sweeping %s", res.Scale)
	unav.Y.Label.Text = "unavailability (fraction of requests lost)"
	var below *plotter.BarChart
	for i, name := range faults {
		vals := make(plotter.Values, len(res.Points))
		for k, p := range res.Points {
			for _, f := range p.Performance.Faults {
				if f.Name == name {
					vals[k] = math.Max(0, f.Unavailability)
				}
			}
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return nil, err
		}
		bars.Color = palette[i%len(palette)]
		bars.LineStyle.Width = 0
		if below != nil {
			bars.StackOn(below)
		}
		below = bars
		unav.Add(bars)
		unav.Legend.Add(name, bars)
	}
	unav.Legend.Top = true
	unav.NominalX(labels...)
	// Leave the right part of the plot to the legend, so it never covers a bar.
	unav.X.Max = float64(len(labels)) - 0.5 + math.Max(1.2, 0.45*float64(len(labels)))
	rotate(unav)

	perf := plot.New()
	perf.Title.Text = "(b) performability = AT × ideal unavailability / unavailability"
	perf.Y.Label.Text = "performability"
	vals := make(plotter.Values, len(res.Points))
	for k, p := range res.Points {
		if v := float64(p.Performance.Performability); !math.IsNaN(v) {
			vals[k] = v
		}
	}
	bars, err := plotter.NewBarChart(vals, width)
	if err != nil {
		return nil, err
	}
	bars.Color = color.RGBA{R: 60, G: 110, B: 170, A: 255}
	perf.Add(bars)
	perf.NominalX(labels...)
	rotate(perf)
	return writeFigure(path, 9*vg.Inch, 9*vg.Inch, unav, perf)
}

// WriteCrossoverFigure draws B's performability against the factor on its
// named fault rates, A's as a horizontal line, and the cross-over point.
func WriteCrossoverFigure(c *Crossover, path string) ([]string, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("cross-over: %s's %s rates × factor vs %s", c.B, strings.Join(c.Scaled, ","), c.A)
	p.X.Label.Text = "factor on " + c.B + "'s rates (log scale)"
	p.Y.Label.Text = "performability"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = decadeTicks{}
	xy := make(plotter.XYs, len(c.Curve))
	for i, pt := range c.Curve {
		xy[i].X, xy[i].Y = pt.Factor, pt.Performability
	}
	line, points, err := plotter.NewLinePoints(xy)
	if err != nil {
		return nil, err
	}
	line.Color = plotutil.Color(0)
	points.Color = plotutil.Color(0)
	a := plotter.XYs{{X: xy[0].X, Y: c.PerformabilityA}, {X: xy[len(xy)-1].X, Y: c.PerformabilityA}}
	aLine, err := plotter.NewLine(a)
	if err != nil {
		return nil, err
	}
	aLine.Color = plotutil.Color(1)
	aLine.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	p.Add(line, points, aLine, plotter.NewGrid())
	p.Legend.Add(c.B, line, points)
	p.Legend.Add(c.A, aLine)
	p.Legend.Top = true
	if f := float64(c.Factor); !math.IsNaN(f) {
		mark, err := plotter.NewScatter(plotter.XYs{{X: f, Y: c.PerformabilityA}})
		if err != nil {
			return nil, err
		}
		mark.Shape = draw.CircleGlyph{}
		mark.Radius = vg.Points(5)
		mark.Color = color.Black
		p.Add(mark)
		p.Legend.Add(fmt.Sprintf("cross-over ×%.3g", f), mark)
	}
	return writeFigure(path, 7*vg.Inch, 4.5*vg.Inch, p)
}

// palette has a distinct colour for each of up to 12 faults (ColorBrewer
// "Paired", reordered so that neighbours in a stack contrast).
var palette = []color.Color{
	color.RGBA{31, 120, 180, 255}, color.RGBA{227, 26, 28, 255}, color.RGBA{51, 160, 44, 255},
	color.RGBA{255, 127, 0, 255}, color.RGBA{106, 61, 154, 255}, color.RGBA{177, 89, 40, 255},
	color.RGBA{166, 206, 227, 255}, color.RGBA{251, 154, 153, 255}, color.RGBA{178, 223, 138, 255},
	color.RGBA{253, 191, 111, 255}, color.RGBA{202, 178, 214, 255}, color.RGBA{120, 120, 120, 255},
}

func rotate(p *plot.Plot) {
	p.X.Tick.Label.Rotation = math.Pi / 4
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
}

// writeFigure stacks the plots vertically and writes an SVG and a PNG.
func writeFigure(path string, w, h vg.Length, plots ...*plot.Plot) ([]string, error) {
	base := strings.TrimSuffix(path, filepath.Ext(path))
	grid := make([][]*plot.Plot, len(plots))
	for i, p := range plots {
		grid[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 6,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	render := func(c vg.CanvasSizer) {
		dc := draw.New(c)
		canvases := plot.Align(grid, tiles, dc)
		for i, p := range plots {
			p.Draw(canvases[i][0])
		}
	}
	svg := vgsvg.New(w, h)
	render(svg)
	png := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(110), vgimg.UseBackgroundColor(color.White))
	render(png)
	out := []string{base + ".svg", base + ".png"}
	if err := writeTo(out[0], svg); err != nil {
		return nil, err
	}
	if err := writeTo(out[1], vgimg.PngCanvas{Canvas: png}); err != nil {
		return nil, err
	}
	return out, nil
}

func writeTo(path string, w io.WriterTo) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
