package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fromruns and validate exit 2, naming the problem, on bad input.
func TestModelFromRunsAndValidateBadInput(t *testing.T) {
	tmp := t.TempDir()
	run := filepath.Join(tmp, "baseline")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(run, "summary.json"), []byte(`{"baseline":{"mean":800},"faults":[]}`), 0o644)
	os.WriteFile(filepath.Join(run, "scenario.yaml"), []byte("cluster: {system: press, mode: via5}\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"model", "fromruns", run}, "--faultload is required"},
		{[]string{"model", "fromruns", run, "--faultload", "../../examples/models/nagaraja-faultload.yaml"}, "has no fault"},
		{[]string{"model", "fromruns", run, "--faultload", "../../examples/models/nagaraja-faultload.yaml", "--time-scale", "0"}, "--time-scale"},
		{[]string{"model", "validate", "../../examples/models/press-table3.yaml", run}, "never injects"},
	} {
		_, stderr, code := runModel(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
