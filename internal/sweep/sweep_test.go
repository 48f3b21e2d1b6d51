package sweep

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
)

const baseScenarioYAML = `
name: base
seed: 7
cluster: {system: static, nodes: 2}
workload: {rate: 100, clients: 1, window: 1s}
phases: [{name: warmup, duration: 4s}, {name: fault, duration: 4s}]
`

func writeSweep(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "base.yaml"), []byte(baseScenarioYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeExecute stands in for runner.Run: it leaves a results directory
// whose requests.csv holds latencies drawn from the run's seed and its
// clients (so configurations differ), with a few spikes, then analyses it
// as the runner would.
func fakeExecute(ctx context.Context, sc *scenario.Scenario, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	body, err := sc.Marshal()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, record.ScenarioFile), body, 0o644); err != nil {
		return err
	}
	if sc.Workload.Rate == 13 {
		return errors.New("the cluster did not start: port in use")
	}
	var buf bytes.Buffer
	w, err := record.NewCSVWriter(&buf)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(uint64(sc.Seed), uint64(sc.Workload.Clients)))
	base := 0.001 * float64(sc.Workload.Clients)
	for i := range 800 {
		lat := base * (1 + 0.1*rng.Float64())
		if rng.IntN(100) == 0 {
			lat *= 50
		}
		r := record.Request{StartS: float64(i) * 0.01, LatencyS: lat, Outcome: record.OK, Node: 1, Client: 1, Target: "/p/1", Status: 200}
		if err := w.Write(r); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "requests.csv"), buf.Bytes(), 0o644); err != nil {
		return err
	}
	sum, err := analysis.Analyze(dir, analysis.Options{Complete: true, Scenario: sc})
	if err != nil {
		return err
	}
	return analysis.Write(dir, sum)
}

const gridSweep = `name: g
scenario: base.yaml
repetitions: 2
grid:
  workload.clients: [1, 2, 4]
  workload.rate: [100, 13]
exclude:
  - {workload.clients: 4, workload.rate: 13}
`

func TestGridExpansionAndExclusion(t *testing.T) {
	s, err := Load(writeSweep(t, gridSweep), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range s.Configs {
		got = append(got, ParamString(c.Params))
	}
	want := []string{
		"workload.clients=1 workload.rate=100", "workload.clients=1 workload.rate=13",
		"workload.clients=2 workload.rate=100", "workload.clients=2 workload.rate=13",
		"workload.clients=4 workload.rate=100",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("configurations\n got %q\nwant %q", got, want)
	}
	runs, err := s.Runs()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 10 || runs[3].ID != "cfg-0002-r2" || runs[3].Scenario.Seed != 8 || runs[3].Scenario.Workload.Rate != 13 ||
		runs[3].Scenario.Name != "g-cfg-0002-r2" || runs[3].Scenario.Sweep.Config != 2 {
		t.Fatalf("run 4 = %+v %+v", runs[3].ID, runs[3].Scenario)
	}
}

func TestLoadErrorsNameTheLine(t *testing.T) {
	cases := []struct{ body, want string }{
		{"scenario: base.yaml\ngrid:\n  workload.nope: [1]\n", "s.yaml:3: grid key workload.nope: \"nope\" is not a key of workload"},
		{"scenario: base.yaml\ngrid:\n  workload.clients:\n    - 1\n    - many\n", "s.yaml:5: grid key workload.clients, value many"},
		{"scenario: base.yaml\ngrid: {}\n", "the grid is empty"},
		{"scenario: base.yaml\ngrid:\n  workload.clients: []\n", "s.yaml:3: grid key workload.clients: want a non-empty list"},
		{"scenario: base.yaml\ngrid:\n  phases.5.duration: [1s]\n", "s.yaml:3: grid key phases.5.duration"},
		{"scenario: base.yaml\nmax_runs: 3\ngrid:\n  workload.clients: [1, 2, 3, 4]\n", "above max_runs 3: pass --yes"},
		{"scenario: base.yaml\ngrid:\n  workload.clients: [1]\nexclude:\n  - {workload.rate: 5}\n", "s.yaml:5: exclude: workload.rate is not a grid key"},
		{"scenario: base.yaml\ngrid:\n  sweep.name: [x]\n", "sweep is set by the sweep itself"},
	}
	for _, c := range cases {
		_, err := Load(writeSweep(t, c.body), LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant …%s…", c.body, err, c.want)
		}
	}
	// --yes lifts the limit.
	if _, err := Load(writeSweep(t, cases[5].body), LoadOptions{Yes: true}); err != nil {
		t.Errorf("with yes: %v", err)
	}
}

func TestPlanRunCollectMatchesSweep(t *testing.T) {
	path := writeSweep(t, gridSweep)
	s, err := Load(path, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	tab, err := Execute(context.Background(), s, Options{OutDir: out, Execute: fakeExecute})
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Rows) != 10 {
		t.Fatalf("%d rows, want 10", len(tab.Rows))
	}

	planDir, runsDir, collected := t.TempDir(), t.TempDir(), t.TempDir()
	files, err := Plan(s, planDir)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, f := range slices.Backward(files) { // any order, anywhere
		sc, err := scenario.Load(f)
		if err != nil {
			t.Fatalf("planned scenario %s: %v", f, err)
		}
		d := filepath.Join(runsDir, strings.TrimSuffix(filepath.Base(f), ".yaml"))
		if err := fakeExecute(context.Background(), sc, d); err != nil {
			if err := MarkFailed(d, sc, err); err != nil {
				t.Fatal(err)
			}
		}
		dirs = append(dirs, d)
	}
	if _, err := Collect(dirs, collected); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(filepath.Join(out, CSVFile))
	b, _ := os.ReadFile(filepath.Join(collected, CSVFile))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("sweep.csv differs:\n--- sweep\n%s\n--- plan/run/collect\n%s", a, b)
	}
	checkCSV(t, a)
}

func checkCSV(t *testing.T, data []byte) {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := recs[0]
	wantHead := []string{"sweep", "config", "repetition", "seed", "run", "status", "reason", "workload.clients", "workload.rate"}
	if !slices.Equal(head[:len(wantHead)], wantHead) {
		t.Fatalf("header %q", head)
	}
	for _, m := range []string{"attempts", "outcomes.ok", "latency_p99_s", "p_exceed.2", "outliers_3sigma_fraction"} {
		if !slices.Contains(head, m) {
			t.Errorf("no column %s in %q", m, head)
		}
	}
	col := func(name string) int { return slices.Index(head, name) }
	// Row 3 is configuration 2 (rate 13), which fails in fakeExecute.
	if r := recs[3]; r[col("status")] != StatusFailed || !strings.Contains(r[col("reason")], "port in use") || r[col("attempts")] != "" {
		t.Errorf("failed run row %q", r)
	}
	if r := recs[1]; r[col("status")] != StatusComplete || r[col("attempts")] != "800" || r[col("workload.clients")] != "1" || r[col("seed")] != "7" {
		t.Errorf("complete run row %q", r)
	}
}

func TestResumeAfterKill(t *testing.T) {
	s, err := Load(writeSweep(t, gridSweep), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var first []string
	// The "kill" comes in the middle of the fourth run: it leaves a
	// directory with a scenario and no summary.
	_, err = Execute(ctx, s, Options{OutDir: out, Execute: func(ctx context.Context, sc *scenario.Scenario, dir string) error {
		first = append(first, filepath.Base(dir))
		if len(first) == 4 {
			_ = os.MkdirAll(dir, 0o755)
			_ = os.WriteFile(filepath.Join(dir, record.ScenarioFile), []byte("name: half\n"), 0o644)
			cancel()
			return ctx.Err()
		}
		return fakeExecute(ctx, sc, dir)
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted sweep: %v", err)
	}
	if _, err := Execute(context.Background(), s, Options{OutDir: out, Execute: fakeExecute}); !errors.Is(err, ErrExists) {
		t.Fatalf("second sweep without --resume: %v, want ErrExists", err)
	}
	var second []string
	tab, err := Execute(context.Background(), s, Options{OutDir: out, Resume: true, Execute: func(ctx context.Context, sc *scenario.Scenario, dir string) error {
		second = append(second, filepath.Base(dir))
		return fakeExecute(ctx, sc, dir)
	}})
	if err != nil {
		t.Fatal(err)
	}
	// Runs 1-2 and 3 were complete or failed: the failed one (cfg-0002-r1)
	// is redone, as is the killed one and everything after.
	want := []string{"cfg-0002-r1", "cfg-0002-r2", "cfg-0003-r1", "cfg-0003-r2", "cfg-0004-r1", "cfg-0004-r2", "cfg-0005-r1", "cfg-0005-r2"}
	if !slices.Equal(second, want) {
		t.Fatalf("resumed runs %q, want %q", second, want)
	}
	done := 0
	for _, r := range tab.Rows {
		if r.Status == StatusComplete {
			done++
		}
	}
	if done != 6 {
		t.Fatalf("%d complete runs, want 6 (4 fail on purpose)", done)
	}
}

func TestParquetMatchesCSV(t *testing.T) {
	s, err := Load(writeSweep(t, gridSweep), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	tab, err := Execute(context.Background(), s, Options{OutDir: out, Execute: fakeExecute})
	if err != nil {
		t.Fatal(err)
	}
	rows, cols, err := readParquetTable(filepath.Join(out, ParquetFile))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cols, tab.Columns()) {
		t.Fatalf("parquet columns %q\nwant %q", cols, tab.Columns())
	}
	for i := range tab.Rows {
		rec := tab.record(&tab.Rows[i])
		for j := range rec {
			if rec[j] == "" {
				continue
			}
			if f, err := strconv.ParseFloat(rec[j], 64); err == nil {
				if rows[i][j] != f {
					t.Fatalf("row %d column %s: parquet %v, csv %s", i, cols[j], rows[i][j], rec[j])
				}
			} else if rows[i][j] != rec[j] {
				t.Fatalf("row %d column %s: parquet %v, csv %s", i, cols[j], rows[i][j], rec[j])
			}
		}
	}
}

// readParquetTable reads sweep.parquet back as it is on disk: the
// columns in file order and each row's values (nil, string or float64).
func readParquetTable(path string) ([][]any, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	pf, err := parquet.OpenFile(f, info.Size())
	if err != nil {
		return nil, nil, err
	}
	var cols []string
	for _, c := range pf.Schema().Fields() {
		cols = append(cols, c.Name())
	}
	r := parquet.NewReader(pf)
	defer r.Close()
	var out [][]any
	buf := make([]parquet.Row, 16)
	for {
		n, err := r.ReadRows(buf)
		for _, row := range buf[:n] {
			vals := make([]any, len(cols))
			for _, v := range row {
				switch {
				case v.IsNull():
				case v.Kind() == parquet.ByteArray:
					vals[v.Column()] = string(v.ByteArray())
				default:
					vals[v.Column()] = v.Double()
				}
			}
			out = append(out, vals)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, cols, nil
			}
			return nil, nil, err
		}
	}
}
