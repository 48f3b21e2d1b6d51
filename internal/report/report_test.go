package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/knee"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; if the change is intended, run go test ./internal/report -update and review the diff", path)
	}
}

// small is a short run that keeps golden files small: 40 s at 20/s.
var small = synth{Name: "small-crash", Seed: 1, Rate: 20, Phases: []float64{10, 15, 10, 5}, WindowS: 5,
	Fault: true, Summary: true, Windows: true, Series: true}

var svgBlock = regexp.MustCompile(`(?s)<svg.*?</svg>`)

// TestReportGolden checks the HTML text (tables, notes, structure) with the
// inline figures replaced by a placeholder, and the SVG of one small figure.
func TestReportGolden(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "small")
	small.write(t, dir)
	if err := Write([]string{dir}, ""); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(html), "<svg"); n < 9 {
		t.Errorf("report has %d inline SVG figures, want every figure inline", n)
	}
	html = bytes.ReplaceAll(html, []byte(dir), []byte("DIR"))
	golden(t, "small.html", svgBlock.ReplaceAll(html, []byte("<svg/>")))
	svg, err := os.ReadFile(filepath.Join(dir, "figures", "demerits.svg"))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "small-demerits.svg", svg)
	for _, name := range []string{"availability", "latency-box", "p-exceed", "goodput-punctuality", "raw-totals", "averages", "demerits", "latency-distribution", "haircut", "stages"} {
		for _, ext := range []string{".png", ".svg"} {
			if _, err := os.Stat(filepath.Join(dir, "figures", name+ext)); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestReportDeterministic writes the same report twice and wants the same bytes.
func TestReportDeterministic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "small")
	small.write(t, dir)
	var outs [2][]byte
	for i := range outs {
		out := filepath.Join(t.TempDir(), "r.html")
		if err := Write([]string{dir}, out); err != nil {
			t.Fatal(err)
		}
		outs[i], _ = os.ReadFile(out)
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Error("two reports of the same run differ")
	}
}

// TestReportMissingInputs: no summary.json, no windows.csv, no faults, a
// gap without attempts. The report says what is missing and renders "–".
func TestReportMissingInputs(t *testing.T) {
	defer func(f func(string, analysis.Options) (*analysis.Summary, error)) { analyze = f }(analyze)
	analyze = nil // the report's own fallback, independent of internal/analysis
	s := synth{Name: "bare", Seed: 2, Rate: 10, Phases: []float64{20, 20}, WindowS: 5, GapAfter: 12}
	dir := filepath.Join(t.TempDir(), "bare")
	s.write(t, dir)
	if err := Write([]string{dir}, ""); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	html = bytes.ReplaceAll(html, []byte(dir), []byte("DIR"))
	golden(t, "bare.html", svgBlock.ReplaceAll(html, []byte("<svg/>")))
	for _, want := range []string{"summary.json is missing", "windows.csv is missing", "<td>–</td>"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestReportCompare writes two runs side by side into a named file.
func TestReportCompare(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	small.write(t, a)
	other := small
	other.Seed, other.Fault = 3, false
	other.write(t, b)
	out := filepath.Join(root, "cmp.html")
	if err := Write([]string{a, b}, out); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"small-crash (a)", "small-crash (b)", `href="cmp-figures/availability.png"`, "Whole run, side by side"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("comparison report lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "cmp-figures", "availability.png")); err != nil {
		t.Error(err)
	}
}

// TestReportAnalyzesMissingSummary: without summary.json the report runs
// the analysis in memory and leaves the directory as it was.
func TestReportAnalyzesMissingSummary(t *testing.T) {
	s := small
	s.Summary = false
	dir := filepath.Join(t.TempDir(), "nosummary")
	s.write(t, dir)
	if err := Write([]string{dir}, ""); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(html, []byte("summary.json is missing")) {
		t.Error("report does not say summary.json is missing")
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err == nil {
		t.Error("report wrote summary.json: a report must not change its inputs")
	}
}

func TestReportErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	err := Write([]string{dir}, "")
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("Write on an empty directory: %v, want an error naming %s", err, dir)
	}
	small.write(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write([]string{dir}, ""); err == nil || !strings.Contains(err.Error(), "summary.json") {
		t.Errorf("Write with a broken summary.json: %v, want an error naming it", err)
	}
}

// TestLook writes a realistic report for a person to look at:
//
//	FAULTBENCH_LOOK=/tmp/look go test ./internal/report -run TestLook
func TestLook(t *testing.T) {
	out := os.Getenv("FAULTBENCH_LOOK")
	if out == "" {
		t.Skip("set FAULTBENCH_LOOK=DIR to write a sample report there")
	}
	ha := synth{Name: "press-app-crash-ha", Seed: 1, Rate: 200, Phases: []float64{120, 180, 120, 180}, WindowS: 5,
		Fault: true, Summary: true, Windows: true, Series: true, Parquet: true}
	perf := ha
	perf.Name, perf.Seed, perf.Series = "press-app-crash-perf", 2, false
	a, b := filepath.Join(out, "ha"), filepath.Join(out, "perf")
	ha.write(t, a)
	perf.write(t, b)
	if err := Write([]string{a}, ""); err != nil {
		t.Fatal(err)
	}
	if err := Write([]string{a, b}, filepath.Join(out, "compare.html")); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkWriteHour renders a 1-hour run: 720 windows, 3M requests.
func BenchmarkWriteHour(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "hour")
	hour := synth{Name: "hour", Seed: 4, Rate: 834, Phases: []float64{600, 1200, 900, 900}, WindowS: 5,
		Fault: true, Summary: true, Windows: true, Series: true, Parquet: true}
	hour.write(b, dir)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := Write([]string{dir}, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReportKneeFigure: a run with knee.csv gets the knee figure; the
// small run without one has none (see small.html).
func TestReportKneeFigure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "knee")
	small.write(t, dir)
	steps := []knee.Step{
		{N: 1, Stage: "ramp", Rate: 10, Measure: knee.Measure{Attempts: 50, OK: 50, P50: time.Millisecond, P99: 3 * time.Millisecond}, Goodput: 1, Pass: true},
		{N: 2, Stage: "ramp", Rate: 20, Measure: knee.Measure{Attempts: 100, OK: 100, P50: time.Millisecond, P99: 9 * time.Millisecond}, Goodput: 1, Pass: true},
		{N: 3, Stage: "ramp", Rate: 40, Measure: knee.Measure{Attempts: 200, OK: 150, P50: time.Second, P99: 6 * time.Second}, Goodput: 0.75, Why: "goodput 0.7500 < 0.99, p99 6s > 1s"},
		{N: 4, Stage: "refine", Rate: 30, Measure: knee.Measure{Attempts: 150, OK: 150, P50: time.Millisecond, P99: 300 * time.Millisecond}, Goodput: 1, Pass: true},
	}
	var b bytes.Buffer
	if err := knee.WriteCSV(&b, knee.Default, steps); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, knee.File), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write([]string{dir}, ""); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(html, []byte(`<h2 id="knee">Knee search</h2>`)) {
		t.Error("report lacks the knee figure")
	}
	for _, ext := range []string{".png", ".svg"} {
		if _, err := os.Stat(filepath.Join(dir, "figures", "knee"+ext)); err != nil {
			t.Error(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, knee.File), []byte("step,stage\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write([]string{dir}, ""); err == nil || !strings.Contains(err.Error(), knee.File) {
		t.Errorf("a broken knee.csv: %v, want an error naming it", err)
	}
}
