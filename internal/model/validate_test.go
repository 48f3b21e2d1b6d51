package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The known chain: two fault types, each an alternating renewal process —
// an exponential gap (mean 400 s), then 10 s down (throughput 0) and 20 s
// degraded (half of T_n) until the repair at 30 s. Both run at once, so
// they sometimes overlap; during an overlap the worse stage holds.
const validateModel = `
normal_throughput: 1000
faults:
  - name: app-crash
    mttf: 430s
    mttr: 30s
    stages:
      A: {duration: 10s, throughput: 0}
      C: {duration: until_repair, throughput: 500}
  - name: link-down
    mttf: 430s
    mttr: 30s
    stages:
      A: {duration: 10s, throughput: 0}
      C: {duration: until_repair, throughput: 500}
`

// synthRun writes a run of the chain: windows.csv (1 s windows, 1000
// offered each), summary.json (the fault occurrences, a warm-up phase) and
// scenario.yaml (each fault every poisson(400s), lasting 30 s).
func synthRun(t *testing.T, seconds int, seed int64) string {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(seed))
	const warm = 100
	level := make([]float64, seconds) // served fraction per second
	for i := range level {
		level[i] = 1
	}
	type occ struct {
		Type    string  `json:"type"`
		InjectS float64 `json:"inject_s"`
		ClearS  float64 `json:"clear_s"`
		FailEnd float64 `json:"failure_end_s"`
	}
	var faults []occ
	for _, typ := range []string{"app-crash", "link-down"} {
		t0 := warm + int(math.Round(rng.ExpFloat64()*400))
		for t0+30 <= seconds {
			for s := t0; s < t0+30; s++ {
				f := 0.5
				if s < t0+10 {
					f = 0
				}
				level[s] = math.Min(level[s], f)
			}
			faults = append(faults, occ{typ, float64(t0), float64(t0 + 30), float64(t0 + 30)})
			t0 += 30 + int(math.Round(rng.ExpFloat64()*400))
		}
	}
	var csv strings.Builder
	csv.WriteString("t_start_s,offered,ok,throughput_ok_per_s\n")
	for s, l := range level {
		fmt.Fprintf(&csv, "%d,1000,%g,%g\n", s, 1000*l, 1000*l)
	}
	sum := map[string]any{
		"run":         map[string]any{"window_s": 1},
		"baseline":    map[string]any{"mean": 1000},
		"phases":      map[string]any{"warmup": map[string]any{"start_s": 0, "end_s": warm}, "faults": map[string]any{"start_s": warm, "end_s": seconds}},
		"phase_order": []string{"warmup", "faults"},
		"faults":      faults,
	}
	data, _ := json.Marshal(sum)
	sc := "name: synth\nfaults:\n  - {type: app-crash, node: any, at: 100s, duration: 30s, every: poisson(400s)}\n  - {type: link-down, node: 2, at: 100s, duration: 30s, every: poisson(400s)}\n"
	for name, text := range map[string]string{"windows.csv": csv.String(), "summary.json": string(data), "scenario.yaml": sc} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestValidateAgainstAKnownChain(t *testing.T) {
	fl, err := ParseFaultLoad("model.yaml", []byte(validateModel), nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := Validate(fl, synthRun(t, 400000, 7))
	if err != nil {
		t.Fatal(err)
	}
	// Each fault: 30 s of 430 s, losing (10·1 + 20·0.5)/30 of the requests.
	want := 2 * (20.0 / 430)
	if math.Abs(v.Predicted.Unavailability-want) > 1e-9 {
		t.Fatalf("predicted unavailability %v, want %v", v.Predicted.Unavailability, want)
	}
	if v.Faults < 1500 || v.Overlap <= 0 || v.Overlap > 0.05 {
		t.Fatalf("%d faults, overlap %v: want ~1860 faults and a small overlap", v.Faults, v.Overlap)
	}
	if math.Abs(v.UnavailabilityError) > 0.1 || math.Abs(v.ThroughputError) > 0.01 {
		t.Fatalf("relative errors: unavailability %v, throughput %v", v.UnavailabilityError, v.ThroughputError)
	}
	if !(v.CILow <= v.Predicted.Unavailability && v.Predicted.Unavailability <= v.CIHigh) {
		t.Fatalf("prediction %v outside the measured interval [%v, %v]", v.Predicted.Unavailability, v.CILow, v.CIHigh)
	}
	// Overlaps lose less than the sum of their parts (the worse stage
	// holds): without them the measurement is higher, and as close.
	if v.NoOverlap.Unavailability <= v.Measured.Unavailability || math.Abs(v.UnavailabilityErrorNoOverlap) > 0.1 {
		t.Fatalf("without overlaps %v (error %v), with %v", v.NoOverlap.Unavailability, v.UnavailabilityErrorNoOverlap, v.Measured.Unavailability)
	}
	for _, f := range v.ByFault {
		if math.Abs(f.Measured-f.Predicted) > 0.15*f.Predicted || f.Occurrences < 700 {
			t.Fatalf("%s: measured %v predicted %v over %d occurrences", f.Name, f.Measured, f.Predicted, f.Occurrences)
		}
	}
	if v.Outside != 0 {
		t.Fatalf("loss outside any fault: %v", v.Outside)
	}
	var b strings.Builder
	if err := v.WriteTable(&b); err != nil || !strings.Contains(b.String(), "without overlapping stretches") {
		t.Fatalf("table: %v\n%s", err, b.String())
	}
}

func TestValidateRefusesADifferentFaultLoad(t *testing.T) {
	run := synthRun(t, 2000, 1)
	for _, tc := range []struct{ name, model, want string }{
		{"other mttf", strings.Replace(validateModel, "mttf: 430s", "mttf: 2h", 1), "give the model mttf: 7m10s"},
		{"missing in run", validateModel + "  - {name: node-crash, mttf: 1h, mttr: 3m, stages: {A: {duration: 1s, throughput: 0}}}\n", "never injects"},
		{"missing in model", strings.SplitN(validateModel, "  - name: link-down", 2)[0], "does not have"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl, err := ParseFaultLoad("model.yaml", []byte(tc.model), nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Validate(fl, run)
			if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want bad input containing %q", err, tc.want)
			}
		})
	}
}

// TestValidateFoldsUnplannedExits: a node failing fast on a fault is the
// fault's consequence (an "unplanned" fault in the summary, just after the
// injection): it neither counts as a fault nor makes an overlap.
func TestValidateFoldsUnplannedExits(t *testing.T) {
	fl, err := ParseFaultLoad("model.yaml", []byte(validateModel), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := synthRun(t, 20000, 3)
	before, err := Validate(fl, dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "summary.json")
	data, _ := os.ReadFile(path)
	var sum map[string]any
	json.Unmarshal(data, &sum)
	var faults []any
	for _, f := range sum["faults"].([]any) {
		faults = append(faults, f)
		if m := f.(map[string]any); m["type"] == "app-crash" {
			faults = append(faults, map[string]any{"type": "unplanned", "inject_s": m["inject_s"].(float64) + 0.1, "clear_s": m["clear_s"], "failure_end_s": m["failure_end_s"]})
		}
	}
	sum["faults"] = faults
	data, _ = json.Marshal(sum)
	os.WriteFile(path, data, 0o644)
	after, err := Validate(fl, dir)
	if err != nil {
		t.Fatal(err)
	}
	if after.Faults != before.Faults || after.OverlapS != before.OverlapS || after.Measured != before.Measured {
		t.Errorf("with the exits: %d faults, overlap %v s; without: %d, %v s", after.Faults, after.OverlapS, before.Faults, before.OverlapS)
	}
}

// Repetitions of a short run pool into one longer observation: occurrences
// and time add up, the measurement is the requests-weighted one, and the
// repetitions' spread gives an interval that holds the prediction.
func TestValidateRunsPoolsRepetitions(t *testing.T) {
	fl, err := ParseFaultLoad("model.yaml", []byte(validateModel), nil)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	var singles []*Validation
	for seed := int64(1); seed <= 5; seed++ {
		d := synthRun(t, 40000, seed)
		v, err := Validate(fl, d)
		if err != nil {
			t.Fatal(err)
		}
		dirs, singles = append(dirs, d), append(singles, v)
	}
	p, err := ValidateRuns(fl, dirs...)
	if err != nil {
		t.Fatal(err)
	}
	var faults int
	var lost, offered, observed float64
	for _, v := range singles {
		faults += v.Faults
		lost += v.Measured.Unavailability * v.Offered
		offered += v.Offered
		observed += v.ObservedS
	}
	if p.Faults != faults || math.Abs(p.ObservedS-observed) > 1e-6 || len(p.Runs) != 5 || len(p.PerRun) != 5 {
		t.Fatalf("pooled %d faults over %v s from %d runs, want %d over %v from 5", p.Faults, p.ObservedS, len(p.Runs), faults, observed)
	}
	if math.Abs(p.Measured.Unavailability-lost/offered) > 1e-12 {
		t.Fatalf("pooled unavailability %v, want %v", p.Measured.Unavailability, lost/offered)
	}
	if math.Abs(p.UnavailabilityError) > 0.1 {
		t.Fatalf("pooled error %v", p.UnavailabilityError)
	}
	if !(p.RepCILow < p.Predicted.Unavailability && p.Predicted.Unavailability < p.RepCIHigh) {
		t.Fatalf("prediction %v outside the repetitions' interval [%v, %v]", p.Predicted.Unavailability, p.RepCILow, p.RepCIHigh)
	}
	if h, h1 := p.CIHigh-p.CILow, singles[0].CIHigh-singles[0].CILow; h >= h1 {
		t.Fatalf("pooling did not narrow the fault-count interval: %v, one run %v", h, h1)
	}
	var b strings.Builder
	if err := p.WriteTable(&b); err != nil || !strings.Contains(b.String(), "5 runs pooled") || !strings.Contains(b.String(), "(repetitions)") {
		t.Fatalf("table: %v\n%s", err, b.String())
	}

	// Validations against different models do not pool.
	other := *singles[1]
	other.Predicted.Unavailability *= 2
	if _, err := Pool([]*Validation{singles[0], &other}); err == nil || !strings.Contains(err.Error(), "different models") {
		t.Fatalf("pooled across models: %v", err)
	}
}
