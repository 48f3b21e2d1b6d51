package report

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/provenance"
)

// schema1 is a results directory the schema-1 faultbench wrote (see
// internal/analysis/testdata/README.md); reports only read it.
var schema1 = filepath.Join("..", "analysis", "testdata", "schema1-quickstart")

func copyResults(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func TestReportOfSchema1(t *testing.T) {
	out := filepath.Join(t.TempDir(), "old.html")
	if err := Write([]string{schema1}, out); err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(out)
	for _, want := range []string{"<td>summary 1, record 1</td>", "warmup (0–1.5 s)", "recovery (4.2–5.5 s)"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report of a schema-1 run lacks %q", want)
		}
	}
}

func TestReportRefusesMixedSchemas(t *testing.T) {
	root := t.TempDir()
	current := filepath.Join(root, "current")
	small.write(t, current)
	out := filepath.Join(root, "cmp.html")

	err := WriteWith([]string{schema1, current}, out, Options{})
	if !errors.Is(err, ErrMixedSchemas) || !strings.Contains(err.Error(), "faultbench analyze") || !strings.Contains(err.Error(), "--allow-mixed-schemas") {
		t.Fatalf("mixed schemas: %v, want ErrMixedSchemas naming both remedies", err)
	}
	if _, statErr := os.Stat(out); !errors.Is(statErr, os.ErrNotExist) {
		t.Fatalf("a refused comparison wrote %s", out)
	}

	var warn bytes.Buffer
	if err := WriteWith([]string{schema1, current}, out, Options{AllowMixedSchemas: true, Warn: &warn}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fmt.Sprintf("summary schema versions differ: 1 in quickstart; %d in small-crash", provenance.SchemaVersion), "windows (band", "100 ms in quickstart"} {
		if !strings.Contains(warn.String(), want) {
			t.Errorf("warnings lack %q:\n%s", want, warn.String())
		}
	}
	html, _ := os.ReadFile(out)
	if !bytes.Contains(html, []byte("Not like for like: summary schema versions differ")) {
		t.Error("the report does not show the mixed schemas")
	}

	// Re-analysed with today's definitions, the old run is comparable: what
	// remains are warnings about definitions that differ.
	upgraded := copyResults(t, schema1)
	sum, err := analysis.Analyze(upgraded, analysis.Options{Complete: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := analysis.Write(upgraded, sum); err != nil {
		t.Fatal(err)
	}
	warn.Reset()
	if err := WriteWith([]string{upgraded, current}, out, Options{Warn: &warn}); err != nil {
		t.Fatalf("after re-analysis: %v", err)
	}
	if strings.Contains(warn.String(), "summary schema") || !strings.Contains(warn.String(), "windows (band") {
		t.Errorf("after re-analysis, warnings:\n%s", warn.String())
	}
}

func TestReportSameDefinitionsNoWarning(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	small.write(t, a)
	other := small
	other.Seed = 3
	other.write(t, b)
	var warn bytes.Buffer
	if err := WriteWith([]string{a, b}, filepath.Join(root, "r.html"), Options{Warn: &warn}); err != nil {
		t.Fatal(err)
	}
	if warn.Len() != 0 {
		t.Errorf("like-for-like runs warned:\n%s", warn.String())
	}
}
