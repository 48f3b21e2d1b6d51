package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/placement"
	"github.com/faultbench/faultbench/internal/provenance"
	"github.com/faultbench/faultbench/internal/record"
)

// A run with cluster.cpus and workload.cpus records its placement in
// provenance.json, in summary.json's run section and (canonical) in the
// scenario.yaml it keeps, and gives the controller its CPUs back after.
// (That each node process runs on cluster.cpus is the local backend's
// TestNodesPinned.)
func TestPlacementRecorded(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run; skipped with -short")
	}
	own, err := placement.Allowed()
	if err != nil || len(own) < 2 {
		t.Skipf("needs two CPUs (%v, %v)", own, err)
	}
	nodes, ctl := placement.FormatCPUList(own[1:]), placement.FormatCPUList(own[:1])
	before, _ := placement.AllowedList(os.Getpid())
	p := writeScenario(t, `
name: pinned
cluster: {system: static, nodes: 1, pages: 10, page_size: 100, cpus: "`+nodes+`"}
workload: {rate: 20, cpus: "`+ctl+`"}
phases: [{name: only, duration: 1s}]
`)
	dir := filepath.Join(t.TempDir(), "out")
	if _, stderr, code := run(t, "run", p, "-o", dir, "--quiet"); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := placement.Record{HostCPUs: placement.FormatCPUList(own), NodeCPUs: nodes, ControllerCPUs: ctl, Mechanism: placement.MechanismAffinity}
	prov, err := provenance.Read(dir)
	if err != nil || prov.Placement == nil || *prov.Placement != want {
		t.Errorf("provenance.json placement %+v (%v), want %+v", prov.Placement, err, want)
	}
	var sum analysis.Summary
	b, _ := os.ReadFile(filepath.Join(dir, record.SummaryFile))
	if err := json.Unmarshal(b, &sum); err != nil || sum.Run.Placement == nil || *sum.Run.Placement != want {
		t.Errorf("summary.json run.placement %+v (%v), want %+v", sum.Run.Placement, err, want)
	}
	sc, _ := os.ReadFile(filepath.Join(dir, record.ScenarioFile))
	if !strings.Contains(string(sc), `cpus: "`+nodes+`"`) || !strings.Contains(string(sc), `cpus: "`+ctl+`"`) {
		t.Errorf("scenario.yaml lacks the placement:\n%s", sc)
	}
	if after, _ := placement.AllowedList(os.Getpid()); after != before {
		t.Errorf("the controller stays pinned after the run: %q, was %q", after, before)
	}
}
