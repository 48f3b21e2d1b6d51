package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/provenance"
	"github.com/faultbench/faultbench/internal/record"
)

// TestRunRecordsProvenance: a real run says what made it, in
// provenance.json, summary.json and the Parquet footer, all agreeing.
func TestRunRecordsProvenance(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	before := time.Now()
	if stdout, stderr, code := run(t, "run", writeScenario(t, tiny), "-o", dir, "--quiet"); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	sum, err := analysis.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := sum.Provenance
	if p == nil || p.SchemaVersion != provenance.SchemaVersion || sum.SchemaVersion != provenance.SchemaVersion || len(p.RunID) != 12 {
		t.Fatalf("provenance %+v, schema %d", p, sum.SchemaVersion)
	}
	started, err := time.Parse(time.RFC3339Nano, p.StartedUTC)
	if err != nil || started.Before(before.Add(-time.Second)) || !strings.HasSuffix(p.StartedUTC, "Z") {
		t.Errorf("started_utc %q (%v): want a UTC instant after the test began", p.StartedUTC, err)
	}
	if p.Cores < 1 || p.Host == "" || len(p.CommandLine) == 0 {
		t.Errorf("machine fields: %+v", p)
	}
	if !slices.Equal(sum.Run.Phases, []string{"only"}) {
		t.Errorf("run.phases %v", sum.Run.Phases)
	}
	meta, err := record.ReadMeta(dir)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range p.Meta() {
		if meta[k] != v {
			t.Errorf("parquet metadata %s = %q, provenance says %q", k, meta[k], v)
		}
	}
}

func copyTestdata(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join("..", "analysis", "testdata", name)
	dst := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestAnalyzeSchema1: analyze and export read every saved older results
// directory and rewrite its summary under today's schema.
func TestAnalyzeSchema1(t *testing.T) {
	for _, name := range []string{"schema1-quickstart", "schema1-interrupted", "schema1-bare-csv"} {
		dir := copyTestdata(t, name)
		stdout, stderr, code := run(t, "analyze", dir)
		if code != ExitOK {
			t.Fatalf("%s: exit %d\n%s\n%s", name, code, stdout, stderr)
		}
		if !strings.Contains(stdout, "provenance: none recorded") {
			t.Errorf("%s: console does not say the provenance is unknown:\n%s", name, stdout)
		}
		sum, err := analysis.Read(dir)
		if err != nil || sum.SchemaVersion != provenance.SchemaVersion || len(sum.Run.Phases) == 0 {
			t.Fatalf("%s: %+v %v", name, sum, err)
		}
		if name == "schema1-interrupted" && (sum.Complete || !strings.Contains(stdout, "(interrupted run)")) {
			t.Errorf("re-analysis lost the interruption: complete=%v\n%s", sum.Complete, stdout)
		}
		if _, stderr, code := run(t, "export", dir, "--csv", "-o", filepath.Join(t.TempDir(), "x.csv")); code != ExitOK {
			t.Errorf("%s: export exit %d: %s", name, code, stderr)
		}
	}
}

// TestAnalyzeBareCSVBaseline: a bare requests.csv says it was its own
// baseline unless --baseline-window names a fault-free stretch.
func TestAnalyzeBareCSVBaseline(t *testing.T) {
	dir := copyTestdata(t, "schema1-bare-csv")
	stdout, _, code := run(t, "analyze", dir)
	if code != ExitOK || !strings.Contains(stdout, "whole record was its own baseline") {
		t.Fatalf("exit %d, console does not warn of the self-baseline:\n%s", code, stdout)
	}
	sum, _ := analysis.Read(dir)
	if sum.Definitions.Baseline != "self" || len(sum.Notes) == 0 {
		t.Errorf("summary does not say it: %+v %q", sum.Definitions, sum.Notes)
	}
	// Without a scenario windows are 5 s and the 5.5 s record ends at 10 s:
	// 0:10s covers its two windows, 0:1 none.
	stdout, stderr, code := run(t, "analyze", dir, "--baseline-window", "0:10s")
	if code != ExitOK || strings.Contains(stdout, "own baseline") || !strings.Contains(stdout, "baseline (window 0:10") {
		t.Fatalf("--baseline-window: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, bad := range []string{"10", "5:1", "a:b", "0:1"} {
		if _, stderr, code := run(t, "analyze", dir, "--baseline-window", bad); code != ExitBadInput || !strings.Contains(stderr, "baseline window") && !strings.Contains(stderr, "--baseline-window") {
			t.Errorf("--baseline-window %s: exit %d, %s", bad, code, stderr)
		}
	}
}

// savedSchemas are the saved results directories of every schema
// (internal/analysis/testdata/README.md).
var savedSchemas = []string{
	"schema1-quickstart", "schema1-interrupted", "schema1-bare-csv",
	"schema2-quickstart", "schema2-killed", "schema3-quickstart",
}

// TestAnalyzeAndReportEverySchema: `analyze` and `report` read the saved
// results of every schema, schema 2's segments of a killed run included;
// `report` as the saved summaries stand refuses to compare schema 2 with
// schema 3 (their windows were judged differently) and, once both are
// re-analysed, sets them side by side.
func TestAnalyzeAndReportEverySchema(t *testing.T) {
	dirs := map[string]string{}
	for _, name := range savedSchemas {
		dir := copyTestdata(t, name)
		dirs[name] = dir
		if strings.HasPrefix(name, "schema2") || strings.HasPrefix(name, "schema3") {
			// As the older faultbench left them, before any re-analysis.
			if _, err := os.Stat(filepath.Join(dir, record.SummaryFile)); err == nil {
				out := filepath.Join(t.TempDir(), name+"-as-saved.html")
				if _, stderr, code := run(t, "report", dir, "-o", out); code != ExitOK {
					t.Errorf("%s: report as saved: exit %d: %s", name, code, stderr)
				}
			}
		}
		stdout, stderr, code := run(t, "analyze", dir)
		if code != ExitOK {
			t.Fatalf("%s: analyze exit %d\n%s\n%s", name, code, stdout, stderr)
		}
		sum, err := analysis.Read(dir)
		if err != nil || sum.SchemaVersion != provenance.SchemaVersion || sum.Run.Attempts == 0 {
			t.Fatalf("%s: %+v %v", name, sum, err)
		}
		if name == "schema2-killed" && (sum.Complete || !strings.Contains(sum.IncompleteReason, "killed") || !strings.Contains(stdout, "(interrupted run)")) {
			t.Errorf("%s: complete=%v (%s); the summary and console should say the run was cut:\n%s", name, sum.Complete, sum.IncompleteReason, stdout)
		}
		out := filepath.Join(t.TempDir(), name+".html")
		if _, stderr, code := run(t, "report", dir, "-o", out); code != ExitOK {
			t.Errorf("%s: report exit %d: %s", name, code, stderr)
		} else if html, _ := os.ReadFile(out); !strings.Contains(string(html), "<svg") {
			t.Errorf("%s: the report has no figure", name)
		}
	}

	// Saved summaries of schemas 2 and 3 side by side: refused, with the
	// remedy; the re-analysed copies compare.
	s2, s3 := copyTestdata(t, "schema2-quickstart"), copyTestdata(t, "schema3-quickstart")
	_, stderr, code := run(t, "report", s2, s3, "-o", filepath.Join(t.TempDir(), "mixed.html"))
	if code != ExitBadInput || !strings.Contains(stderr, "--allow-mixed-schemas") {
		t.Errorf("report of schema 2 beside schema 3: exit %d, %s; want bad input naming --allow-mixed-schemas", code, stderr)
	}
	if _, stderr, code := run(t, "report", dirs["schema2-quickstart"], dirs["schema3-quickstart"], "-o", filepath.Join(t.TempDir(), "both.html")); code != ExitOK {
		t.Errorf("report of the re-analysed runs: exit %d, %s", code, stderr)
	}
}
