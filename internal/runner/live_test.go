package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/live"
	"github.com/faultbench/faultbench/internal/record"
)

const liveScenario = `name: live-run
seed: 3
cluster: {system: fake-rig, backend: fake, nodes: 2}
workload: {driver: "null", rate: 200, clients: 2, window: 200ms, trace: "zipf:10:1.0"}
phases: [{name: warmup, duration: 600ms}, {name: fault, duration: 1s}]
faults: [{type: app-crash, node: 2, at: 700ms, duration: 300ms}]
`

// scrape fetches and parses the endpoint with the official text-format parser.
func scrape(url string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

func labelsOf(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// The endpoint's series, scraped after the run's end (the linger) and
// parsed with expfmt, agree with windows.csv: requests by outcome, the
// histogram's count, the windows closed; and --live wrote one line per
// row of windows.csv, with the fault in the windows it was active in.
func TestMetricsAgreeWithWindows(t *testing.T) {
	sc := parse(t, liveScenario)
	l, err := live.Listen("--metrics", "127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/metrics"
	var lines bytes.Buffer
	dir := t.TempDir()
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), Options{Scenario: sc, OutDir: dir,
			Live: LiveOptions{Metrics: l, Lines: &lines, Linger: 1500 * time.Millisecond}})
		done <- err
	}()
	var final map[string]*dto.MetricFamily
	deadline := time.After(5 * time.Minute) // the run, its analysis and report: slow under -race on a shared machine
	for final == nil {
		select {
		case err := <-done:
			t.Fatalf("the run ended (%v) before a scrape saw it finished", err)
		case <-deadline:
			t.Fatal("no scrape saw the run finished")
		case <-time.After(50 * time.Millisecond):
		}
		fams, err := scrape(url)
		if err == nil && fams["faultbench_run_finished"].GetMetric()[0].GetGauge().GetValue() == 1 {
			final = fams
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	windows, _, err := record.ReadWindows(filepath.Join(dir, record.WindowsFile))
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
	got := map[string]float64{}
	for _, m := range final["faultbench_requests_total"].GetMetric() {
		got[labelsOf(m)["outcome"]] += m.GetCounter().GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("requests_total{outcome=%q} = %v, windows.csv says %v", k, got[k], v)
		}
	}
	if want["ok"] == 0 {
		t.Error("windows.csv has no ok attempt: the run did not run")
	}
	var count float64
	for _, m := range final["faultbench_request_duration_seconds"].GetMetric() {
		count += float64(m.GetHistogram().GetSampleCount())
	}
	if count != measured {
		t.Errorf("request_duration_seconds count %v, windows.csv has %v measured attempts", count, measured)
	}
	if n := final["faultbench_windows_closed_total"].GetMetric()[0].GetCounter().GetValue(); int(n) != len(windows) {
		t.Errorf("windows_closed_total %v, windows.csv has %d rows", n, len(windows))
	}
	if f := final["faultbench_fault_active"].GetMetric(); len(f) != 1 || labelsOf(f[0])["type"] != "app-crash" || f[0].GetGauge().GetValue() != 0 {
		t.Errorf("fault_active %v: want one app-crash, cleared", f)
	}

	var rows []live.Line
	sc2 := bufio.NewScanner(&lines)
	for sc2.Scan() {
		var l live.Line
		if err := json.Unmarshal(sc2.Bytes(), &l); err != nil {
			t.Fatalf("--live line %q: %v", sc2.Text(), err)
		}
		rows = append(rows, l)
	}
	if len(rows) != len(windows) {
		t.Fatalf("--live wrote %d lines, windows.csv has %d rows", len(rows), len(windows))
	}
	for i, l := range rows {
		// Stragglers may still reach a window after its line was written;
		// none do with the null driver, so the rows agree exactly.
		if l.TStartS != windows[i].StartS || l.OK != windows[i].Outcomes[record.OK] || l.Offered != windows[i].Offered {
			t.Errorf("line %d %+v disagrees with windows.csv row %+v", i, l, windows[i])
		}
		active := len(l.ActiveFaults) > 0
		inFault := l.TStartS+0.2 > 0.7 && l.TStartS < 1.0
		if active != inFault && l.TStartS+0.2 < 1.6 {
			// The fault's clear is stamped when it happened, a little after 1.0 s.
			if !(l.TStartS >= 1.0 && l.TStartS < 1.2) {
				t.Errorf("window at %v: active faults %v", l.TStartS, l.ActiveFaults)
			}
		}
	}
}

// A guard that does not fire leaves the run as it was: complete, the full
// length, no abort event, no "aborted" in summary.json.
func TestGuardThatDoesNotFire(t *testing.T) {
	sc := parse(t, liveScenario+"guard: [\"data_error > 0\", \"inflight_age > 10s\"]\n")
	dir := t.TempDir()
	res, err := Run(context.Background(), Options{Scenario: sc, OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.Aborted != nil || res.Summary.Aborted != nil || !res.Summary.Complete {
		t.Errorf("aborted %+v / %+v, complete %v: want a complete run", res.Aborted, res.Summary.Aborted, res.Summary.Complete)
	}
	if res.Summary.Run.DurationS != sc.Length().Seconds() {
		t.Errorf("duration %v, want the scenario's %v", res.Summary.Run.DurationS, sc.Length().Seconds())
	}
	b, _ := os.ReadFile(filepath.Join(dir, record.EventsFile))
	if strings.Contains(string(b), `"kind":"abort"`) {
		t.Error("an abort event in a run whose guard did not fire")
	}
	var sum analysis.Summary
	sb, _ := os.ReadFile(filepath.Join(dir, record.SummaryFile))
	if err := json.Unmarshal(sb, &sum); err != nil || strings.Contains(string(sb), `"aborted"`) {
		t.Errorf("summary.json: %v; aborted key present: %v", err, strings.Contains(string(sb), `"aborted"`))
	}
}

// An address in use is an error before anything runs.
func TestListenInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := live.Listen("--metrics", l.Addr().String(), false); err == nil || !strings.Contains(err.Error(), "--metrics") {
		t.Errorf("Listen on an address in use: %v", err)
	}
	if _, err := live.Listen("--ui", "0.0.0.0:0", false); err == nil || !strings.Contains(err.Error(), "--allow-remote") {
		t.Errorf("Listen on 0.0.0.0 without --allow-remote: %v", err)
	}
}
