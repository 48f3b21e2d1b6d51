package testbed_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/testbed"
	"github.com/faultbench/faultbench/internal/testbed/fake"
	_ "github.com/faultbench/faultbench/internal/testbed/local"
)

func init() {
	testbed.RegisterBackend("check-all", &fake.Backend{})
	testbed.RegisterBackend("check-bare", &fake.Backend{Offered: []string{}})
	testbed.RegisterSystem(fake.System("check-net", nil, fault.LeverNetwork))
	sessions := fake.System("check-sessions", nil)
	sessions.Drivers = []string{"ssm", "null"}
	testbed.RegisterSystem(sessions)
}

// A system's Drivers are checked by the generic check, with the system's
// hint or a generic one naming the drivers it takes.
func TestCheckDrivers(t *testing.T) {
	y := "cluster: {system: check-sessions, backend: check-all, nodes: 2}\nworkload: {driver: %s, rate: 10, trace: \"zipf:10:1.0\"}\nphases: [{name: warmup, duration: 10s}]\n"
	for _, tc := range []struct{ driver, want string }{
		{"http", "c.yaml:2: workload.driver: driver http: system check-sessions takes driver ssm, null"},
		{"ssm", ""},
	} {
		sc, err := scenario.Parse([]byte(fmt.Sprintf(y, tc.driver)), "c.yaml")
		if err != nil {
			t.Fatal(err)
		}
		err = testbed.Check(sc)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("driver %s: error %v, want %q", tc.driver, err, tc.want)
		}
	}
}

func check(t *testing.T, cluster, faults string) error {
	t.Helper()
	y := "cluster: " + cluster + "\nworkload: {rate: 10, trace: \"zipf:10:1.0\"}\nphases: [{name: warmup, duration: 10s}]\nfaults: " + faults + "\n"
	sc, err := scenario.Parse([]byte(y), "c.yaml")
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, y)
	}
	return testbed.Check(sc)
}

// Check asks the registries: an unknown backend or system, and a fault
// neither the backend nor the system has the levers for, are errors with
// file:line naming both; what they can serve passes.
func TestCheck(t *testing.T) {
	for _, tc := range []struct{ cluster, faults, want string }{
		{`{system: static, backend: netns, nodes: 2}`, `[]`,
			"c.yaml:1: cluster.backend: backend netns is not available in this build (available: "},
		{`{system: mainframe, nodes: 2}`, `[]`, "c.yaml:1: cluster.system: unknown system \"mainframe\""},
		{`{system: static, backend: check-bare, nodes: 2}`, `[{type: app-hang, node: 1, at: 1s, duration: 1s}]`,
			"c.yaml:4: faults[0].type: fault app-hang needs the process lever, which neither backend check-bare (offers none) nor system static (offers none) has"},
		{`{system: check-net, backend: check-bare, nodes: 2}`, `[{type: restart-all, at: 1s}]`,
			"fault restart-all needs the app lever, which neither backend check-bare (offers none) nor system check-net (offers network) has"},
		{`{system: static, backend: check-all, nodes: 2}`, `[{type: node-crash, node: 1, at: 1s}]`, ""},
		{`{system: static, nodes: 2}`, `[{type: node-reboot, node: 1, at: 1s}]`, ""},
	} {
		err := check(t, tc.cluster, tc.faults)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %s: %v", tc.cluster, tc.faults, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %s: error %v\nwant %s", tc.cluster, tc.faults, err, tc.want)
		}
	}
}

// The keys of the user's own program are the descriptors' to allow
// (System.Takes) and to require (System.Check): a system registered with
// Takes gets them without any edit to the scenario package, and a system
// without gets them refused, naming the systems that take them.
func TestCheckTakes(t *testing.T) {
	own := fake.System("check-own", nil)
	own.Takes = []string{testbed.TakesCommand, testbed.TakesEnv}
	testbed.RegisterSystem(own)
	for _, tc := range []struct{ cluster, want string }{
		{`{system: check-own, backend: check-all, nodes: 1, command: [x], env: [A=1]}`, ""},
		{`{system: check-own, backend: check-all, nodes: 1, image: img}`,
			"c.yaml:1: cluster.image: image is only for no system of this build (this is system: check-own)"},
		{`{system: static, nodes: 1, command: [x]}`,
			"c.yaml:1: cluster.command: command is only for system: check-own or command (this is system: static)"},
		{`{system: command, nodes: 1, port: 80, env: [A=1], command: [x]}`,
			"c.yaml:1: cluster.env: env is only for system: check-own (this is system: command)"},
		{`{system: command, nodes: 1}`, "c.yaml:1: cluster: system: command needs command: [program, args...]"},
		{`{system: command, nodes: 1, command: [x]}`, "c.yaml:1: cluster.port: system: command needs the port its nodes listen on"},
		{`{system: command, nodes: 1, command: [x], port: 8080}`, ""},
		// No system named: the default, static, which takes no command.
		{`{nodes: 1, command: [x]}`, "cluster.command: command is only for system: check-own or command (this is system: static)"},
	} {
		err := check(t, tc.cluster, "[]")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.cluster, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v\nwant %s", tc.cluster, err, tc.want)
		}
	}
}
