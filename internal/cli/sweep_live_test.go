package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/faultbench/faultbench/internal/live"
	"github.com/faultbench/faultbench/internal/record"
)

// A short sweep over a static cluster, two configurations, followed live
// at one address (--metrics and --ui) and with --live: a scrape taken once
// the sweep has ended holds each run's counters, labelled with its run,
// and they agree with that run's windows.csv; the page's data name the
// configuration under way ("i of n"); --live has one line per window of
// each run, each naming its run directory and place in the sweep.
func TestSweepFollowedLive(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end sweep; skipped with -short")
	}
	dir := t.TempDir()
	base := `name: base
seed: 5
cluster: {system: static, nodes: 1, pages: 10, page_size: 100}
workload: {rate: 40, clients: 1, window: 1s}
phases: [{name: warmup, duration: 4s}, {name: post, duration: 4s}]
`
	if err := os.WriteFile(filepath.Join(dir, "base.yaml"), []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	sw := filepath.Join(dir, "sweep.yaml")
	if err := os.WriteFile(sw, []byte("name: livesweep\nscenario: base.yaml\ngrid:\n  workload.rate: [40, 80]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + freePort(t, "127.0.0.1")
	out := filepath.Join(dir, "out")
	linesPath := filepath.Join(dir, "live.jsonl")
	// The linger is long; the test ends it (as Ctrl-C would) once it has
	// scraped the ended sweep.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"sweep", sw, "-o", out, "--time-scale", "0.25", "--quiet",
			"--metrics", addr, "--ui", addr, "--live", linesPath, "--metrics-linger", "10m"}, &stdout, &stderr)
	}()

	var final map[string]*dto.MetricFamily
	var last live.State
	seen := map[string]int{} // run -> configuration the page said
	deadline := time.After(5 * time.Minute)
	for final == nil {
		select {
		case err := <-done:
			t.Fatalf("the sweep ended (exit %d: %v) before a scrape saw it finished\nstderr: %s", ExitCode(err), err, stderr.String())
		case <-deadline:
			t.Fatal("no scrape saw the sweep finished")
		case <-time.After(50 * time.Millisecond): // polling the sweep's progress, bounded above
		}
		if s, err := getState("http://" + addr + "/state.json"); err == nil {
			last = s
			if s.Sweep != nil && s.Sweep.Run != "" {
				seen[s.Sweep.Run] = s.Sweep.Config
				if s.Sweep.Configs != 2 || s.Sweep.Runs != 2 {
					t.Errorf("the page says %+v: want 2 configurations, 2 runs", s.Sweep)
				}
			}
		}
		fams, err := scrapeFamilies("http://" + addr + "/metrics")
		if err == nil && fams["faultbench_sweep_finished"].GetMetric()[0].GetGauge().GetValue() == 1 {
			final = fams
		}
	}
	// The page's state was read before that scrape, possibly just before
	// the sweep ended: read it once more now that it has (bounded).
	for try := 0; try < 100 && (last.Sweep == nil || !last.Sweep.Finished || !last.Finished); try++ {
		if try > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		if s, err := getState("http://" + addr + "/state.json"); err == nil {
			last = s
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("exit %d: %v\nstderr: %s", ExitCode(err), err, stderr.String())
	}
	for run, cfg := range seen {
		if want := map[string]int{"cfg-0001-r1": 1, "cfg-0002-r1": 2}[run]; cfg != want {
			t.Errorf("the page showed run %s as configuration %d, want %d", run, cfg, want)
		}
	}
	if last.Sweep == nil || last.Sweep.Run != "cfg-0002-r1" || last.Sweep.Config != 2 || !last.Sweep.Finished || !last.Finished {
		t.Errorf("the page's last state %+v: want configuration 2 of 2, run and sweep ended", last.Sweep)
	}

	lines := readLines(t, linesPath)
	for _, run := range []string{"cfg-0001-r1", "cfg-0002-r1"} {
		runDir := filepath.Join(out, run)
		windows, _, err := record.ReadWindows(filepath.Join(runDir, record.WindowsFile))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]float64{}
		var measured float64
		for _, w := range windows {
			for _, o := range record.Outcomes() {
				want[o.String()] += float64(w.Outcomes[o])
				measured += float64(w.Outcomes[o])
			}
			want[live.OutcomeRefused] += float64(w.GenRefused)
			want[live.OutcomeCutShort] += float64(w.CutShort)
		}
		if want["ok"] == 0 {
			t.Errorf("%s: windows.csv has no ok attempt", run)
		}
		got := map[string]float64{}
		for _, m := range ofRun(final["faultbench_requests_total"], run) {
			got[label(m, "outcome")] += m.GetCounter().GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: requests_total{outcome=%q} = %v, windows.csv says %v", run, k, got[k], v)
			}
		}
		var count float64
		for _, m := range ofRun(final["faultbench_request_duration_seconds"], run) {
			count += float64(m.GetHistogram().GetSampleCount())
		}
		if count != measured {
			t.Errorf("%s: request_duration_seconds count %v, windows.csv has %v measured attempts", run, count, measured)
		}
		if m := ofRun(final["faultbench_windows_closed_total"], run); len(m) != 1 || int(m[0].GetCounter().GetValue()) != len(windows) {
			t.Errorf("%s: windows_closed_total %v, windows.csv has %d rows", run, m, len(windows))
		}
		var mine []live.Line
		for _, l := range lines {
			if l.RunDir == runDir {
				mine = append(mine, l)
			}
		}
		if len(mine) != len(windows) {
			t.Errorf("%s: --live has %d lines naming it, windows.csv %d rows", run, len(mine), len(windows))
		}
		for i, l := range mine {
			if l.Sweep == nil || l.Sweep.Run != run || l.Sweep.Configs != 2 {
				t.Errorf("%s: line %d places the run at %+v", run, i, l.Sweep)
			}
			if i < len(windows) && (l.TStartS != windows[i].StartS || l.OK != windows[i].Outcomes[record.OK]) {
				t.Errorf("%s: line %d %+v disagrees with windows.csv row %+v", run, i, l, windows[i])
			}
		}
	}
	if len(lines) == 0 {
		t.Error("--live wrote nothing")
	}
}

func getState(url string) (live.State, error) {
	var s live.State
	resp, err := http.Get(url)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&s)
	return s, err
}

func scrapeFamilies(url string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// ofRun is the series of f that carry run="run".
func ofRun(f *dto.MetricFamily, run string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range f.GetMetric() {
		if label(m, "run") == run {
			out = append(out, m)
		}
	}
	return out
}

func readLines(t *testing.T, path string) []live.Line {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []live.Line
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l live.Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("--live line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}
