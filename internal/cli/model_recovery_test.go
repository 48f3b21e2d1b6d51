package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/model"
	"github.com/faultbench/faultbench/internal/record"
)

// writeRecoveryRun writes a synthetic run directory: quickstart's scenario
// with the given client count, a crash of node 3 restarted by the operator
// at restartS, and requests to node 3 whose first ok one after the restart
// completes recovery seconds later.
func writeRecoveryRun(t *testing.T, clients int, restartS, recovery float64) string {
	t.Helper()
	dir := t.TempDir()
	sc, err := os.ReadFile("../../examples/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Replace(string(sc), "clients: 4", "clients: "+itoa(clients), 1)
	if err := os.WriteFile(filepath.Join(dir, record.ScenarioFile), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	ev, err := record.CreateEventLog(filepath.Join(dir, record.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []record.Event{
		{TS: 0, Kind: "node.up", Node: 3}, // start-up: not a restart
		{TS: restartS - 5, Kind: "fault.inject", Node: 3, Fault: "app-crash"},
		{TS: restartS - 5, Kind: "node.down", Node: 3},
		{TS: restartS, Kind: "operator.action", Node: 3},
		{TS: restartS + 0.01, Kind: "node.up", Node: 3},
	} {
		ev.Add(e)
	}
	if err := ev.Close(); err != nil {
		t.Fatal(err)
	}
	pw, err := record.CreateParquet(filepath.Join(dir, record.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	done := restartS + recovery
	for _, r := range []record.Request{
		{StartS: restartS - 10, LatencyS: 0.001, Outcome: record.OK, Node: 3},           // before the crash
		{StartS: restartS - 0.5, LatencyS: 1, Outcome: record.OK, Node: 3},              // sent before the restart
		{StartS: restartS + 0.001, LatencyS: 0.002, Outcome: record.ConnError, Node: 3}, // refused: not served
		{StartS: restartS + 0.002, LatencyS: 0.001, Outcome: record.OK, Node: 2},        // another node
		{StartS: done - 0.003, LatencyS: 0.003, Outcome: record.OK, Node: 3},            // the first served
		{StartS: done + 1, LatencyS: 0.001, Outcome: record.OK, Node: 3},
	} {
		if err := pw.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestRecoveryFromRuns(t *testing.T) {
	a := writeRecoveryRun(t, 1, 30, 0.2)
	b := writeRecoveryRun(t, 1, 40, 0.4)
	c := writeRecoveryRun(t, 8, 30, 0.9)
	stdout, stderr, code := run(t, "model", "kofn", "--mttf", "1m", "--mttf-grid", "1h", "--unit", "s", "--json",
		"--recovery-from", a+","+b, "--recovery-from", c)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var st recoveryStudy
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-6*math.Max(1, math.Abs(want)) }
	if len(st.Groups) != 2 || st.Groups[0].Clients != 1 || st.Groups[1].Clients != 8 {
		t.Fatalf("groups %+v", st.Groups)
	}
	if g := st.Groups[0]; g.Runs != 2 || g.Restarts != 2 || g.Recovered != 2 || !near(g.MeanS, 0.3) || !near(g.MaxS, 0.4) {
		t.Errorf("1 client: %+v, want 2 restarts of mean 0.3 s, max 0.4 s", g)
	}
	if g := st.Groups[1]; g.Restarts != 1 || !near(g.MeanS, 0.9) {
		t.Errorf("8 clients: %+v, want one restart of 0.9 s", g)
	}
	if !near(st.MeanS, 0.5) {
		t.Errorf("mean recovery %v, want 0.5", st.MeanS)
	}
	if len(st.Rows) != 2 {
		t.Fatalf("rows %+v", st.Rows)
	}
	// λ = 1/60 s: without restart 11/(6λ) = 110 s, the paper's "only 50
	// seconds" more than one replica; with restart the closed form at μ = 2/s.
	r := st.Rows[0]
	if !near(r.ReplicaMTTF, 60) || !near(r.MTTFNoRestart, 110) || !near(r.MTTFWithRestart, model.MTTF3ReplicasRestart(1.0/60, 2)) {
		t.Errorf("row %+v", r)
	}
	if st.Rows[1].MTTFWithRestart <= r.MTTFWithRestart {
		t.Errorf("a rarer fault must give a longer MTTF: %+v", st.Rows)
	}
	table, _, _ := run(t, "model", "kofn", "--mttf", "1m", "--unit", "s", "--recovery-from", a)
	if !strings.Contains(table, "mttf_restart_s") || !strings.Contains(table, "0.2000") {
		t.Errorf("table:\n%s", table)
	}
}

func TestRecoveryFromBadInput(t *testing.T) {
	a := writeRecoveryRun(t, 1, 30, 0.2)
	for _, args := range [][]string{
		{"--recovery-from", a, "--mttr", "1s"},
		{"--recovery-from", t.TempDir()},
	} {
		_, stderr, code := run(t, append([]string{"model", "kofn", "--mttf", "1m"}, args...)...)
		if code != ExitBadInput {
			t.Errorf("%v: exit %d, want bad input: %s", args, code, stderr)
		}
	}
	// A run without restarts names the remedy.
	quiet := writeRecoveryRun(t, 1, 30, 0.2)
	if err := os.WriteFile(filepath.Join(quiet, record.EventsFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := run(t, "model", "kofn", "--mttf", "1m", "--recovery-from", quiet)
	if code != ExitBadInput || !strings.Contains(stderr, "operator.action") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}
