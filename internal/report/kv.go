package report

import (
	"math"

	"gonum.org/v1/plot/vg/draw"

	"github.com/faultbench/faultbench/internal/kvcheck"
)

// kvKinds are the strip series, under the availability graph, of a run
// with a kv history: per window, the reads the read-your-writes checker
// found stale, lost and phantom (summary.json's kv.windows), each in a
// colour and dash of its own, because they mean different things (a
// stale read is a replica behind, a lost one an acknowledged write gone,
// a phantom one a value nobody wrote). They are data_error in the stacked
// outcomes too; the strip says how many of each there were, which a thin
// data_error band can hide. All three are drawn, zeros included, so the
// graph says "none lost" as plainly as "three stale".
var kvKinds = []struct {
	name  string
	count func(kvcheck.Counts) int64
	style draw.LineStyle
}{
	{"kv stale reads", func(c kvcheck.Counts) int64 { return c.Stale }, line(okabeBlue, 1.5)},
	{"kv lost reads", func(c kvcheck.Counts) int64 { return c.Lost }, line(okabeBlack, 1.5, 5, 2)},
	{"kv phantom reads", func(c kvcheck.Counts) int64 { return c.Phantom }, line(okabeVermilion, 1.8, 1.5, 2)},
}

// addKVSeries adds the kvKinds series to the windows when the summary has
// a kv section; windows without a count are NaN (no line drawn).
func (r *run) addKVSeries() {
	if r.Summary == nil || r.Summary.KV == nil || len(r.Windows) == 0 || !(r.WindowS > 0) {
		return
	}
	byIndex := map[int]kvcheck.Counts{}
	for _, w := range r.Summary.KV.Windows {
		byIndex[int(math.Round(w.StartS/r.WindowS))] = w.Counts
	}
	for i := range r.Windows {
		w := &r.Windows[i]
		if w.Series == nil {
			w.Series = map[string]float64{}
		}
		c, ok := byIndex[int(math.Round(w.StartS/r.WindowS))]
		for _, k := range kvKinds {
			v := math.NaN()
			if ok {
				v = float64(k.count(c))
			}
			w.Series[k.name] = v
		}
	}
	for _, k := range kvKinds {
		r.Series = append(r.Series, k.name)
	}
}

// seriesStyle is how strip series name is drawn: a kv kind in its own
// style, any other series in the colour of its place among all the runs'
// series.
func seriesStyle(all []string, name string) draw.LineStyle {
	if i := kvKind(name); i >= 0 {
		return kvKinds[i].style
	}
	return line(seriesColor(indexOf(all, name)), 1.5)
}

// kvKind is name's index in kvKinds, -1 for another series.
func kvKind(name string) int {
	for i, k := range kvKinds {
		if k.name == name {
			return i
		}
	}
	return -1
}

// stripLabel is the strip's axis label: the one series' name, "kv reads"
// for the checker's kinds, "system" otherwise.
func stripLabel(series []string) string {
	if len(series) == 1 {
		return series[0]
	}
	for _, n := range series {
		if kvKind(n) < 0 {
			return "system"
		}
	}
	return "kv reads"
}
