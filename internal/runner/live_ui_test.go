package runner

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/live"
)

// chromium finds Debian's headless browser, or skips.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium not installed (apt-get install chromium): the live page is not tested in a browser")
	return ""
}

// Debian's headless Chromium loads the live page during a run; the graph
// it draws has the windows the run had closed when the page was loaded
// (and no more than the run has closed by the time the DOM is dumped),
// each where it belongs.
func TestLivePageInChromium(t *testing.T) {
	browser := chromium(t)
	sc := parse(t, `name: live-page
seed: 3
cluster: {system: fake-rig, backend: fake, nodes: 2}
workload: {driver: "null", rate: 100, clients: 2, window: 200ms, trace: "zipf:10:1.0"}
phases: [{name: warmup, duration: 1s}, {name: fault, duration: 4m}]
faults: [{type: app-crash, node: 2, at: 1200ms, duration: 1s}]
`)
	l, err := live.Listen("--ui", "127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + l.Addr().String() + "/"
	// The run is long enough for a slow browser start on a loaded
	// machine; the test interrupts it once the page has been read.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		res, err := Run(ctx, Options{Scenario: sc, OutDir: t.TempDir(), Live: LiveOptions{UI: l}})
		if res != nil && res.Interrupted {
			err = nil
		}
		done <- err
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	closed := func() int {
		resp, err := http.Get(base + "state.json")
		if err != nil {
			return -1
		}
		defer resp.Body.Close()
		var s live.State
		if json.NewDecoder(resp.Body).Decode(&s) != nil || s.Finished {
			return -1
		}
		return len(s.Windows)
	}
	deadline := time.Now().Add(3 * time.Minute)
	before := closed()
	for before < 3 {
		if time.Now().After(deadline) {
			t.Fatal("the run closed no 3 windows in time")
		}
		time.Sleep(50 * time.Millisecond) // polling the run's progress, not timing it
		before = closed()
	}
	out, err := exec.Command(browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=3000",
		"--dump-dom", base).Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	after := closed()
	m := regexp.MustCompile(`<g id="windows" data-count="(\d+)"`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("the page has no graph of windows:\n%s", out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	if n < before || (after >= 0 && n > after) {
		t.Errorf("the graph has %d windows; the run had closed %d before the page loaded and %d after", n, before, after)
	}
	ts := regexp.MustCompile(`class="win" data-t="([0-9.e-]+)"`).FindAllSubmatch(out, -1)
	if len(ts) != n {
		t.Errorf("%d window groups drawn, data-count %d", len(ts), n)
	}
	for i, m := range ts {
		if v, _ := strconv.ParseFloat(string(m[1]), 64); v < float64(i)*0.2-1e-9 || v > float64(i)*0.2+1e-9 {
			t.Errorf("window %d drawn at t=%s, want %.1f", i, m[1], float64(i)*0.2)
		}
	}
}
