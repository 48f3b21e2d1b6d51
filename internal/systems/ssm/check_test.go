package ssm

import (
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/testbed"
	"github.com/faultbench/faultbench/internal/testbed/local"
)

const checkBase = `name: check
cluster:
  system: ssm
  nodes: 4
  options: {OPTS}
workload: {driver: ssm, rate: 10}
phases: [{name: warmup, duration: 10s}, {name: fault, duration: 10s}]
faults:
  - {type: FAULT}
`

func checkScenario(t *testing.T, opts, fault string) error {
	t.Helper()
	y := strings.NewReplacer("{OPTS}", "{"+opts+"}", "FAULT", fault).Replace(checkBase)
	sc, err := scenario.Parse([]byte(y), "check.yaml")
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, y)
	}
	plan, err := local.Backend{}.Plan(testbed.FromScenario(sc.Cluster, ""))
	if err != nil {
		t.Fatal(err)
	}
	return system{}.Check(sc, plan)
}

// Check rejects, with file:line and key, the replication settings the
// issue names, before anything runs; good settings pass. (Fault parameters
// are checked by fault.Validate: see internal/cli's params test.)
func TestCheckErrors(t *testing.T) {
	for _, tc := range []struct{ opts, fault, want string }{
		{`w: "2", wq: "3"`, `bitflip, node: 2, at: 12s, duration: 1s`, "check.yaml:5: cluster.options.wq: wq 3 > w 2"},
		{`r: "4"`, `bitflip, node: 2, at: 12s, duration: 1s`, "check.yaml:5: cluster.options.r: r 4 > w 3"},
		{`wq: "0"`, `bitflip, node: 2, at: 12s, duration: 1s`, "cluster.options.wq: wq \"0\": want a whole number"},
		{`w: "5", wq: "4"`, `bitflip, node: 2, at: 12s, duration: 1s`, "wq 4 needs at least 4 bricks; the cluster has 3"},
		{``, `bitflip, node: 1, at: 12s, duration: 1s`, "node 1 is a front end"},
	} {
		err := checkScenario(t, tc.opts, tc.fault)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("options {%s}, fault {%s}:\n got %v\nwant %q", tc.opts, tc.fault, err, tc.want)
		}
	}
	for _, fault := range []string{
		`bitflip, node: 2, at: 12s, duration: 1s, params: {target: expiry, which: latest, count: "4"}`,
		`bitflip, node: 3, at: 12s, duration: 1s, params: {target: stack}`,
		`slow, node: 2, at: 12s, duration: 5s, params: {delay: 50ms}`,
		`loss, node: 2, at: 12s, duration: 5s, params: {loss: "0.7", rto: 100ms}`,
	} {
		if err := checkScenario(t, `w: "3", wq: "2", r: "2"`, fault); err != nil {
			t.Errorf("fault {%s}: %v", fault, err)
		}
	}
}
