package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/live/livetest"
	"github.com/faultbench/faultbench/internal/record"
)

// promqlGuardQuery is the rule's query: what an SRE would alert on for a
// hang, read from the run's own endpoint.
const promqlGuardQuery = "faultbench_inflight_oldest_age_seconds > 1"

// A guard PromQL rule, against Debian's prometheus scraping the run's own
// --metrics endpoint, stops a real run: node 1 hangs, the oldest attempt
// in flight passes 1 s, the query's answer holds for 1 s, every fault is
// reverted, the run exits 3 and summary.json's aborted.by names the rule.
func TestGuardPromQLAgainstPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run; skipped with -short")
	}
	metrics := "127.0.0.1:" + freePort(t, "127.0.0.1")
	prom := livetest.StartPrometheus(t, metrics, 500*time.Millisecond)
	runPromQLGuard(t, "http://"+prom.Addr, metrics)
}

// The same run against a stand-in that speaks Prometheus's /api/v1/query
// JSON, answering from the run's own endpoint (parsed with the official
// text-format parser): the rule's path through the guard is tested where
// prometheus is not installed too.
func TestGuardPromQLAgainstQueryAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run; skipped with -short")
	}
	metrics := "127.0.0.1:" + freePort(t, "127.0.0.1")
	var mu sync.Mutex
	asked := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("query")
		mu.Lock()
		asked[r.URL.Path+" "+q]++
		mu.Unlock()
		result := []any{}
		if fams, err := scrapeFamilies("http://" + metrics + "/metrics"); err == nil {
			if f := fams["faultbench_inflight_oldest_age_seconds"]; f != nil && len(f.GetMetric()) == 1 {
				if v := f.GetMetric()[0].GetGauge().GetValue(); v > 1 {
					now := float64(time.Now().UnixMilli()) / 1000
					result = append(result, map[string]any{"metric": map[string]string{}, "value": []any{now, strconv.FormatFloat(v, 'g', -1, 64)}})
				}
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "vector", "result": result}})
	}))
	defer srv.Close()
	runPromQLGuard(t, srv.URL, metrics)
	mu.Lock()
	defer mu.Unlock()
	if asked["/api/v1/query "+promqlGuardQuery] == 0 {
		t.Errorf("the guard never asked /api/v1/query for %q: %v", promqlGuardQuery, asked)
	}
}

// runPromQLGuard runs a static node with a long app-hang and a guard
// whose only rule is a PromQL query at promURL, serving --metrics at
// metricsAddr, and checks that the rule stopped it.
func runPromQLGuard(t *testing.T, promURL, metricsAddr string) {
	t.Helper()
	p := writeScenario(t, fmt.Sprintf(`name: promql-guard
seed: 1
cluster: {system: static, nodes: 1, pages: 10, page_size: 100}
workload: {rate: 50, clients: 1, window: 1s, connect_timeout: 1s, response_timeout: 5s}
phases: [{name: warmup, duration: 3s}, {name: fault, duration: 60s}]
faults: [{type: app-hang, node: 1, at: 3s, duration: 55s}]
guard:
  - {promql: %q, prometheus: %q, when: "> 1", for: 1s, every: 250ms}
guard_cooldown: 2s
`, promqlGuardQuery, promURL))
	dir := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := run(t, "run", p, "--quiet", "-o", dir, "--metrics", metricsAddr)
	if code != ExitThreshold {
		t.Fatalf("exit %d, want %d (the guard stopped the run)\nstdout: %s\nstderr: %s", code, ExitThreshold, stdout, stderr)
	}
	rule := "promql " + promqlGuardQuery + " > 1"
	if !strings.Contains(stderr, fmt.Sprintf("aborted: guard %q", rule)) {
		t.Errorf("stderr does not name the rule %q: %s", rule, stderr)
	}
	events, err := record.ReadEvents(filepath.Join(dir, record.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	injectS, abortS, clearS := -1.0, -1.0, -1.0
	for _, e := range events {
		switch e.Kind {
		case "fault.inject":
			injectS = e.TS
		case "abort":
			abortS = e.TS
		case "fault.clear":
			clearS = e.TS
		}
	}
	if injectS < 0 || abortS < 0 || clearS < 0 {
		t.Fatalf("events: inject %v, abort %v, clear %v: want all three", injectS, abortS, clearS)
	}
	// The hang was planned for 55 s; the guard reverted it.
	if clearS < abortS || clearS > injectS+50 {
		t.Errorf("fault injected at %.2f s, cleared at %.2f s, abort at %.2f s: want the clear at the abort, not at the planned end", injectS, clearS, abortS)
	}
	b, err := os.ReadFile(filepath.Join(dir, record.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var sum analysis.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Aborted == nil || sum.Aborted.By != rule || sum.Aborted.AtS != abortS {
		t.Errorf("summary aborted %+v: want by %q at %.3f s", sum.Aborted, rule, abortS)
	}
	if sum.Complete {
		t.Error("summary says complete: the guard stopped the run")
	}
}
