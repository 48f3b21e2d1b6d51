package model

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeRun writes a synthetic run directory: scenario.yaml with the mode
// and page set, summary.json with a baseline and the faults' stages
// (stage letter → {duration, throughput}; throughput < 0 is null).
func writeRun(t *testing.T, dir, mode string, pages int, baseline float64, recovered bool, faults ...map[string][2]float64) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sc := "name: x\ncluster: {system: press, mode: " + mode + ", nodes: 4, pages: " + itoa(pages) + ", page_size: 26624}\nfaults:\n"
	var fs []map[string]any
	for _, f := range faults {
		stages := map[string]any{}
		for k, v := range f {
			if k == "type" {
				continue
			}
			var tp any = v[1]
			if v[1] < 0 {
				tp = nil
			}
			stages[k] = map[string]any{"duration_s": v[0], "throughput": tp, "measured": true}
		}
		fs = append(fs, map[string]any{"type": faultType(f), "inject_s": 60, "clear_s": 150, "recovered": recovered, "stages": stages})
		sc += "  - {type: " + faultType(f) + ", node: 2, at: 60s}\n"
	}
	sum := map[string]any{"run": map[string]any{"duration_s": 270}, "baseline": map[string]any{"mean": baseline}, "faults": fs}
	data, _ := json.Marshal(sum)
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), []byte(sc), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A fault's type rides in the map under the key "type" as {0, index into
// testTypes}.
var testTypes = []string{"app-crash", "link-down", "app-hang"}

func faultType(f map[string][2]float64) string { return testTypes[int(f["type"][1])] }

const testRates = `
ideal_unavailability: 1e-5
groups: {application: {mttf: 24h}}
faults:
  - {name: app-crash, group: application, share: 0.5, mttr: 3m}
  - name: link-down
    mttf: 4380h
    mttr: 3m
    supplied:
      E: {duration: 1h, when: unrecovered, reason: "operator time"}
      F: {duration: 30s, throughput: 50%, when: unrecovered, reason: "restart"}
`

func TestFromRunsMeasuredAndSupplied(t *testing.T) {
	tmp := t.TempDir()
	crash1 := writeRun(t, filepath.Join(tmp, "crash1"), "via5", 18000, 800, true,
		map[string][2]float64{"type": {0, 0}, "A": {2, 400}, "B": {1, 500}, "C": {60, 600}, "D": {10, 700}, "E": {0, -1}})
	crash2 := writeRun(t, filepath.Join(tmp, "crash2"), "via5", 18000, 800, true,
		map[string][2]float64{"type": {0, 0}, "A": {4, 200}, "C": {60, 600}})
	link := writeRun(t, filepath.Join(tmp, "link"), "via5", 18000, 800, false,
		map[string][2]float64{"type": {0, 1}, "A": {3, 0}, "C": {90, 600}})
	r, err := ParseRates("rates.yaml", []byte(testRates))
	if err != nil {
		t.Fatal(err)
	}
	m, err := FromRuns(r, []string{crash1, crash2, link})
	if err != nil {
		t.Fatal(err)
	}
	if m.NormalThroughput != 800 || m.Mode != "via5" {
		t.Fatalf("T_n %v mode %q, want the runs' baseline 800 and via5", m.NormalThroughput, m.Mode)
	}
	crash := m.Faults[0]
	// A: the mean duration over both runs, throughput weighted by time.
	if a := crash.Stages[0]; a.Source != SourceMeasured || a.Duration != 3 || math.Abs(a.Throughput-(2*400+4*200)/6.0) > 1e-9 || a.Runs != 2 {
		t.Fatalf("app-crash A = %+v", a)
	}
	// B was seen in one run of two: half its duration on average.
	if b := crash.Stages[1]; b.Duration != 0.5 || b.Throughput != 500 {
		t.Fatalf("app-crash B = %+v", b)
	}
	if c := crash.Stages[2]; !c.UntilRepair || c.Throughput != 600 {
		t.Fatalf("app-crash C = %+v, want until repair at 600", c)
	}
	if crash.Stages[4] != nil || crash.Stages[5] != nil {
		t.Fatalf("recovered runs got supplied stages: %+v %+v", crash.Stages[4], crash.Stages[5])
	}
	ld := m.Faults[1]
	if e := ld.Stages[4]; e == nil || e.Source != SourceSupplied || e.Duration != 3600 || e.Throughput != 600 || e.Reason != "operator time" {
		t.Fatalf("link-down E = %+v, want supplied 1 h at the last measured level 600", e)
	}
	if f := ld.Stages[5]; f == nil || f.Throughput != 400 {
		t.Fatalf("link-down F = %+v, want 50%% of T_n", f)
	}
	// The written file is a fault load performability reads, with the same
	// result as the in-memory one.
	fl, err := ParseFaultLoad("out.yaml", []byte(m.YAML()), nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, m.YAML())
	}
	got, want := Evaluate(fl), Evaluate(m.FaultLoad())
	if math.Abs(got.Unavailability-want.Unavailability) > 1e-5*want.Unavailability {
		t.Fatalf("written file evaluates to %v, in memory %v", got.Unavailability, want.Unavailability)
	}
	if !strings.Contains(m.YAML(), `source: supplied, reason: "operator time"`) {
		t.Fatalf("provenance missing:\n%s", m.YAML())
	}

	// Knee scaling: T_n supplied, measured throughputs scale with it.
	r.NormalThroughput, r.NormalReason = 1600, "knee"
	m, err = FromRuns(r, []string{crash1, crash2, link})
	if err != nil {
		t.Fatal(err)
	}
	if c := m.Faults[0].Stages[2]; c.Throughput != 1200 {
		t.Fatalf("scaled C = %v, want 1200", c.Throughput)
	}
}

func TestFromRunsBadInput(t *testing.T) {
	tmp := t.TempDir()
	crash := writeRun(t, filepath.Join(tmp, "crash"), "via5", 18000, 800, true, map[string][2]float64{"type": {0, 0}, "A": {2, 400}})
	link := writeRun(t, filepath.Join(tmp, "link"), "via5", 18000, 800, true, map[string][2]float64{"type": {0, 1}, "A": {2, 400}})
	none := writeRun(t, filepath.Join(tmp, "none"), "via5", 18000, 800, true)
	via3 := writeRun(t, filepath.Join(tmp, "via3"), "via3", 18000, 800, true, map[string][2]float64{"type": {0, 1}, "A": {2, 400}})
	pages := writeRun(t, filepath.Join(tmp, "pages"), "via5", 9000, 800, true, map[string][2]float64{"type": {0, 1}, "A": {2, 400}})
	unrec := writeRun(t, filepath.Join(tmp, "unrec"), "via5", 18000, 800, false, map[string][2]float64{"type": {0, 0}, "C": {2, 400}})
	r, err := ParseRates("rates.yaml", []byte(testRates))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		dirs []string
		want string
	}{
		{"no fault", []string{crash, none}, "has no fault"},
		{"mixed modes", []string{crash, via3}, `mode "via3"`},
		{"mixed page sets", []string{crash, pages}, "9000 pages"},
		{"missing type", []string{crash}, "no run measures link-down"},
		{"never recovered", []string{unrec, link}, "never recovered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromRuns(r, tc.dirs)
			if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want bad input containing %q", err, tc.want)
			}
		})
	}
	if _, err := ParseRates("r.yaml", []byte("faults:\n  - {name: x, mttf: 1h, supplied: {E: {duration: 1h}}}\n")); err == nil || !strings.Contains(err.Error(), "reason") {
		t.Fatalf("a supplied stage without a reason: %v", err)
	}
}

// TestReadRunFoldsRepairSteps: perf's node-freeze run is repaired in two
// steps, a reboot and then a scheduled restart-all. The analysis ends the
// freeze's span at the restart-all (unrecovered, stage G cut there); the
// restart-all's own failure (2.5 s, its stages A and B) is the rest of G.
func TestReadRunFoldsRepairSteps(t *testing.T) {
	dir := t.TempDir()
	sum := `{"run": {"duration_s": 30}, "baseline": {"mean": 800}, "faults": [
	  {"type": "node-freeze", "inject_s": 6, "clear_s": 18, "failure_end_s": 19, "recovered": false,
	   "stages": {"A": {"duration_s": 9, "throughput": 5}, "F": {"duration_s": 0.2, "throughput": 0}, "G": {"duration_s": 3.8, "throughput": 50}}},
	  {"type": "restart-all", "inject_s": 19, "clear_s": null, "failure_end_s": 21.5, "recovered": true,
	   "stages": {"A": {"duration_s": 0.5, "throughput": 400}, "B": {"duration_s": 1.5, "throughput": 200}, "C": {"duration_s": 9, "throughput": 780}}}]}`
	os.WriteFile(filepath.Join(dir, "summary.json"), []byte(sum), 0o644)
	os.WriteFile(filepath.Join(dir, "scenario.yaml"), []byte("cluster: {system: press, mode: perf}\nfaults:\n  - {type: node-freeze}\n  - {type: restart-all}\n"), 0o644)
	r, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	g := r.Stages[6]
	// G: 3.8 s at 50, then the step's 0.5 s at 400, 1.5 s at 200, 0.5 s of C at 780.
	wantD, wantW := 3.8+2.5, 3.8*50+0.5*400+1.5*200+0.5*780
	if !r.Recovered || r.FaultCount != 1 || g == nil || math.Abs(g.Duration-wantD) > 1e-9 || math.Abs(g.Throughput-wantW/wantD) > 1e-9 {
		t.Errorf("recovered %v, %d faults, G %+v; want recovered, 1 fault, G %g s at %g", r.Recovered, r.FaultCount, g, wantD, wantW/wantD)
	}
}

// TestFromRunsSelfRepair: with repair: self the runs' operator reset
// (stages F, G) is left out; by default it is kept.
func TestFromRunsSelfRepair(t *testing.T) {
	run := writeRun(t, filepath.Join(t.TempDir(), "hang"), "ha", 18000, 800, true,
		map[string][2]float64{"type": {0, 2}, "A": {3, 0}, "D": {1, 400}, "F": {3, 0}, "G": {4, 500}})
	for rv, want := range map[string]bool{"self": false, "operator": true} {
		r, err := ParseRates("rates.yaml", []byte("faults:\n  - {name: app-hang, mttf: 620s, mttr: 2s, repair: "+rv+"}\n"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := FromRuns(r, []string{run})
		if err != nil {
			t.Fatal(err)
		}
		st := m.Faults[0].Stages
		if (st[5] != nil) != want || (st[6] != nil) != want || st[0] == nil || st[3] == nil {
			t.Errorf("repair: %s: F %v G %v (A %v, D %v), want F and G present = %v", rv, st[5], st[6], st[0], st[3], want)
		}
	}
	if _, err := ParseRates("rates.yaml", []byte("faults:\n  - {name: app-hang, mttf: 620s, repair: never}\n")); err == nil || !strings.Contains(err.Error(), "repair") {
		t.Errorf("repair: never: %v, want an error naming the key", err)
	}
}

// TestReadRunFoldsUnplannedExits: a via3 bad parameter fails both ends
// fast; the two exits are unplanned faults whose spans follow the bad
// parameter's. The run is one fault, its stages the three spans' sum.
func TestReadRunFoldsUnplannedExits(t *testing.T) {
	dir := t.TempDir()
	sum := `{"run": {"duration_s": 30}, "baseline": {"mean": 800}, "faults": [
	  {"type": "bad-param-null", "inject_s": 6.0, "clear_s": 15.4, "recovered": true,
	   "stages": {"A": {"duration_s": 0.01, "throughput": 700}, "B": {"duration_s": 0.09, "throughput": 450}}},
	  {"type": "unplanned", "inject_s": 6.1, "clear_s": 15.4, "recovered": true, "stages": {"A": {"duration_s": 0, "throughput": null}}},
	  {"type": "unplanned", "inject_s": 6.1, "clear_s": 15.4, "failure_end_s": 16, "recovered": false,
	   "stages": {"A": {"duration_s": 8.9, "throughput": 390}, "F": {"duration_s": 0.2, "throughput": 200}, "G": {"duration_s": 0.8, "throughput": 120}}}]}`
	os.WriteFile(filepath.Join(dir, "summary.json"), []byte(sum), 0o644)
	os.WriteFile(filepath.Join(dir, "scenario.yaml"), []byte("cluster: {system: press, mode: via3}\nfaults:\n  - {type: bad-param-null}\n"), 0o644)
	r, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := r.Stages[0]
	if r.FaultCount != 1 || r.Type != "bad-param-null" || r.Recovered || a == nil || math.Abs(a.Duration-8.91) > 1e-9 ||
		math.Abs(a.Throughput-(0.01*700+8.9*390)/8.91) > 1e-9 || r.Stages[5] == nil || r.Stages[6] == nil {
		t.Errorf("%d faults, type %s, recovered %v, A %+v, F %v, G %v; want one bad-param-null, not recovered, A 8.91 s", r.FaultCount, r.Type, r.Recovered, a, r.Stages[5], r.Stages[6])
	}
}

// TestFromRunsNotesAFaultLongerThanTheRepair: the synthetic runs hold their
// fault 90 s (inject 60 s, clear 150 s). A fault load that repairs it after
// 90 s gets no note; one that repairs it after 20 s is told that the stages
// after the repair were measured after a fault 4.5 times as long, on the
// fault and in the YAML.
func TestFromRunsNotesAFaultLongerThanTheRepair(t *testing.T) {
	run := writeRun(t, filepath.Join(t.TempDir(), "hang"), "ha", 18000, 800, true,
		map[string][2]float64{"type": {0, 2}, "A": {3, 0}, "D": {40, 600}})
	for mttr, want := range map[string]string{"90s": "", "100s": "", "20s": "held the fault 1m30s, the fault load repairs it after 20s"} {
		r, err := ParseRates("rates.yaml", []byte("faults:\n  - {name: app-hang, mttf: 620s, mttr: "+mttr+"}\n"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := FromRuns(r, []string{run})
		if err != nil {
			t.Fatal(err)
		}
		note := m.Faults[0].Note
		if (want == "") != (note == "") || !strings.Contains(note, want) || want != "" && !strings.Contains(note, "4.5 times") {
			t.Errorf("mttr %s: note %q, want one containing %q", mttr, note, want)
		}
		if y := m.YAML(); (want != "") != strings.Contains(y, "  # note: "+note) {
			t.Errorf("mttr %s: the YAML does not carry the note:\n%s", mttr, y)
		}
	}
}
