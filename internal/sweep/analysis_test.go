package sweep

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSweepAnalysisAgainstPerConfigCounts(t *testing.T) {
	s, err := Load(writeSweep(t, gridSweep), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := Execute(context.Background(), s, Options{OutDir: out, Execute: fakeExecute}); err != nil {
		t.Fatal(err)
	}
	tab, a, err := Reanalyze(out, AnalyzeOptions{P99Goal: 3 * time.Millisecond, CostKeys: []string{"workload.clients"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Runs != 10 || a.Failed != 4 || len(a.Configs) != 3 {
		t.Fatalf("runs %d failed %d configs %d", a.Runs, a.Failed, len(a.Configs))
	}
	// Each configuration pools its two repetitions.
	total := 0
	for _, c := range a.Configs {
		if c.Runs != 2 || c.Dist.N != 1600 {
			t.Fatalf("config %d: %d runs, %d samples", c.Config, c.Runs, c.Dist.N)
		}
		total += c.Dist.Outliers
	}
	// Table 1: per key, the shares are each value's outliers over all.
	for _, kb := range a.Breakdown {
		sum := 0.0
		for _, v := range kb.Values {
			want := 0
			for _, c := range a.Configs {
				if c.Params[kb.Key] == v.Value {
					want += c.Dist.Outliers
				}
			}
			if v.Outliers != want {
				t.Errorf("%s=%s: %d outliers, want %d", kb.Key, v.Value, v.Outliers, want)
			}
			sum += float64(v.Share)
		}
		if math.Abs(sum-1) > 1e-12 || total == 0 {
			t.Errorf("%s: shares sum to %v (outliers %d)", kb.Key, sum, total)
		}
	}
	// Fig. 2(b) counts every configuration once; Fig. 3 is sorted by mean.
	n := 0
	for _, b := range a.OutlierHistogram {
		n += b.Configs
	}
	if n != 3 {
		t.Errorf("Fig. 2(b) holds %d configurations, want 3", n)
	}
	for i := 1; i < len(a.Haircut); i++ {
		if a.Haircut[i].Mean < a.Haircut[i-1].Mean {
			t.Errorf("haircut not sorted by mean: %+v", a.Haircut)
		}
	}
	// The fake's latency grows with clients (1 ms per client): only
	// clients=1 meets a 3 ms p99 once spikes are trimmed by the p99.
	if a.Knob == nil || len(a.Knob.Meeting) != 1 || a.Knob.Meeting[0].Params["workload.clients"] != "1" {
		t.Errorf("knob %+v", a.Knob)
	}
	var text bytes.Buffer
	if err := WriteText(&text, a); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Table 1", "workload.clients", "Fig. 2(b)", "haircut", "Knob"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	html := filepath.Join(out, "report.html")
	if err := WriteHTML(html, a); err != nil {
		t.Fatal(err)
	}
	body, _ := os.ReadFile(html)
	if strings.Count(string(body), "<svg") != 6 || len(tab.Rows) != 10 {
		t.Errorf("report holds %d figures, want 6", strings.Count(string(body), "<svg"))
	}
	if !strings.Contains(string(body), "Box plots, configurations sorted by mean") {
		t.Errorf("report lacks the box plots")
	}
	// One box per configuration, in the haircut's order, whose whiskers
	// the axes cover.
	b := boxPlot(a).Y
	for i, c := range sortedByMean(a.Configs) {
		if c.Config != a.Haircut[i].Config {
			t.Errorf("box %d is configuration %d, Fig. 3 has %d there", i, c.Config, a.Haircut[i].Config)
		}
		if float64(c.Dist.Min) < b.Min || float64(c.Dist.Max) > b.Max {
			t.Errorf("configuration %d: whiskers [%v, %v] outside the axis [%v, %v]", c.Config, c.Dist.Min, c.Dist.Max, b.Min, b.Max)
		}
	}
}
