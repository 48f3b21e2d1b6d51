package cli

import (
	"strings"
	"testing"
)

// Fault parameters are checked by validate, before anything runs, the same
// way for every system: an unknown key is named with its line and the keys
// the fault type takes; a bad value is named with its line and the range.
func TestFaultParamsRejectedAtValidate(t *testing.T) {
	for _, tc := range []struct {
		name, cluster, fault string
		want                 []string
	}{
		{"press unknown key", `{system: press, mode: ha, nodes: 3}`,
			`{type: link-down, node: 2, at: 1s, duration: 2s, params: {mdoe: cut}}`,
			[]string{`s.yaml:5: faults[0].params.mdoe: link-down: unknown parameter "mdoe": it takes mode`}},
		{"press bad value", `{system: press, mode: ha, nodes: 3}`,
			`{type: slow, node: 2, at: 1s, duration: 2s, params: {probability: "1.5"}}`,
			[]string{`s.yaml:5: faults[0].params.probability: slow: probability 1.5 is not in (0, 1]`}},
		{"press key of another comm fault", `{system: press, mode: ha, nodes: 3}`,
			`{type: mem-alloc-fail, node: 2, at: 1s, duration: 2s, params: {delay: 5ms}}`,
			[]string{`s.yaml:5: faults[0].params.delay: mem-alloc-fail: unknown parameter "delay": it takes count, probability`}},
		{"ssm unknown key", `{system: ssm, nodes: 4}`,
			`{type: bitflip, node: 2, at: 1s, duration: 1s, params: {cnt: "2"}}`,
			[]string{`s.yaml:5: faults[0].params.cnt: bitflip: unknown parameter "cnt": it takes count, target, which`}},
		{"ssm bad value", `{system: ssm, nodes: 4}`,
			`{type: loss, node: 2, at: 1s, duration: 1s, params: {loss: "70%"}}`,
			[]string{`s.yaml:5: faults[0].params.loss: loss: "70%" is not a number`}},
		{"ssm value out of range", `{system: ssm, nodes: 4}`,
			`{type: bitflip, node: 2, at: 1s, duration: 1s, params: {count: 0}}`,
			[]string{`s.yaml:5: faults[0].params.count: bitflip: 0: want 1 to 1000`}},
		{"network value out of range", `{system: press, mode: ha, nodes: 3}`,
			`{type: loss, node: 2, at: 1s, duration: 1s, params: {loss: 1.5}}`,
			[]string{`s.yaml:5: faults[0].params.loss: loss: loss 1.5 is not a probability in [0, 1]`}},
		{"raid unknown key", `{system: raid, nodes: 1}`,
			`{type: disk-hang-read, node: 1, disk: 1, at: 1s, mode: sticky, params: {seconds: "3"}}`,
			[]string{`s.yaml:5: faults[0].params.seconds: disk-hang-read: unknown parameter "seconds": it takes no parameters`}},
		{"raid bad value", `{system: raid, nodes: 1}`,
			`{type: replace-disk, node: 1, disk: 2, at: 1s, params: {reinsert: perhaps}}`,
			[]string{`s.yaml:5: faults[0].params.reinsert: replace-disk: "perhaps": want true or false`}},
		{"process fault takes none", `{system: static, nodes: 2}`,
			`{type: app-crash, node: 1, at: 1s, params: {signal: KILL}}`,
			[]string{`s.yaml:5: faults[0].params.signal: app-crash: unknown parameter "signal": it takes no parameters`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeScenario(t, "cluster: "+tc.cluster+`
workload: {rate: 10, trace: "zipf:10:1.0"}
phases: [{name: warmup, duration: 10s}]
faults:
  - `+tc.fault+"\n")
			_, stderr, code := run(t, "validate", p)
			if code != ExitBadInput {
				t.Fatalf("exit %d, want %d; stderr: %s", code, ExitBadInput, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}
