package runner

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/live"
	"github.com/faultbench/faultbench/internal/live/livetest"
)

// Every panel of deploy/grafana/faultbench.json is a query that a real
// Prometheus (Debian's) accepts while it scrapes a run, and the main
// panels have data. Skipped where prometheus is not installed.
func TestGrafanaPanelsAgainstPrometheus(t *testing.T) {
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	b, err := os.ReadFile("../../deploy/grafana/faultbench.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("faultbench.json: %v", err)
	}
	sc := parse(t, `name: grafana
seed: 3
cluster: {system: fake-rig, backend: fake, nodes: 2}
workload: {driver: "null", rate: 100, clients: 2, window: 500ms, trace: "zipf:10:1.0"}
phases: [{name: warmup, duration: 2s}, {name: fault, duration: 4m}]
faults: [{type: app-crash, node: 2, at: 2s, duration: 4m}]
`)
	ml, err := live.Listen("--metrics", "127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ml.Close() }) // the run closes it; a skip would not
	prom := livetest.StartPrometheus(t, ml.Addr().String(), time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = Run(ctx, Options{Scenario: sc, OutDir: t.TempDir(), Live: LiveOptions{Metrics: ml}})
	}()
	defer func() { cancel(); <-done }()

	query := func(expr string) (int, error) {
		return prom.Query(strings.ReplaceAll(expr, "$__rate_interval", "10s"))
	}
	// Wait (bounded) until Prometheus has scraped the run for a while,
	// with the fault in effect.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		n, err := query(`faultbench_fault_active == 1 and on() count_over_time(faultbench_run_info[20s]) >= 8`)
		if err == nil && n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Prometheus did not scrape the run in time")
		}
		time.Sleep(200 * time.Millisecond) // polling a condition, bounded above
	}
	mustHaveData := map[string]bool{"Answers per second by outcome": true, "Latency p50 / p99 (histogram)": true,
		"Faults active": true, "Phase": true, "In flight, and the oldest attempt's age": true}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			n, err := query(tg.Expr)
			if err != nil {
				t.Errorf("panel %q: %s: %v", p.Title, tg.Expr, err)
			} else if n == 0 && mustHaveData[p.Title] {
				t.Errorf("panel %q: %s: no data", p.Title, tg.Expr)
			}
		}
	}
}
