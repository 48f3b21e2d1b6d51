package cli

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/record"
)

// refusalScenario: one client allowed 8 attempts outstanding, sending to
// two static nodes in turn; node 1 hangs from 4 s to 8 s. Its requests
// wait (up to the 2 s response timeout), fill the client's 8 slots within
// a few arrivals, and the arrivals that follow — to either node — are the
// generator's to refuse, not the service's.
const refusalScenario = `name: refusals
seed: 1
cluster: {system: static, nodes: 2, pages: 50, page_size: 1024}
workload:
  rate: 100
  arrivals: constant
  clients: 1
  max_in_flight: 8
  trace: "zipf:50:1.0"
  connect_timeout: 1s
  response_timeout: 2s
  window: 1s
phases:
  - {name: warmup, duration: 4s}
  - {name: fault, duration: 6s}
  - {name: recovery, duration: 4s}
faults:
  - {type: app-hang, node: 1, at: 4s, duration: 4s}
`

// TestGeneratorRefusalsInARealRun runs faultbench against a hung node with
// a low max_in_flight and checks the record end to end: the refused
// arrivals are rows with gen_refused=max_in_flight; summary.json counts
// them as the generator's and keeps them out of the service's attempts and
// outcomes; windows.csv marks every window holding one valid=0; and the
// report shows those windows (the hatched band's caption and the
// generator's rows).
func TestGeneratorRefusalsInARealRun(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run; skipped with -short")
	}
	dir := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := run(t, "run", writeScenario(t, refusalScenario), "--time-scale", "0.5", "-o", dir, "--quiet")
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}

	// The record: refusals are rows of their own, sent to neither node.
	var rows, refused, measured, cut int64
	var serviceConnErrors int64  // conn_error rows the service caused
	refusedAt := map[int]int64{} // window index -> refusals in it
	const windowS = 0.5          // 1 s at --time-scale 0.5
	err := record.ReadRequests(dir, func(r record.Request) error {
		rows++
		switch {
		case r.Refused == record.RefusedMaxInFlight:
			refused++
			refusedAt[int(math.Floor(r.StartS/windowS))]++
		case r.Refused != record.NotRefused:
			t.Errorf("row at %.3f s refused for %q; only max_in_flight can refuse here", r.StartS, r.Refused)
		case r.CutShort:
			cut++
		default:
			measured++
			if r.Outcome == record.ConnError {
				serviceConnErrors++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if refused == 0 {
		t.Fatalf("no row has gen_refused=max_in_flight in %d rows: the hang never filled the client's 8 slots", rows)
	}
	// The hang (2 s to 4 s at this scale, and the 1 s response timeout of
	// what waits on it) is what fills the slots: nearly every refusal falls
	// there. (A stall of the loaded test machine may fill them briefly
	// elsewhere, so the bound is a share, not all.)
	var inHang int64
	for w, n := range refusedAt {
		if s := float64(w) * windowS; s >= 2 && s < 4+1 {
			inHang += n
		}
	}
	if inHang < refused*9/10 {
		t.Errorf("only %d of %d refusals fall while node 1 hangs: %v (window index -> refusals)", inHang, refused, refusedAt)
	}

	// summary.json: the generator's figures, apart from the service's.
	sum := readSummary(t, dir)
	o := sum.Overall
	if o.GenRefused != refused || o.GenRefusedBy["max_in_flight"] != refused {
		t.Errorf("summary: gen_refused %d (by reason %v), the record has %d refusals", o.GenRefused, o.GenRefusedBy, refused)
	}
	if o.Arrivals != rows || o.Attempts != measured || sum.Run.Attempts != rows {
		t.Errorf("summary: arrivals %d attempts %d run.attempts %d; the record has %d rows, %d measured, %d refused, %d cut short",
			o.Arrivals, o.Attempts, sum.Run.Attempts, rows, measured, refused, cut)
	}
	var outcomes int64
	for _, n := range o.Outcomes {
		outcomes += n
	}
	if outcomes != o.Attempts {
		t.Errorf("the six outcomes sum to %d, the service's attempts are %d: refusals counted as outcomes", outcomes, o.Attempts)
	}
	if o.Outcomes["conn_error"] != serviceConnErrors {
		t.Errorf("summary conn_error %d, but only %d measured rows are conn_error: the refusals (recorded as conn_error for old readers) were charged to the service",
			o.Outcomes["conn_error"], serviceConnErrors)
	}
	if f := sum.Phases["fault"]; f.GenRefused == 0 || f.InvalidWindows == 0 {
		t.Errorf("fault phase: %d refused, %d invalid windows", f.GenRefused, f.InvalidWindows)
	}

	// windows.csv: every window with a refusal is not a valid measurement.
	windows, _, err := record.ReadWindows(filepath.Join(dir, record.WindowsFile))
	if err != nil {
		t.Fatal(err)
	}
	invalid := 0
	for i, w := range windows {
		if w.GenRefused != refusedAt[i] {
			t.Errorf("window %d (%.1f s): gen_refused %d, the record has %d", i, w.StartS, w.GenRefused, refusedAt[i])
		}
		if w.GenRefused > 0 && w.Valid {
			t.Errorf("window %d (%.1f s) has %d refusals but valid=1", i, w.StartS, w.GenRefused)
		}
		if !w.Valid {
			invalid++
		}
	}
	if invalid == 0 || invalid != o.InvalidWindows {
		t.Errorf("windows.csv has %d invalid windows, summary.json %d", invalid, o.InvalidWindows)
	}

	// The report shows them: the availability graph's hatched windows and
	// the generator's rows beside the service's.
	html, err := os.ReadFile(filepath.Join(dir, record.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Grey hatched windows are not a valid measurement of the service",
		"window not a valid measurement (hatched)",
		"generator: refused (not sent)",
		"windows not a valid measurement",
	} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	t.Logf("%d rows: %d measured, %d refused (max_in_flight) in %d windows, %d cut short; %d invalid windows", rows, measured, refused, len(refusedAt), cut, invalid)
}
