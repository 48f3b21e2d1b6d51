package cli

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/record"
)

// A disk fault on a bay the array does not have, a disk fault on a system
// without disks, a bad maintenance param and a token of the scenario's own
// are bad input, each named with its line.
func TestRaidValidation(t *testing.T) {
	p := writeScenario(t, `cluster:
  system: raid
  nodes: 1
  options:
    control_token: "x"
    spares: "1"
workload: {rate: 10, trace: "zipf:10:1.0"}
phases: [{name: warmup, duration: 10s}]
faults:
  - {type: disk-read-uncorrectable, node: 1, disk: 9, at: 1s, mode: sticky}
  - {type: replace-disk, node: 1, disk: 5, at: 2s, params: {reinsert: perhaps}}
  - {type: start-reconstruction, node: 1, disk: 0, at: 3s}
`)
	_, stderr, code := run(t, "validate", p)
	if code != ExitBadInput {
		t.Fatalf("exit %d, want %d; stderr: %s", code, ExitBadInput, stderr)
	}
	for _, want := range []string{
		`s.yaml:5: cluster.options.control_token: option control_token is set by faultbench`,
		`s.yaml:10: faults[0].disk: disk-read-uncorrectable: disk 9 does not exist: the array has bays 1 to 5`,
		`s.yaml:11: faults[1].params.reinsert: replace-disk: "perhaps": want true or false`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "faults[2]") {
		t.Errorf("start-reconstruction onto disk 0 (any spare) refused:\n%s", stderr)
	}
	p = writeScenario(t, `cluster: {system: press, mode: ha, nodes: 2}
workload: {rate: 10, trace: "zipf:10:1.0"}
phases: [{name: warmup, duration: 10s}]
faults:
  - {type: disk-hang-read, node: 1, disk: 1, at: 1s, mode: sticky}
`)
	_, stderr, code = run(t, "validate", p)
	if code != ExitBadInput || !strings.Contains(stderr, "s.yaml:5: faults[0].type: fault disk-hang-read cannot be injected by backend local into system press") {
		t.Errorf("exit %d, stderr %s; want the disk fault refused for press", code, stderr)
	}
}

// raidTestPort keeps the end-to-end run off the default ports.
const raidTestPort = "28290"

// Brown and Patterson's (2000) microbenchmark end to end: a sticky uncorrectable read error on
// disk 2 of a paranoid array, which takes the disk out, runs degraded and
// rebuilds onto the spare at a slow rate. The run's timeline has the
// injection and its clear and the array's own events; redundancy is a
// windows.csv column that drops to 0 and comes back; no page is ever wrong.
func TestRaidStickyReadEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run; skipped with -short")
	}
	p := writeScenario(t, `name: raid-e2e
seed: 1
cluster:
  system: raid
  nodes: 1
  port: `+raidTestPort+`
  pages: 400
  page_size: 8192
  options:
    transient_policy: paranoid
    reconstruction: 1MB/s
workload: {rate: 40, clients: 2, trace: "zipf:400:1.0", window: 1s}
phases: [{name: warmup, duration: 6s}, {name: fault, duration: 14s}]
faults:
  - {type: disk-read-uncorrectable, node: 1, disk: 2, at: 6s, mode: sticky}
`)
	dir := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := run(t, "run", p, "--quiet", "-o", dir)
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	raw, err := os.ReadFile(filepath.Join(dir, record.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var sum analysis.Summary
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	if o := sum.Overall.Outcomes; o["data_error"] != 0 || o["ok"] == 0 {
		t.Errorf("outcomes %+v: want pages served and none wrong", o)
	}
	events, err := os.ReadFile(filepath.Join(dir, record.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"kind":"fault.inject","node":1,"fault":"disk-read-uncorrectable"`,
		`"kind":"fault.clear","node":1,"fault":"disk-read-uncorrectable"`,
		`"kind":"system.raid.disk.failed","node":1,"detail":"disk 2:`,
		`"kind":"system.raid.reconstruction.started","node":1`,
	} {
		if !strings.Contains(string(events), want) {
			t.Errorf("events lack %s:\n%s", want, events)
		}
	}
	if tok := controlToken(t, dir); tok != "" {
		t.Errorf("the control token appears in the results: %s", tok)
	}
	redundancy := windowColumn(t, filepath.Join(dir, record.WindowsFile), "redundancy")
	if !slices.Contains(redundancy, 1) || !slices.Contains(redundancy, 0) {
		t.Errorf("redundancy column %v: want 1 before the fault and 0 after it", redundancy)
	}
	if redundancy[0] != 1 {
		t.Errorf("redundancy %v before the fault, want 1", redundancy[0])
	}
}

// windowColumn returns a windows.csv column's values (empty cells left out).
func windowColumn(t *testing.T, path, name string) []float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("%s: %v (%d rows)", path, err, len(rows))
	}
	col := slices.Index(rows[0], name)
	if col < 0 {
		t.Fatalf("%s has no %s column: %v", path, name, rows[0])
	}
	var out []float64
	for _, r := range rows[1:] {
		if r[col] == "" {
			continue
		}
		v, err := strconv.ParseFloat(r[col], 64)
		if err != nil {
			t.Fatalf("%s: %s %q: %v", path, name, r[col], err)
		}
		out = append(out, v)
	}
	return out
}
