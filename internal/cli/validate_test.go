package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/record"
)

// validScenario is a small static run; %s are the workload's keys and
// extra top-level lines (faults). Line 3 is the workload, lines 4-6 the
// phases, line 7 onwards the extra lines.
const validScenario = `name: v
cluster: {system: static, nodes: 1, pages: 50, page_size: 512}
workload: {%s}
phases:
  - {name: warmup, duration: 10s}
  - {name: fault, duration: 10s}
%s`

// goodCLF is n Common Log Format lines, one GET a second.
func goodCLF(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "10.0.0.1 - - [10/Oct/2000:13:%02d:%02d +0000] \"GET /p/%d HTTP/1.0\" 200 512\n", i/60, i%60, i%50)
	}
	return b.String()
}

// TestValidateRejectsWhatRunWouldFail is every input that used to pass
// `validate` and then fail or crash `run`: each is now bad input (exit 2)
// naming file:line and key, from validate and from run alike, and run
// starts nothing (its results directory is never made).
func TestValidateRejectsWhatRunWouldFail(t *testing.T) {
	cases := []struct {
		name      string
		workload  string            // workload keys (default: rate 50, window 1s)
		extra     string            // extra top-level lines
		files     map[string]string // beside the scenario
		timeScale string
		want      string // in stderr, after the scenario's path
		also      string // in stderr too
	}{
		{name: "window 1ns", workload: ", window: 1ns", want: ":3: workload.window: window 1ns is shorter than 1ms"},
		{name: "window 1h in a 20s run", workload: ", window: 1h", want: ":3: workload.window: window 1h0m0s is longer than the whole run (20s)"},
		{name: "missing paths file", workload: `, trace: "paths:nope.txt"`, want: ":3: workload.trace: paths trace: open "},
		{name: "garbage clf file", workload: `, trace: "clf:garbage.log"`, files: map[string]string{"garbage.log": "GIF89a\x00\x01\nnot a log\n\n<html>\n"},
			want: ":3: workload.trace: ", also: "too few usable lines: 3 of 3 lines malformed and skipped (line 1, 2, 4;"},
		{name: "every fixed(1ns)", extra: "faults:\n  - {type: app-hang, node: 1, at: 2s, duration: 1s, every: fixed(1ns)}\n",
			want: ":8: faults[0].every: fixed(1ns): faults would recur faster than one window"},
		{name: "every poisson never recurring", extra: "faults:\n  - {type: app-hang, node: 1, at: 2s, duration: 1s, every: poisson(1h)}\n",
			want: ":8: faults[0].every: poisson(1h0m0s): the mean gap is longer than the whole run (20s)"},
		{name: "every fixed never recurring", extra: "faults:\n  - {type: app-hang, node: 1, at: 12s, duration: 1s, every: fixed(8s)}\n",
			want: ":8: faults[0].every: fixed(8s) never recurs"},
		{name: "time scale 1e-9", timeScale: "1e-9", want: ":3: workload.window: at --time-scale 1e-09, window 1ns is shorter than 1ms"},
		{name: "phase shorter than a window", workload: ", window: 15s", want: ":5: phases[0].duration: phase \"warmup\" lasts 10s, less than one window (15s)"},
		{name: "no arrivals in a phase", workload: "rate: 0.05", want: ":5: phases[0].duration: phase \"warmup\" of 10s offers 0.5 requests"},
		{name: "too few usable clf lines for the threshold", workload: `, trace: "clf:mixed.log", trace_min_usable: 0.99`,
			files: map[string]string{"mixed.log": goodCLF(50) + "junk\n"}, want: ":3: workload.trace: ", also: "1 of 51 lines malformed and skipped (line 51;"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "s.yaml")
			wl := tc.workload
			if !strings.Contains(wl, "rate:") {
				wl = "rate: 50" + wl
			}
			if !strings.Contains(wl, "window:") {
				wl += ", window: 1s"
			}
			if err := os.WriteFile(path, fmt.Appendf(nil, validScenario, wl, tc.extra), 0o644); err != nil {
				t.Fatal(err)
			}
			for name, body := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			scale := []string{}
			if tc.timeScale != "" {
				scale = []string{"--time-scale", tc.timeScale}
			}
			_, stderr, code := run(t, append([]string{"validate", path}, scale...)...)
			if code != ExitBadInput || !strings.Contains(stderr, path+tc.want) || !strings.Contains(stderr, tc.also) {
				t.Fatalf("validate: exit %d, stderr:\n%s\nwant exit %d and %q", code, stderr, ExitBadInput, path+tc.want)
			}
			out := filepath.Join(dir, "out")
			_, runErr, code := run(t, append([]string{"run", path, "-o", out, "--quiet"}, scale...)...)
			if code != ExitBadInput || runErr != stderr {
				t.Errorf("run: exit %d, stderr:\n%s\nwant exit %d and validate's:\n%s", code, runErr, ExitBadInput, stderr)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("run made %s before refusing the scenario (%v)", out, err)
			}
		})
	}
}

// TestValidateWarnsOfSkippedCLFLines: one odd line among 50 good ones is a
// warning naming its line, not an error.
func TestValidateWarnsOfSkippedCLFLines(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, validScenario, `rate: 50, window: 1s, trace: "clf:access.log"`, ""), 0o644); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(goodCLF(50), "\n")
	log := strings.Join(lines[:16], "") + "logrotate was here\n" + strings.Join(lines[16:], "")
	if err := os.WriteFile(filepath.Join(dir, "access.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := run(t, "validate", path)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "1 of 51 lines malformed and skipped (line 17;") {
		t.Errorf("stderr %q does not warn of line 17", stderr)
	}
	if !strings.Contains(stdout, "trace_min_usable: 0.9") {
		t.Errorf("the resolved scenario does not show the default trace_min_usable:\n%s", stdout)
	}
	if testing.Short() {
		return
	}
	// The replay runs, and its record says which line it left out.
	out := filepath.Join(dir, "out")
	if _, stderr, code := run(t, "run", path, "--time-scale", "0.1", "-o", out, "--quiet"); code != ExitOK {
		t.Fatalf("run of a log with one odd line: exit %d: %s", code, stderr)
	}
	events, err := os.ReadFile(filepath.Join(out, record.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(events), `"kind":"workload.clf_skipped"`) || !strings.Contains(string(events), "clf_skipped_lines=1: 1 of 51 lines malformed and skipped (line 17;") {
		t.Errorf("events.jsonl holds no workload.clf_skipped event for line 17:\n%s", events)
	}
	// summary.json carries it too, read back from the event.
	raw, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Trace *struct {
			Skipped    int   `json:"clf_skipped_lines"`
			FirstLines []int `json:"first_lines"`
		} `json:"trace"`
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Trace == nil || sum.Trace.Skipped != 1 || len(sum.Trace.FirstLines) != 1 || sum.Trace.FirstLines[0] != 17 {
		t.Errorf("summary.json trace = %+v, want 1 skipped line, line 17", sum.Trace)
	}
}

// TestValidateTimeScaleAgreesWithRun: a scale validate accepts is one the
// run scales the same way; validate prints the scenario as it will run.
func TestValidateTimeScaleAgreesWithRun(t *testing.T) {
	path := writeScenario(t, fmt.Sprintf(validScenario, "rate: 50, window: 1s", ""))
	stdout, stderr, code := run(t, "validate", path, "--time-scale", "0.1")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "window: 100ms") || !strings.Contains(stdout, "duration: 1s") {
		t.Errorf("validate --time-scale 0.1 did not print the scaled run:\n%s", stdout)
	}
	for _, bad := range []string{"0", "-1", "NaN", "1001"} {
		if _, stderr, code := run(t, "validate", path, "--time-scale", bad); code != ExitBadInput || !strings.Contains(stderr, "--time-scale") {
			t.Errorf("--time-scale %s: exit %d, %q", bad, code, stderr)
		}
	}
}
