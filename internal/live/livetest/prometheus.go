// Package livetest starts Debian's prometheus for tests that check the
// live endpoint (internal/live) against a real scraper: the Grafana
// board's queries, the guard's PromQL rules end to end.
package livetest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Prometheus is a prometheus process a test started.
type Prometheus struct {
	Addr string // host:port of its HTTP API
}

// StartPrometheus starts prometheus scraping target (host:port, /metrics)
// every interval, with its data in a temporary directory, and waits
// (bounded) until it is ready. It skips the test where prometheus is not
// installed, and stops the process when the test ends.
func StartPrometheus(t testing.TB, target string, interval time.Duration) *Prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not installed (apt-get install prometheus): skipped; CI installs it")
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf("global: {scrape_interval: %s, scrape_timeout: %s, evaluation_interval: %s}\nscrape_configs:\n  - job_name: faultbench\n    static_configs: [{targets: [%q]}]\n",
		interval, interval, interval, target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return &Prometheus{Addr: addr}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus at %s not ready after 2 minutes: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond) // polling readiness, bounded above
	}
}

// Query runs an instant query and returns the number of series in its
// answer; an error when Prometheus refused it.
func (p *Prometheus) Query(expr string) (int, error) {
	resp, err := http.Get("http://" + p.Addr + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var ans struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		return 0, err
	}
	if ans.Status != "success" {
		return 0, fmt.Errorf("%s", strings.TrimSpace(ans.Error))
	}
	return len(ans.Data.Result), nil
}
