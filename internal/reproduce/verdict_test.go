package reproduce

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/sweep"
)

func f(v float64) *float64 { return &v }

func num(v float64) Value        { return Value{Num: v} }
func text(s string) Value        { return Value{Text: s, IsText: true} }
func pubNum(v float64) Published { return Published{Num: v} }

func TestJudgeNumber(t *testing.T) {
	c := &Claim{Rule: RuleNumber, Published: pubNum(100), Tolerance: Tolerance{Abs: f(10)}}
	cases := []struct {
		v    float64
		want Verdict
	}{
		{100, Agrees}, {110, Agrees}, {90, Agrees}, // the tolerance's edge agrees
		{110.5, Close}, {120, Close}, {80, Close}, // close defaults to twice the tolerance
		{120.5, Differs}, {0, Differs},
	}
	for _, tc := range cases {
		if got, err := judge(c, num(tc.v)); err != nil || got != tc.want {
			t.Errorf("published 100 ±10, measured %v: %s %v, want %s", tc.v, got, err, tc.want)
		}
	}
	// Relative tolerances and an explicit close tolerance.
	c = &Claim{Rule: RuleNumber, Published: pubNum(446.8), Tolerance: Tolerance{Abs: f(0.1), CloseRel: f(0.01)}}
	for v, want := range map[float64]Verdict{446.75: Agrees, 446.9: Agrees, 445.714: Close, 440: Differs} {
		if got, _ := judge(c, num(v)); got != want {
			t.Errorf("446.8 ±0.1 (close 1%%), measured %v: %s, want %s", v, got, want)
		}
	}
	c = &Claim{Rule: RuleNumber, Published: pubNum(4), Tolerance: Tolerance{Rel: f(0.25), CloseRel: f(0.5)}}
	for v, want := range map[float64]Verdict{4.916: Agrees, 5: Agrees, 5.01: Close, 6: Close, 7.45: Differs, 1.9: Differs} {
		if got, _ := judge(c, num(v)); got != want {
			t.Errorf("4 ±25%% (close 50%%), measured %v: %s, want %s", v, got, want)
		}
	}
	// A published zero with an absolute tolerance.
	c = &Claim{Rule: RuleNumber, Published: pubNum(0), Tolerance: Tolerance{Abs: f(0.05), CloseAbs: f(0.2)}}
	for v, want := range map[float64]Verdict{0: Agrees, 0.05: Agrees, 0.1: Close, 0.3: Differs} {
		if got, _ := judge(c, num(v)); got != want {
			t.Errorf("0 ±0.05, measured %v: %s, want %s", v, got, want)
		}
	}
	if got, err := judge(c, text("C-1")); got != Failed || err == nil {
		t.Errorf("a text against rule number: %s %v", got, err)
	}
	if got, err := judge(c, num(math.NaN())); got != Failed || err == nil {
		t.Errorf("NaN: %s %v", got, err)
	}
}

func TestJudgeRange(t *testing.T) {
	c := &Claim{Rule: RuleRange, Published: Published{Lo: 0.99, Hi: 0.998, IsRange: true}, Tolerance: Tolerance{CloseAbs: f(0.0005)}}
	for v, want := range map[float64]Verdict{0.99: Agrees, 0.995: Agrees, 0.998: Agrees, 0.9984: Close, 0.9896: Close, 0.9988: Differs, 0.95: Differs} {
		if got, _ := judge(c, num(v)); got != want {
			t.Errorf("[0.99, 0.998], measured %v: %s, want %s", v, got, want)
		}
	}
	// An open range: "over 7 times", close within a quarter of 7.
	c = &Claim{Rule: RuleRange, Published: Published{Lo: 7, Hi: math.Inf(1), IsRange: true}, Tolerance: Tolerance{CloseRel: f(0.25)}}
	for v, want := range map[float64]Verdict{7: Agrees, 70: Agrees, 5.25: Close, 2.8: Differs} {
		if got, _ := judge(c, num(v)); got != want {
			t.Errorf("≥ 7, measured %v: %s, want %s", v, got, want)
		}
	}
	// Without a close tolerance, outside is differs.
	c.Tolerance = Tolerance{}
	if got, _ := judge(c, num(6.99)); got != Differs {
		t.Errorf("≥ 7 without close, 6.99: %s", got)
	}
}

func TestJudgeClassAndEqual(t *testing.T) {
	c := &Claim{Rule: RuleClass, Published: Published{Text: "C-2", IsText: true}}
	for v, want := range map[string]Verdict{"C-2": Agrees, "C-1": Close, "C": Close, "A": Differs, "D": Differs, "B": Differs} {
		if got, _ := judge(c, text(v)); got != want {
			t.Errorf("class C-2, measured %s: %s, want %s", v, got, want)
		}
	}
	if got, err := judge(c, num(1)); got != Failed || err == nil {
		t.Errorf("a number against rule class: %s %v", got, err)
	}
	e := &Claim{Rule: RuleEqual, Published: pubNum(0)}
	if got, _ := judge(e, num(0)); got != Agrees {
		t.Errorf("equal 0, 0: %s", got)
	}
	if got, _ := judge(e, num(1)); got != Differs {
		t.Errorf("equal 0, 1: %s", got)
	}
	if got, _ := judge(e, text("0")); got != Failed {
		t.Errorf("equal 0, the text 0: %s", got)
	}
}

func TestAggregate(t *testing.T) {
	a, err := aggregate([]Value{num(3), num(1), num(2)}, "")
	if err != nil || a.Value.Num != 2 || a.Min != 1 || a.Max != 3 || a.How != "median" {
		t.Fatalf("median of 3, 1, 2: %+v %v", a, err)
	}
	if s := a.String(); s != "2 (median of 3, 1 to 3)" {
		t.Errorf("text %q", s)
	}
	a, _ = aggregate([]Value{num(4), num(1), num(2), num(3)}, "median")
	if a.Value.Num != 2.5 {
		t.Errorf("median of four: %v", a.Value.Num)
	}
	a, _ = aggregate([]Value{num(4), num(1), num(2)}, "max")
	if a.Value.Num != 4 {
		t.Errorf("max: %v", a.Value.Num)
	}
	a, _ = aggregate([]Value{num(4), num(1), num(2)}, "min")
	if a.Value.Num != 1 {
		t.Errorf("min: %v", a.Value.Num)
	}
	a, _ = aggregate([]Value{num(7)}, "")
	if s := a.String(); s != "7" {
		t.Errorf("one repetition: %q", s)
	}
	// Texts: the most frequent; a tie goes to the first seen.
	a, err = aggregate([]Value{text("C-2"), text("C-1"), text("C-1")}, "")
	if err != nil || a.Value.Text != "C-1" || a.Counts["C-2"] != 1 {
		t.Fatalf("mode: %+v %v", a, err)
	}
	if s := a.String(); s != "C-1 (2 of 3; C-2 ×1)" {
		t.Errorf("text %q", s)
	}
	a, _ = aggregate([]Value{text("D"), text("C-2")}, "")
	if a.Value.Text != "D" {
		t.Errorf("tie: %s", a.Value.Text)
	}
	if _, err := aggregate([]Value{text("D"), num(1)}, ""); err == nil {
		t.Error("texts and numbers mixed: no error")
	}
	if _, err := aggregate([]Value{text("D")}, "median"); err == nil {
		t.Error("median of texts: no error")
	}
	if _, err := aggregate(nil, ""); err == nil {
		t.Error("no values: no error")
	}
}

func TestLookupPath(t *testing.T) {
	doc, err := decodeJSON([]byte(`{"faults":[{"class":"C-1","failure_duration_s":21.5}],
		"outlier_histogram":[{"label":"<1%","fraction":0.12},{"label":"1-2%","fraction":0.5}],
		"points":[{"label":"1/day","result":{"average_availability":0.9988}}],
		"outlier_breakdown":[{"key":"cluster.options.state_size","values":[{"value":"16","share":0.4},{"value":"65536","share":0.15}]}],
		"phases":{"fault":{"goodput":null}},"complete":true}`))
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]Value{
		"faults.0.class":                                  text("C-1"),
		"faults.0.failure_duration_s":                     num(21.5),
		"outlier_histogram[label=<1%].fraction":           num(0.12),
		"points[label=1/day].result.average_availability": num(0.9988),
		"outlier_breakdown[key=cluster.options.state_size].values[value=65536].share": num(0.15),
		"complete": num(1),
	} {
		got, err := lookupPath(doc, key)
		if err != nil || got != want {
			t.Errorf("%s: %v %v, want %v", key, got, err, want)
		}
	}
	for _, key := range []string{"faults.1.class", "faults.0.nope", "phases.fault.goodput", "outlier_histogram[label=9%].fraction", "faults.x", "a..b", "a[b", "a[b]"} {
		if _, err := lookupPath(doc, key); err == nil {
			t.Errorf("%s: no error", key)
		}
	}
}

func TestAnsweredFraction(t *testing.T) {
	dir := t.TempDir()
	span := &EventSpan{From: "fault.inject", To: "system.pinpoint.restart"}
	for _, tc := range []struct {
		name   string
		events []string
		want   float64
	}{
		{"every one answered", []string{"phase.start", "fault.inject", "system.pinpoint.restart", "fault.inject", "system.pinpoint.restart"}, 1},
		{"a second restart answers nothing more", []string{"fault.inject", "system.pinpoint.restart", "system.pinpoint.restart", "fault.inject"}, 0.5},
		{"a restart before any fault counts for none", []string{"system.pinpoint.restart", "fault.inject", "fault.inject", "system.pinpoint.restart"}, 0.5},
		{"the last one unanswered", []string{"fault.inject", "system.pinpoint.restart", "fault.inject", "system.pinpoint.suspect", "fault.inject"}, 1.0 / 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lines []string
			for i, k := range tc.events {
				lines = append(lines, fmt.Sprintf(`{"t_s": %d, "kind": %q}`, i, k))
			}
			file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".jsonl")
			if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\nnot json\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := answeredFraction(file, span)
			if err != nil || math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("%v %v, want %v", got, err, tc.want)
			}
		})
	}
	file := filepath.Join(dir, "none.jsonl")
	if err := os.WriteFile(file, []byte(`{"t_s": 1, "kind": "system.pinpoint.restart"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := answeredFraction(file, span); err == nil || !strings.Contains(err.Error(), "no fault.inject event") {
		t.Errorf("no fault: error %v", err)
	}
}

func TestLargestValue(t *testing.T) {
	// Throughput of users who each ask once per 3 s: it keeps up to 400
	// users (a third of a request per user and second), then falls behind.
	doc, err := decodeJSON([]byte(`{"configs": [
		{"params": {"workload.users": "800"}, "throughput_mean_per_s": 150, "latency": {"mean_s": 2.3}},
		{"params": {"workload.users": "100"}, "throughput_mean_per_s": 33.2, "latency": {"mean_s": 0.001}},
		{"params": {"workload.users": "200"}, "throughput_mean_per_s": 66.5, "latency": {"mean_s": 0.001}},
		{"params": {"workload.users": "400"}, "throughput_mean_per_s": 131, "latency": {"mean_s": 0.04}},
		{"params": {"workload.users": "600"}, "throughput_mean_per_s": 170, "latency": {"mean_s": 0.6}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	perUser := &Largest{Param: "workload.users", Key: "throughput_mean_per_s", PerParam: true, AtLeast: f(0.97 / 3)}
	if got, err := largestValue(doc, perUser); err != nil || got != 400 {
		t.Errorf("per user: %v %v, want 400", got, err)
	}
	if got, err := largestValue(doc, &Largest{Param: "workload.users", Key: "latency.mean_s", AtMost: f(0.1)}); err != nil || got != 400 {
		t.Errorf("latency: %v %v, want 400", got, err)
	}
	// A capacity the grid does not bracket is no number.
	for bound, want := range map[float64]string{
		0.34:  "not throughput_mean_per_s ÷ workload.users ≥ 0.34 already at the smallest workload.users, 100 (it is 0.332)",
		0.001: "≥ 0.001 at every workload.users of the grid",
	} {
		l := *perUser
		l.AtLeast = f(bound)
		if _, err := largestValue(doc, &l); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bound %v: error %v, want %q", bound, err, want)
		}
	}
	if _, err := largestValue(doc, &Largest{Param: "workload.clients", Key: "throughput_mean_per_s", AtLeast: f(1)}); err == nil {
		t.Error("a grid key the sweep does not have: no error")
	}
}

func TestFallsValue(t *testing.T) {
	// Goodput of a service under growing load: it rises to its peak of 300
	// at 24 users, then collapses. The configurations come in any order.
	doc, err := decodeJSON([]byte(`{"configs": [
		{"params": {"workload.users": "48"}, "throughput_mean_per_s": 2},
		{"params": {"workload.users": "6"}, "throughput_mean_per_s": 100},
		{"params": {"workload.users": "12"}, "throughput_mean_per_s": 250},
		{"params": {"workload.users": "24"}, "throughput_mean_per_s": 300},
		{"params": {"workload.users": "30"}, "throughput_mean_per_s": 200},
		{"params": {"workload.users": "36"}, "throughput_mean_per_s": 150},
		{"params": {"workload.users": "42"}, "throughput_mean_per_s": 40}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for share, want := range map[float64]float64{
		0.5:  36, // 150 is half of 300; 100 at 6 users is below it but before the peak
		0.9:  30,
		0.05: 48,
	} {
		got, err := fallsValue(doc, &Falls{Param: "workload.users", Key: "throughput_mean_per_s", AtMost: share})
		if err != nil || got != want {
			t.Errorf("at most %v of the peak: %v %v, want %v", share, got, err, want)
		}
	}
	// A fall the grid does not reach is no number.
	_, err = fallsValue(doc, &Falls{Param: "workload.users", Key: "throughput_mean_per_s", AtMost: 0.001})
	if want := "peaks at 300 (workload.users = 24) and stays above 0.001 of it up to the largest workload.users, 48 (2)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("no fall: error %v, want %q", err, want)
	}
	rising, err := decodeJSON([]byte(`{"configs": [
		{"params": {"workload.users": "1"}, "throughput_mean_per_s": 0},
		{"params": {"workload.users": "2"}, "throughput_mean_per_s": 0}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fallsValue(rising, &Falls{Param: "workload.users", Key: "throughput_mean_per_s", AtMost: 0.5}); err == nil || !strings.Contains(err.Error(), "never above 0") {
		t.Errorf("nothing served: error %v", err)
	}
	if _, err := fallsValue(doc, &Falls{Param: "workload.clients", Key: "throughput_mean_per_s", AtMost: 0.5}); err == nil {
		t.Error("a grid key the sweep does not have: no error")
	}
}

func TestWindowDrop(t *testing.T) {
	span := &EventSpan{From: "system.raid.reconstruction.started", To: "system.raid.reconstruction.finished"}
	write := func(t *testing.T, dir, name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Windows of 2 s at 100 ok/s in the warm-up; the rebuild runs from
	// 9.5 s to 16.5 s, so only the windows at 10, 12 and 14 s lie inside.
	run := func(t *testing.T, events string, ok map[float64]float64, invalid float64) string {
		dir := t.TempDir()
		write(t, dir, record.SummaryFile, `{"run": {"window_s": 2}, "baseline": {"mean": 100}}`)
		write(t, dir, record.EventsFile, events)
		var windows []record.Window
		for start := 0.0; start < 24; start += 2 {
			w := record.Window{StartS: start, ThroughputOK: 100, Valid: start != invalid}
			if v, ok := ok[start]; ok {
				w.ThroughputOK = v
			}
			windows = append(windows, w)
		}
		if err := record.WriteWindows(filepath.Join(dir, record.WindowsFile), windows, nil); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	rebuild := `{"t_s": 5, "kind": "fault.inject"}
{"t_s": 9.5, "kind": "system.raid.reconstruction.started"}
{"t_s": 16.5, "kind": "system.raid.reconstruction.finished"}
{"t_s": 18, "kind": "system.raid.reconstruction.started"}
`
	for _, tc := range []struct {
		name    string
		ok      map[float64]float64
		invalid float64
		want    float64
	}{
		{"the worst window inside", map[float64]float64{10: 80, 12: 66, 14: 90}, -1, 0.34},
		{"windows the span only touches are left out", map[float64]float64{8: 10, 12: 82, 16: 20}, -1, 0.18},
		{"an invalid window is no measurement", map[float64]float64{10: 5, 12: 75}, 10, 0.25},
		{"a rise is a negative drop", map[float64]float64{10: 120, 12: 110, 14: 130}, -1, -0.1},
		{"only the first span", map[float64]float64{12: 90, 18: 0, 20: 0}, -1, 0.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := windowDrop(run(t, rebuild, tc.ok, tc.invalid), span)
			if err != nil || math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("%v %v, want %v", got, err, tc.want)
			}
		})
	}
	short := `{"t_s": 10.5, "kind": "system.raid.reconstruction.started"}
{"t_s": 12.2, "kind": "system.raid.reconstruction.finished"}
`
	if _, err := windowDrop(run(t, short, nil, -1), span); err == nil || !strings.Contains(err.Error(), "no valid window of 2 s") {
		t.Errorf("a span shorter than a window: error %v", err)
	}
	if _, err := windowDrop(run(t, `{"t_s": 1, "kind": "fault.inject"}`+"\n", nil, -1), span); err == nil || !strings.Contains(err.Error(), "no system.raid.reconstruction.started event") {
		t.Errorf("no rebuild: error %v", err)
	}
	dir := run(t, rebuild, nil, -1)
	write(t, dir, record.SummaryFile, `{"run": {"window_s": 2}, "baseline": null}`)
	if _, err := windowDrop(dir, span); err == nil || !strings.Contains(err.Error(), "baseline") {
		t.Errorf("no baseline: error %v", err)
	}
}

// A sweep's claim reads sweep.json, or with config one configuration's
// own summary.json.
func TestSweepConfigSummary(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sweep.json", `{"configs": [{"config": 1, "throughput_mean_per_s": 800}, {"config": 2, "throughput_mean_per_s": 700}]}`)
	write("cfg-0001-r1/"+record.SummaryFile, `{"phases": {"recovery": {"punctuality": 0.9}}}`)
	write("cfg-0002-r1/"+record.SummaryFile, `{"phases": {"recovery": {"punctuality": 0.3}}}`)
	for _, tc := range []struct {
		m    Measure
		want float64
	}{
		{Measure{Key: "configs[config=2].throughput_mean_per_s"}, 700},
		{Measure{Key: "phases.recovery.punctuality", Config: 1}, 0.9},
		{Measure{Key: "phases.recovery.punctuality", Config: 2}, 0.3},
	} {
		v, err := readValue(KindSweep, dir, &tc.m, 0.1)
		if err != nil || v.Num != tc.want {
			t.Errorf("config %d %s: %v %v, want %v", tc.m.Config, tc.m.Key, v, err, tc.want)
		}
	}
	if _, err := readValue(KindSweep, dir, &Measure{Key: "phases.recovery.punctuality", Config: 3}, 0.1); err == nil || !strings.Contains(err.Error(), "cfg-0003-r1") {
		t.Errorf("a configuration the sweep has not run: error %v, want it named", err)
	}
}

// A sweep kept without its request records, as docs/results keeps one, is
// judged from the sweep.json its full run wrote: analysing it again would
// empty every latency distribution. Without a sweep.json it is collected.
func TestSweepWithoutRecordsKeepsItsAnalysis(t *testing.T) {
	src := filepath.Join(repoRoot, committedRun, "broadwell04/sensitivity-process/press-perf-app-hang-process-time/r1")
	if _, err := os.Stat(src); err != nil {
		t.Skipf("no committed sweep to copy: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "r1")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	analysis := filepath.Join(dir, sweep.AnalysisFile)
	kept := []byte(`{"configs": [], "max_over_mean_median": 23.1}`)
	if err := os.WriteFile(analysis, kept, 0o644); err != nil {
		t.Fatal(err)
	}
	ev := &evaluator{out: filepath.Dir(dir)}
	r := &repetition{n: 1, dir: dir}
	ev.sweepStatus(r)
	if r.ref.Status != StatusComplete {
		t.Fatalf("status %s (%s), want complete", r.ref.Status, r.ref.Reason)
	}
	if got, _ := os.ReadFile(analysis); !bytes.Equal(got, kept) {
		t.Fatalf("sweep.json was rewritten from runs without records:\n%.200s", got)
	}

	if err := os.Remove(analysis); err != nil {
		t.Fatal(err)
	}
	ev.sweepStatus(r)
	if r.ref.Status != StatusComplete || !fileExists(analysis) {
		t.Fatalf("without a sweep.json: status %s (%s), sweep.json written: %v", r.ref.Status, r.ref.Reason, fileExists(analysis))
	}
}
