package report

import (
	"fmt"
	"image/color"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/kvcheck"
	"github.com/faultbench/faultbench/internal/record"
)

// kvRun is a 6-window run whose checker found, per window, the stale,
// lost and phantom reads of counts (window i: counts[i]).
func kvRun(counts []kvcheck.Counts) *run {
	r := &run{Label: "kv", WindowS: 1, EndS: float64(len(counts)), Summary: &analysis.Summary{KV: &analysis.KVSummary{}}}
	for i, c := range counts {
		w := record.Window{StartS: float64(i), Offered: 10, Valid: true, ThroughputOK: 10 - float64(c.Anomalies()),
			LatencyMean: 0.01, LatencyP50: 0.01, LatencyP90: 0.01, LatencyP99: 0.02, LatencyMax: 0.02}
		w.Outcomes[record.OK] = 10 - c.Anomalies()
		w.Outcomes[record.DataError] = c.Anomalies()
		r.Windows = append(r.Windows, w)
		r.Summary.KV.Windows = append(r.Summary.KV.Windows, analysis.KVWindow{StartS: float64(i), Counts: c})
	}
	r.addKVSeries()
	return r
}

// The kv strip draws stale, lost and phantom reads apart — three series,
// each in a colour and dash of its own, named in the legend — with each
// window's own count (checked on the series, then on the SVG: three
// distinct stroked lines under the graph). The SVG is a golden file too.
func TestKVStripDrawsEachKindApart(t *testing.T) {
	counts := []kvcheck.Counts{{Reads: 5}, {Reads: 5, Stale: 3}, {Reads: 5, Stale: 1, Lost: 2}, {Reads: 5, Phantom: 4}, {Reads: 5}, {Reads: 5}}
	r := kvRun(counts)
	if want := []string{"kv stale reads", "kv lost reads", "kv phantom reads"}; strings.Join(r.Series, ",") != strings.Join(want, ",") {
		t.Fatalf("series %v, want %v", r.Series, want)
	}
	for i, c := range counts {
		got := r.Windows[i].Series
		if got["kv stale reads"] != float64(c.Stale) || got["kv lost reads"] != float64(c.Lost) || got["kv phantom reads"] != float64(c.Phantom) {
			t.Errorf("window %d: series %v, want stale %d lost %d phantom %d", i, got, c.Stale, c.Lost, c.Phantom)
		}
	}
	svg, err := availabilityFigure([]*run{r}).svg()
	if err != nil {
		t.Fatal(err)
	}
	s := string(svg)
	for _, k := range kvKinds {
		if !strings.Contains(s, k.name+" (strip)") {
			t.Errorf("the legend does not name %q", k.name)
		}
	}
	// Each kind's stroke colour appears (legend and strip), and the three
	// differ from one another.
	colours := map[string]bool{}
	for _, k := range kvKinds {
		c := svgColour(k.style.Color)
		colours[c] = true
		if n := strings.Count(s, "stroke:"+c); n < 2 {
			t.Errorf("%s: stroke %s appears %d time(s), want its legend sample and its line", k.name, c, n)
		}
	}
	if len(colours) != len(kvKinds) {
		t.Errorf("the kinds share colours: %v", colours)
	}
	if !regexp.MustCompile(`stroke-dasharray:[0-9.]+,[0-9.]+`).MatchString(s) {
		t.Error("no dashed line: lost and phantom must differ from stale in dash as well as colour")
	}
	golden(t, "kv-strip.svg", svg)
}

// A window the checker has no count for is a gap, not a zero.
func TestKVStripGapWithoutCount(t *testing.T) {
	r := kvRun([]kvcheck.Counts{{Reads: 1}, {Reads: 1, Stale: 1}})
	r.Windows = append(r.Windows, record.Window{StartS: 2})
	r.Series = nil
	r.addKVSeries()
	if v := r.Windows[2].Series["kv stale reads"]; !math.IsNaN(v) {
		t.Errorf("window without a count: %v, want NaN", v)
	}
}

// svgColour is c as vgsvg writes a stroke: #rrggbb.
func svgColour(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02X%02X%02X", r>>8, g>>8, b>>8)
}
