package model

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// WriteSessionLossFigure draws Ling, Kiciman and Fox (2004) Fig. 4 (probability of data loss
// against ρ for WQ = 2, 3 and wq) and Fig. 5 (against WQ = 1..6 at ρ = rho),
// to path's .svg and .png.
func WriteSessionLossFigure(wq int, rho float64, path string) ([]string, error) {
	fig4 := plot.New()
	fig4.Title.Text = "(Fig. 4) probability that all WQ copies are lost before the next write"
	fig4.X.Label.Text = "ρ = brick MTTF / mean time between writes"
	fig4.Y.Label.Text = "p_loss"
	fig4.X.Scale, fig4.Y.Scale = plot.LogScale{}, plot.LogScale{}
	fig4.X.Tick.Marker, fig4.Y.Tick.Marker = decadeTicks{}, decadeTicks{}
	wqs := []int{2, 3}
	if wq != 2 && wq != 3 {
		wqs = append(wqs, wq)
	}
	for i, w := range wqs {
		var xy plotter.XYs
		for e := 0.0; e <= 3.0001; e += 0.05 {
			r := math.Pow(10, e)
			xy = append(xy, plotter.XY{X: r, Y: PLoss(w, r)})
		}
		line, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		line.Color = palette[i]
		line.Width = vg.Points(1.5)
		fig4.Add(line)
		fig4.Legend.Add(fmt.Sprintf("WQ=%d", w), line)
	}
	fig4.Add(plotter.NewGrid())
	fig4.Legend.Top = true

	fig5 := plot.New()
	fig5.Title.Text = fmt.Sprintf("(Fig. 5) p_loss against copies written, ρ = %g", rho)
	fig5.X.Label.Text = "WQ (copies)"
	fig5.Y.Label.Text = "p_loss"
	fig5.Y.Scale = plot.LogScale{}
	fig5.Y.Tick.Marker = decadeTicks{}
	var xy plotter.XYs
	for w := 1; w <= 6; w++ {
		xy = append(xy, plotter.XY{X: float64(w), Y: PLoss(w, rho)})
	}
	line, points, err := plotter.NewLinePoints(xy)
	if err != nil {
		return nil, err
	}
	line.Color, points.Color = palette[0], palette[0]
	fig5.Add(line, points, plotter.NewGrid())
	// Whole decades around the points, so each has a labelled line nearby.
	fig5.Y.Min = math.Pow(10, math.Floor(math.Log10(xy[len(xy)-1].Y)))
	fig5.Y.Max = math.Pow(10, math.Ceil(math.Log10(xy[0].Y)))
	fig5.X.Min, fig5.X.Max = 0.5, 6.5
	return writeFigure(path, 7*vg.Inch, 8*vg.Inch, fig4, fig5)
}

// decadeTicks labels each power of ten as 1e-5, 0.01, 1, 100 … and marks
// 2..9 between them; gonum's LogTicks prints round-off (9.99…e-05).
type decadeTicks struct{}

func (decadeTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		for m := 1.0; m < 10; m++ {
			v := m * math.Pow(10, e)
			if v < min*(1-1e-9) || v > max*(1+1e-9) {
				continue
			}
			label := ""
			if m == 1 {
				label = decadeLabel(int(e))
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: label})
		}
	}
	return ticks
}

func decadeLabel(e int) string {
	if e >= -2 && e <= 3 {
		return formatFloat(math.Pow(10, float64(e)))
	}
	return fmt.Sprintf("1e%d", e)
}
