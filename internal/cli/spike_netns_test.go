package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/record"
)

// faultEvents reads a run's events.jsonl: for each fault type, the kinds
// of its events in order.
func faultEvents(t *testing.T, dir string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, record.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e record.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if e.Fault != "" {
			out[e.Fault] = append(out[e.Fault], e.Kind)
		}
	}
	return out
}

// The load-spike example on the local backend: the spike is injected,
// proves its effect and is reverted, all on the timeline.
func TestLoadSpikeExample(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run; skipped with -short")
	}
	dir := filepath.Join(t.TempDir(), "out")
	_, stderr, code := run(t, "run", "../../examples/load-spike.yaml", "--time-scale", "0.3", "-o", dir, "--quiet")
	switch code {
	case ExitOK:
	case ExitThreshold:
		// The example's goodput threshold is what a quiet machine gives;
		// on a loaded one (CI beside a long measurement) the scaled
		// timeouts can cost it. The run itself completed: check its events.
		t.Logf("the example's threshold was missed on this machine: %s", stderr)
	default:
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := strings.Join(faultEvents(t, dir)["load-spike"], ",")
	if got != "fault.inject,fault.effective,fault.clear,fault.reverted" {
		t.Errorf("load-spike events %s", got)
	}
}

// A black box (python's http.server) on netns takes delay, link-flaky
// and a load spike, each with its evidence and its revert, and no fault
// fails (examples/command-delay-netns.yaml). Root only.
func TestCommandTakesDelayAndFlakyOnNetns(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run; skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("backend netns needs root")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3 for the example's http.server")
	}
	dir := filepath.Join(t.TempDir(), "out")
	_, stderr, code := run(t, "run", "../../examples/command-delay-netns.yaml", "--time-scale", "0.3", "-o", dir, "--quiet")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	ev := faultEvents(t, dir)
	for typ, want := range map[string]int{"delay": 2, "link-flaky": 1, "load-spike": 1} {
		kinds := strings.Join(ev[typ], ",")
		if strings.Count(kinds, "fault.effective") != want || strings.Count(kinds, "fault.reverted") != want || strings.Contains(kinds, "fault.error") {
			t.Errorf("%s: events %s, want %d effective and %d reverted, no error", typ, kinds, want, want)
		}
	}
}
