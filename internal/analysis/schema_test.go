package analysis_test

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/analysis/analysistest"
	"github.com/faultbench/faultbench/internal/provenance"
	"github.com/faultbench/faultbench/internal/record"
)

// copyDir copies a testdata results directory (with its segments, if
// any), so analysing it (which writes summary.json) leaves testdata as the
// old faultbench wrote it.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestReadsSchema1 analyses results directories that the schema-1
// faultbench wrote and checks that today's analysis agrees with the
// summary it wrote then on what both define.
func TestReadsSchema1(t *testing.T) {
	for _, name := range []string{"schema1-quickstart", "schema1-interrupted"} {
		t.Run(name, func(t *testing.T) {
			src := filepath.Join("testdata", name)
			old, err := analysis.Read(src)
			if err != nil {
				t.Fatal(err)
			}
			if old.SchemaVersion != provenance.LegacySchemaVersion || old.Provenance != nil || old.Definitions != nil {
				t.Fatalf("old summary decoded as schema %d, provenance %v, definitions %v", old.SchemaVersion, old.Provenance, old.Definitions)
			}
			if !slices.Equal(old.Run.Phases, old.PhaseOrder) || len(old.Run.Phases) == 0 {
				t.Fatalf("run.phases %v not derived from phase_order %v", old.Run.Phases, old.PhaseOrder)
			}
			dir := copyDir(t, src)
			sum, js := analyzeJSON(t, dir, analysis.Options{Complete: old.Complete})
			if sum.SchemaVersion != provenance.SchemaVersion || sum.Provenance != nil || !strings.Contains(js, `"provenance": null`) {
				t.Errorf("re-analysis: schema %d, provenance %v", sum.SchemaVersion, sum.Provenance)
			}
			if sum.Run.Attempts != old.Run.Attempts || sum.Overall.Outcomes["ok"] != old.Overall.Outcomes["ok"] ||
				sum.Overall.LatencyP99S != old.Overall.LatencyP99S || sum.Complete != old.Complete {
				t.Errorf("re-analysis differs: attempts %d/%d ok %d/%d p99 %v/%v complete %v/%v", sum.Run.Attempts, old.Run.Attempts,
					sum.Overall.Outcomes["ok"], old.Overall.Outcomes["ok"], sum.Overall.LatencyP99S, old.Overall.LatencyP99S, sum.Complete, old.Complete)
			}
			if !slices.Equal(sum.Run.Phases, old.PhaseOrder) {
				t.Errorf("run.phases %v, want %v", sum.Run.Phases, old.PhaseOrder)
			}
			if len(sum.Faults) != len(old.Faults) {
				t.Errorf("%d faults, the old summary had %d", len(sum.Faults), len(old.Faults))
			}
			if sum.Definitions == nil || sum.Definitions.Baseline != "phase" || sum.Definitions.WindowS != old.Run.WindowS {
				t.Errorf("definitions %+v", sum.Definitions)
			}
		})
	}
}

// TestReadsSchema2And3 analyses the saved results of schemas 2 and 3
// (testdata/README.md): what they record is read back whole, their
// provenance is kept, and re-analysed under the definitions they were
// written with (schema 2: --judge throughput) their faults come out as the
// old faultbench classed them; schema 3 is today's, so everything agrees.
func TestReadsSchema2And3(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema int
		judge  string // the judge of that schema's open-loop runs
	}{
		{"schema2-quickstart", 2, analysis.JudgeThroughput},
		{"schema3-quickstart", 3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := filepath.Join("testdata", tc.name)
			old, err := analysis.Read(src)
			if err != nil {
				t.Fatal(err)
			}
			if old.SchemaVersion != tc.schema || old.Provenance == nil || old.Provenance.SchemaVersion != tc.schema || old.Definitions == nil {
				t.Fatalf("saved summary decoded as schema %d, provenance %+v, definitions %+v", old.SchemaVersion, old.Provenance, old.Definitions)
			}
			dir := copyDir(t, src)
			sum, _ := analyzeJSON(t, dir, analysis.Options{Complete: old.Complete, Judge: tc.judge})
			if sum.SchemaVersion != provenance.SchemaVersion || sum.Provenance == nil || sum.Provenance.RunID != old.Provenance.RunID ||
				sum.Provenance.SchemaVersion != tc.schema {
				t.Errorf("re-analysis: schema %d, provenance %+v (the run's own schema and id must survive)", sum.SchemaVersion, sum.Provenance)
			}
			if sum.Run.Attempts != old.Run.Attempts || sum.Overall.Attempts != old.Overall.Attempts || sum.Overall.Arrivals != old.Overall.Arrivals ||
				sum.Overall.Outcomes["ok"] != old.Overall.Outcomes["ok"] || sum.Overall.LatencyP99S != old.Overall.LatencyP99S ||
				sum.Overall.InvalidWindows != old.Overall.InvalidWindows || sum.Complete != old.Complete {
				t.Errorf("re-analysis differs: attempts %d/%d arrivals %d/%d ok %d/%d p99 %v/%v invalid %d/%d complete %v/%v",
					sum.Overall.Attempts, old.Overall.Attempts, sum.Overall.Arrivals, old.Overall.Arrivals,
					sum.Overall.Outcomes["ok"], old.Overall.Outcomes["ok"], sum.Overall.LatencyP99S, old.Overall.LatencyP99S,
					sum.Overall.InvalidWindows, old.Overall.InvalidWindows, sum.Complete, old.Complete)
			}
			if !slices.Equal(sum.Run.Phases, old.Run.Phases) || len(sum.Faults) != len(old.Faults) {
				t.Fatalf("phases %v / %v, %d / %d faults", sum.Run.Phases, old.Run.Phases, len(sum.Faults), len(old.Faults))
			}
			for i, f := range sum.Faults {
				o := old.Faults[i]
				if f.Type != o.Type || f.Class != o.Class || f.FailureDurationS != o.FailureDurationS {
					t.Errorf("fault %d: %s class %q failure %v s, the schema-%d faultbench said %s %q %v s",
						i, f.Type, f.Class, f.FailureDurationS, tc.schema, o.Type, o.Class, o.FailureDurationS)
				}
			}
		})
	}
}

// TestReadsSchema2Killed analyses a schema-2 run killed with SIGKILL
// during its app-crash: only closed Parquet segments under requests/ (and
// the hidden, empty one it was writing), no summary. Every row of the
// closed segments is read, and the summary says the run is incomplete.
func TestReadsSchema2Killed(t *testing.T) {
	src := filepath.Join("testdata", "schema2-killed")
	files, err := record.RequestFiles(src)
	if err != nil || len(files) != 4 {
		t.Fatalf("segments %v, %v: want the 4 closed ones", files, err)
	}
	var rows int64
	for _, f := range files {
		if err := record.ReadParquetFile(f, func(record.Request) error { rows++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	dir := copyDir(t, src)
	sum, _ := analyzeJSON(t, dir, analysis.Options{Complete: true})
	if sum.Complete || !strings.Contains(sum.IncompleteReason, "killed") {
		t.Errorf("complete %v, reason %q: want incomplete, killed", sum.Complete, sum.IncompleteReason)
	}
	if sum.Run.Attempts != rows || sum.Provenance == nil || sum.Provenance.SchemaVersion != 2 {
		t.Errorf("%d attempts (segments hold %d rows), provenance %+v", sum.Run.Attempts, rows, sum.Provenance)
	}
}

func TestBareCSVIsItsOwnBaseline(t *testing.T) {
	dir := copyDir(t, filepath.Join("testdata", "schema1-bare-csv"))
	sum, _ := analyzeJSON(t, dir, analysis.Options{Complete: true})
	if sum.Definitions.Baseline != "self" || len(sum.Notes) != 1 || !strings.Contains(sum.Notes[0], "own baseline") {
		t.Fatalf("definitions %+v notes %q: want the self-baseline said", sum.Definitions, sum.Notes)
	}
	if !slices.Equal(sum.Run.Phases, []string{"all"}) {
		t.Errorf("run.phases %v", sum.Run.Phases)
	}
}

func TestBaselineWindow(t *testing.T) {
	// No scenario: 60 s fault-free, then 30 s at half the throughput.
	spec := analysistest.Spec{NoScenario: true, Phases: []analysistest.Phase{{Name: "x", DurationS: 90}}, Rate: 100, Seed: 5,
		Serve: func(tt float64, rng *rand.Rand) (record.Outcome, float64) {
			if tt >= 60 && rng.Float64() < 0.5 {
				return record.ConnError, 0.001
			}
			return record.OK, 0.01 + 0.01*rng.Float64()
		}}
	dir := analysistest.Dir(t, spec)
	sum, _ := analyzeJSON(t, dir, analysis.Options{Complete: true, BaselineWindow: &analysis.Span{StartS: 0, EndS: 60}})
	if sum.Definitions.Baseline != "window" || !slices.Equal(sum.Definitions.BaselineWindowS, []float64{0, 60}) || len(sum.Notes) != 0 {
		t.Fatalf("definitions %+v notes %q", sum.Definitions, sum.Notes)
	}
	if b := sum.Baseline; b == nil || b.Source != "window 0:60" || b.Mean < 95 || b.Mean > 105 {
		t.Fatalf("baseline %+v, want about 100 ok/s from the first 60 s", sum.Baseline)
	}
	if sum.Failure == nil || sum.Failure.StartS != 60 {
		t.Errorf("failure %+v, want the drop at 60 s found against the window's band", sum.Failure)
	}
	self, _ := analyzeJSON(t, dir, analysis.Options{Complete: true})
	if self.Definitions.Baseline != "self" || self.Baseline.Mean >= sum.Baseline.Mean-10 {
		t.Errorf("whole record as baseline: %+v %+v", self.Definitions, self.Baseline)
	}

	for _, bad := range []analysis.Span{{StartS: 10, EndS: 10}, {StartS: -1, EndS: 5}, {StartS: 80, EndS: 84}} {
		_, err := analysis.Analyze(dir, analysis.Options{Complete: true, BaselineWindow: &bad})
		if !errors.Is(err, analysis.ErrBadInput) {
			t.Errorf("window %+v: %v, want bad input", bad, err)
		}
	}
	_, err := analysis.Analyze(dir, analysis.Options{BaselineWindow: &analysis.Span{StartS: 0, EndS: 60}, BaselineDir: dir})
	if !errors.Is(err, analysis.ErrBadInput) {
		t.Errorf("window and baseline run together: %v", err)
	}
}

func TestProvenanceInSummary(t *testing.T) {
	dir := analysistest.Dir(t, analysistest.Spec{Seed: 2})
	info := provenance.Collect("feedfacecafebeef", time.Unix(1_800_000_000, 0), []string{"faultbench", "run", "s.yaml"})
	if err := provenance.Write(dir, info); err != nil {
		t.Fatal(err)
	}
	sum, js := analyzeJSON(t, dir, analysis.Options{Complete: true})
	if sum.Provenance == nil || sum.Provenance.RunID != "feedfacecafebeef" || sum.Provenance.StartedUTC != "2027-01-15T08:00:00Z" {
		t.Fatalf("provenance %+v", sum.Provenance)
	}
	for _, k := range []string{`"schema_version": 3`, `"run_id": "feedfacecafebeef"`, `"command_line": [`, `"phases": [`} {
		if !strings.Contains(js, k) {
			t.Errorf("summary.json lacks %s", k)
		}
	}
	os.WriteFile(filepath.Join(dir, provenance.File), []byte("{"), 0o644)
	if _, err := analysis.Analyze(dir, analysis.Options{Complete: true}); !errors.Is(err, analysis.ErrBadInput) || !strings.Contains(err.Error(), provenance.File) {
		t.Errorf("corrupt provenance.json: %v", err)
	}
}
