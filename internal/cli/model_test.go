package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runModel(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := Run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), ExitCode(err)
}

// The JSON keys of `model performability` are a contract.
func TestModelPerformabilityJSON(t *testing.T) {
	out, stderr, code := runModel(t, "model", "performability", "../../examples/models/press-table3.yaml", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"average_throughput", "average_availability", "unavailability", "performability", "faults"} {
		if _, ok := v[k]; !ok {
			t.Errorf("missing key %q", k)
		}
	}
	f := v["faults"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "weight", "unavailability"} {
		if _, ok := f[k]; !ok {
			t.Errorf("faults[0] missing key %q", k)
		}
	}
}

func TestModelCTMCJSON(t *testing.T) {
	out, stderr, code := runModel(t, "model", "ctmc", "../../examples/models/replicas.yaml", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var v struct {
		MTTA      float64 `json:"mean_time_to_absorption"`
		Transient []struct {
			T           float64  `json:"t"`
			Accumulated *float64 `json:"accumulated_reward"`
		} `json:"transient"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if v.MTTA != 158.5 || len(v.Transient) != 2 || v.Transient[0].Accumulated == nil {
		t.Errorf("got %s", out)
	}
}

// Bad input exits 2 and names file, line and key.
func TestModelBadInputExits2(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "m.yaml")
	os.WriteFile(bad, []byte("states: [a, b]\ninitial: a\ntransitions:\n  - {from: a, to: b, rate: 0}\n"), 0o644)
	_, stderr, code := runModel(t, "model", "ctmc", bad)
	if code != ExitBadInput || !strings.Contains(stderr, "m.yaml:4: transitions[0].rate") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	for _, args := range [][]string{
		{"model", "session-loss", "--wq", "2"},
		{"model", "sweep", "../../examples/models/press-table3.yaml", "--scale", "nosuch=1/day..1/month"},
		{"model", "sweep", "../../examples/models/press-table3.yaml", "--scale", "application=1/fortnight..1/month"},
		{"model", "kofn", "--n", "2", "--k", "3", "--mttf", "1h"},
	} {
		if _, stderr, code := runModel(t, args...); code != ExitBadInput {
			t.Errorf("%v: exit %d (%s)", args, code, stderr)
		}
	}
}

func TestModelFigures(t *testing.T) {
	dir := t.TempDir()
	_, stderr, code := runModel(t, "model", "crossover", "../../examples/models/press-table3.yaml",
		"../../examples/models/press-table3-via.yaml", "--scale", "application", "-o", filepath.Join(dir, "x.svg"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, f := range []string{"x.svg", "x.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() < 1000 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// Every `faultbench model` command in docs/models.md runs and succeeds.
func TestModelDocsCommandsRun(t *testing.T) {
	doc, err := os.ReadFile("../../docs/models.md")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	t.Chdir("../..")
	var cmds []string
	lines := strings.Split(string(doc), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(line, "faultbench model ") || strings.Contains(line, "|") || strings.Contains(line, "F.yaml") {
			continue
		}
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(lines[i])
		}
		cmds = append(cmds, strings.ReplaceAll(line, "/tmp/", tmp+"/"))
	}
	if len(cmds) < 10 {
		t.Fatalf("found only %d commands in docs/models.md", len(cmds))
	}
	for _, c := range cmds {
		if _, stderr, code := runModel(t, strings.Fields(c)[1:]...); code != 0 {
			t.Errorf("%s: exit %d: %s", c, code, stderr)
		}
	}
}
