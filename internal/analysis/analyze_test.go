package analysis_test

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/analysis/analysistest"
	"github.com/faultbench/faultbench/internal/record"
)

// threePhases is Broadwell's experiment shape, shortened.
var threePhases = []analysistest.Phase{{Name: "warmup", DurationS: 60}, {Name: "fault", DurationS: 60}, {Name: "post", DurationS: 60}}

func TestAnalyzeEndToEnd(t *testing.T) {
	spec := analysistest.Spec{
		Phases: threePhases, Rate: 200, Seed: 7,
		Serve: analysistest.OKFraction(func(t float64) float64 {
			if t >= 60 && t < 95 {
				return 0.5
			}
			return 0.98
		}),
		Events:     analysistest.Fault("app-hang", 2, 1, 60, 90),
		Thresholds: []string{"p50 < 500ms", "yield >= 0.95"},
	}
	dir := analysistest.Dir(t, spec)
	sum, err := analysis.Analyze(dir, analysis.Options{Complete: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := analysis.Write(dir, sum); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, record.SummaryFile))
	if strings.Contains(string(b), "NaN") {
		t.Fatal("summary.json holds NaN")
	}
	var generic map[string]any
	if err := json.Unmarshal(b, &generic); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"complete", "run", "overall", "phases", "failure", "baseline", "deviations", "deviation_summary", "faults"} {
		if _, ok := generic[k]; !ok {
			t.Errorf("summary.json has no key %q", k)
		}
	}
	if sum.Run.Attempts != 36000 || sum.Overall.Attempts != 36000 {
		t.Errorf("attempts = %d / %d, want 36000", sum.Run.Attempts, sum.Overall.Attempts)
	}
	if sum.Baseline == nil || sum.Baseline.Source != "warmup" {
		t.Fatalf("baseline = %+v, want one from warmup", sum.Baseline)
	}
	if len(sum.Faults) != 1 {
		t.Fatalf("faults = %+v", sum.Faults)
	}
	f := sum.Faults[0]
	if f.FaultDurationS != 30 || f.FailureDurationS != 35 || f.Class != "C-1" {
		t.Errorf("fault %+v: want fault 30 s, failure 35 s, class C-1", f)
	}
	if sum.Failure == nil || sum.Failure.StartS != 60 || sum.Failure.EndS != 95 {
		t.Errorf("failure = %+v, want [60, 95)", sum.Failure)
	}
	if len(sum.Thresholds) != 2 || !sum.Thresholds[0].Passed || sum.Thresholds[1].Passed {
		t.Errorf("thresholds = %+v", sum.Thresholds)
	}
	var total float64
	for _, st := range f.Stages {
		total += st.DurationS
	}
	if math.Abs(total-35) > 1e-9 {
		t.Errorf("stages sum to %v s, want the 35 s failure: %+v", total, f.Stages)
	}
	_ = rand.New
}

func analyzeJSON(t *testing.T, dir string, opts analysis.Options) (*analysis.Summary, string) {
	t.Helper()
	sum, err := analysis.Analyze(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := analysis.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "NaN") || strings.Contains(string(b), "Inf") {
		t.Fatalf("summary.json holds NaN or Inf:\n%s", b)
	}
	return sum, string(b)
}

func TestBadInput(t *testing.T) {
	write := func(name, content string) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	cases := map[string]struct{ dir, want string }{
		"missing directory": {filepath.Join(t.TempDir(), "nope"), "no such results directory"},
		"no requests":       {t.TempDir(), "not a results directory"},
		"empty csv":         {write("requests.csv", ""), "empty file"},
		"wrong columns":     {write("requests.csv", "start,latency\n1,2\n"), `no column "t_start_s"`},
		"bad value":         {write("requests.csv", strings.Join(record.Columns, ",")+"\n0.5,abc,ok,1,0,10,200,/\n"), ":2:"},
		"unknown outcome":   {write("requests.csv", strings.Join(record.Columns, ",")+"\n0.5,0.1,fine,1,0,10,200,/\n"), "unknown outcome"},
		"truncated parquet": {write("requests.parquet", "PAR1 not really"), "not a readable Parquet file"},
		"bad events":        {write("events.jsonl", "{\"t_s\": 1, \"kind\": \n"), "events.jsonl:1"},
		"bad scenario":      {write("scenario.yaml", "name: [\n"), "scenario.yaml"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := analysis.Analyze(c.dir, analysis.Options{Complete: true})
			if !errors.Is(err, analysis.ErrBadInput) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want ErrBadInput mentioning %q", err, c.want)
			}
		})
	}
}

// TestCSVOnly: a directory holding only requests.csv is one phase "all"
// with 5 s windows; a gap without requests and the absence of faults give
// well-defined values.
func TestCSVOnly(t *testing.T) {
	spec := analysistest.Spec{NoScenario: true, Phases: []analysistest.Phase{{Name: "x", DurationS: 120}}, Rate: 50,
		Serve: func(tt float64, rng *rand.Rand) (record.Outcome, float64) {
			if tt >= 80 && tt < 90 {
				return record.ConnError, 0.0001 // no ok at all for two windows
			}
			return record.OK, 0.01 + 0.01*rng.Float64()
		}}
	dir := analysistest.Dir(t, spec)
	sum, _ := analyzeJSON(t, dir, analysis.Options{Complete: true})
	if len(sum.PhaseOrder) != 1 || sum.PhaseOrder[0] != "all" || sum.Run.WindowS != 5 || sum.Run.DurationS != 120 {
		t.Errorf("phases %v window %v duration %v", sum.PhaseOrder, sum.Run.WindowS, sum.Run.DurationS)
	}
	if len(sum.Faults) != 0 {
		t.Errorf("faults %+v", sum.Faults)
	}
	if sum.Failure == nil || sum.Failure.StartS != 80 || sum.Failure.EndS != 90 {
		t.Errorf("failure = %+v, want the deviation [80, 90)", sum.Failure)
	}
	if sum.Baseline == nil || sum.Baseline.Source != "all" {
		t.Errorf("baseline %+v", sum.Baseline)
	}

	// A header-only file: nothing to measure, still a summary.
	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, "requests.csv"), []byte(strings.Join(record.Columns, ",")+"\n"), 0o644)
	sum, _ = analyzeJSON(t, empty, analysis.Options{Complete: true})
	if sum.Overall.Attempts != 0 || sum.Baseline != nil || sum.Failure != nil {
		t.Errorf("empty run: %+v", sum)
	}
}

func TestWindowWithoutRequests(t *testing.T) {
	spec := analysistest.Spec{Phases: []analysistest.Phase{{Name: "a", DurationS: 60}, {Name: "b", DurationS: 60}}, Rate: 40, Seed: 3,
		Events: analysistest.Fault("node-freeze", 1, 1, 60, 70)}
	dir := analysistest.Dir(t, spec)
	// Remove every request scheduled in [60, 70): two windows without any.
	b, _ := os.ReadFile(filepath.Join(dir, "requests.csv"))
	var keep []string
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if i > 0 && (strings.HasPrefix(line, "6") && len(strings.SplitN(line, ".", 2)[0]) == 2) {
			continue
		}
		keep = append(keep, line)
	}
	os.WriteFile(filepath.Join(dir, "requests.csv"), []byte(strings.Join(keep, "\n")+"\n"), 0o644)
	res, err := analysis.AnalyzeDetail(dir, analysis.Options{Complete: true})
	if err != nil {
		t.Fatal(err)
	}
	if w := res.Windows[12]; w.Offered != 0 || !math.IsNaN(w.LatencyMean) {
		t.Errorf("window 12 = %+v, want empty", w)
	}
	f := res.Summary.Faults[0]
	if f.Class != "D" || f.FailureDurationS != 10 {
		t.Errorf("fault %+v, want D for 10 s", f)
	}
	analyzeJSON(t, dir, analysis.Options{Complete: true})
}

func TestBaselineDirAndInterrupted(t *testing.T) {
	base := analysistest.Dir(t, analysistest.Spec{Rate: 100, Seed: 1, Serve: analysistest.OKFraction(func(float64) float64 { return 0.97 })})
	run := analysistest.Dir(t, analysistest.Spec{Rate: 100, Seed: 2, Phases: threePhases,
		Serve:  analysistest.OKFraction(func(t float64) float64 { return 0.97 - 0.5*between(t, 60, 80) }),
		Events: analysistest.Fault("link-down", 1, 1, 60, 80)})
	sum, _ := analyzeJSON(t, run, analysis.Options{Complete: false, BaselineDir: base})
	if sum.Complete || sum.Baseline == nil || sum.Baseline.Source != base {
		t.Fatalf("complete %v baseline %+v", sum.Complete, sum.Baseline)
	}
	if f := sum.Faults[0]; f.FailureDurationS != 20 || f.Class != "C-1" {
		t.Errorf("fault %+v", f)
	}
	if !sum.Overall.Punctuality.Valid() {
		t.Error("punctuality undefined with a baseline")
	}
}

func between(t, a, b float64) float64 {
	if t >= a && t < b {
		return 1
	}
	return 0
}

// TestParquetMatchesCSV: the column-projecting Parquet reader sees exactly
// what the CSV reader sees.
func TestParquetMatchesCSV(t *testing.T) {
	spec := analysistest.Spec{Phases: threePhases, Rate: 150, Seed: 11,
		Serve:  analysistest.OKFraction(func(t float64) float64 { return 0.98 - 0.7*between(t, 60, 100) }),
		Events: analysistest.Fault("app-crash", 2, 1, 60, 90)}
	csvDir := analysistest.Dir(t, spec)
	pqDir := t.TempDir()
	if err := analysistest.Write(pqDir, spec); err != nil {
		t.Fatal(err)
	}
	pw, err := record.CreateParquet(filepath.Join(pqDir, record.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := record.ReadRequests(csvDir, pw.Write); err != nil {
		t.Fatal(err)
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(pqDir, record.RequestsCSV))
	_, a := analyzeJSON(t, csvDir, analysis.Options{Complete: true})
	_, b := analyzeJSON(t, pqDir, analysis.Options{Complete: true})
	if a != b {
		t.Errorf("summaries differ:\ncsv:\n%s\nparquet:\n%s", a, b)
	}
}

// TestInterrupted: a run stopped at 100 s of a 180 s scenario ends where the
// record ends; the phase that never began is left out, the one cut short
// covers what ran.
func TestInterrupted(t *testing.T) {
	spec := analysistest.Spec{Phases: threePhases, Rate: 50, Seed: 5}
	dir := analysistest.Dir(t, spec)
	b, _ := os.ReadFile(filepath.Join(dir, record.RequestsCSV))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	os.WriteFile(filepath.Join(dir, record.RequestsCSV), []byte(strings.Join(lines[:1+100*50], "\n")+"\n"), 0o644)
	sum, _ := analyzeJSON(t, dir, analysis.Options{Complete: false})
	if sum.Complete || len(sum.PhaseOrder) != 2 || sum.Phases["fault"].Attempts != 40*50 {
		t.Fatalf("complete %v phases %v fault %+v", sum.Complete, sum.PhaseOrder, sum.Phases["fault"])
	}
	if d := sum.Run.DurationS; d < 99.9 || d > 100 {
		t.Errorf("run duration %v, want the last start ≈ 100 s", d)
	}

	// Nothing recorded at all.
	os.WriteFile(filepath.Join(dir, record.RequestsCSV), []byte(strings.Join(record.Columns, ",")+"\n"), 0o644)
	sum, _ = analyzeJSON(t, dir, analysis.Options{Complete: false})
	if sum.Overall.Attempts != 0 || len(sum.PhaseOrder) != 0 {
		t.Errorf("empty interrupted run: %+v", sum)
	}
}

func TestImplausibleStart(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, record.RequestsCSV), []byte(strings.Join(record.Columns, ",")+"\n1,0.1,ok,1,0,1,200,/\n999999999999,0.1,ok,1,0,1,200,/\n"), 0o644)
	_, err := analysis.Analyze(dir, analysis.Options{Complete: true})
	if !errors.Is(err, analysis.ErrBadInput) || !strings.Contains(err.Error(), "request 2") {
		t.Errorf("error %v, want bad input naming request 2", err)
	}
}

// TestWindowsCSV: with windows.csv present its latency percentiles reach the
// window series; counts are always recomputed from the requests.
func TestWindowsCSV(t *testing.T) {
	spec := analysistest.Spec{Phases: threePhases, Rate: 20, Parquet: true, Windows: true, Events: analysistest.Fault("delay", 1, 1, 60, 70)}
	res, err := analysis.AnalyzeDetail(analysistest.Dir(t, spec), analysis.Options{Complete: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Windows) != 36 || res.Windows[3].Offered != 100 || math.IsNaN(res.Windows[3].LatencyP99) {
		t.Errorf("windows %d, window 3 = %+v", len(res.Windows), res.Windows[3])
	}
	if res.Overall.Count != 3600 || res.Phases["fault"].Count != 1200 || res.Failure != nil {
		t.Errorf("distributions: overall %d, fault %d, failure %v", res.Overall.Count, res.Phases["fault"].Count, res.Failure)
	}
}

// TestWriteRead: summary.json round-trips, nulls coming back as NaN.
func TestWriteRead(t *testing.T) {
	dir := analysistest.Dir(t, analysistest.Spec{NoScenario: true})
	sum, err := analysis.Analyze(dir, analysis.Options{Complete: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := analysis.Write(dir, sum); err != nil {
		t.Fatal(err)
	}
	back, err := analysis.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if back.Overall.Attempts != sum.Overall.Attempts || back.Overall.LatencyP99S != sum.Overall.LatencyP99S || back.Overall.Punctuality != sum.Overall.Punctuality {
		t.Errorf("round trip: %+v", back.Overall)
	}
	if back.Failure != nil || back.Overall.Demerits != sum.Overall.Demerits {
		t.Errorf("round trip: failure %v demerits %v", back.Failure, back.Overall.Demerits)
	}
	if err := analysis.Write(filepath.Join(dir, "missing"), sum); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}
