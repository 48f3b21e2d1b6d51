package operator

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/law"
)

const s = time.Second

// run feeds injections and clears to a machine in time order and returns
// its steps rendered as "t kind policy nodes fault-id [busy|idle]".
type feed struct {
	at     time.Duration
	inject bool
	occ    fault.Occurrence
}

func run(t *testing.T, m *Machine, feeds []feed, until time.Duration) []string {
	t.Helper()
	var out []string
	render := func(steps []Step) {
		for _, st := range steps {
			line := fmt.Sprintf("%v %v %s %v #%d", st.At, st.Kind, st.Policy, st.Nodes, st.Fault.ID)
			if st.Busy {
				line += " busy"
			}
			if st.Idle {
				line += " idle"
			}
			out = append(out, line)
		}
	}
	for _, f := range feeds {
		render(m.Advance(f.at))
		if f.inject {
			m.Injected(f.at, f.occ)
		} else {
			m.Cleared(f.at, f.occ)
		}
	}
	for i := 0; ; i++ {
		next, ok := m.Next()
		if !ok || next > until {
			break
		}
		if i > 100 {
			t.Fatal("machine does not settle")
		}
		render(m.Advance(next))
	}
	return out
}

func check(t *testing.T, got, want []string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("steps\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

func occ(id, node int, typ string, at time.Duration) fault.Occurrence {
	return fault.Occurrence{ID: id, Node: node, Type: typ, At: at}
}

// The paper's set-up: a sticky crash noticed after 90 s, repaired in 15 s.
func TestRestartFailed(t *testing.T) {
	m := NewMachine(Config{DetectAfter: 90 * s, Policy: RestartFailed, ActionTime: 15 * s}, 4, nil)
	got := run(t, m, []feed{{60 * s, true, occ(1, 2, "app-crash", 60*s)}}, time.Hour)
	check(t, got, []string{
		"2m30s detect restart-failed [] #1",
		"2m30s begin restart-failed [2] #1",
		"2m45s done restart-failed [2] #1",
	})
}

func TestClearedBeforeDetectionIsNeverNoticed(t *testing.T) {
	m := NewMachine(Config{DetectAfter: 90 * s, Policy: RestartFailed}, 4, nil)
	hang := occ(1, 1, "app-hang", 60*s)
	got := run(t, m, []feed{{60 * s, true, hang}, {90 * s, false, hang}}, time.Hour)
	check(t, got, nil)
}

func TestNeverDetectsOrNoPolicy(t *testing.T) {
	for _, cfg := range []Config{{Policy: RestartFailed}, {DetectAfter: s, Policy: None}, {DetectAfter: s}} {
		m := NewMachine(cfg, 2, nil)
		check(t, run(t, m, []feed{{0, true, occ(1, 1, "app-crash", 0)}}, time.Hour), nil)
	}
	m := NewMachine(Config{DetectAfter: s, Policy: RestartAll}, 2, nil)
	maint := occ(1, 1, "restart-node", 0)
	maint.Instant = true
	check(t, run(t, m, []feed{{0, true, maint}}, time.Hour), nil)
}

func TestRestartAllAndBusy(t *testing.T) {
	m := NewMachine(Config{DetectAfter: 10 * s, Policy: RestartAll, ActionTime: 20 * s}, 3, nil)
	got := run(t, m, []feed{
		{0, true, occ(1, 2, "app-crash", 0)},
		{5 * s, true, occ(2, 3, "node-freeze", 5*s)}, // noticed during the restart-all
		{40 * s, true, occ(3, 1, "app-hang", 40*s)},  // after it: a new action
	}, time.Hour)
	check(t, got, []string{
		"10s detect restart-all [] #1",
		"10s begin restart-all [1 2 3] #1",
		"15s detect restart-all [] #2 busy",
		"30s done restart-all [1 2 3] #1",
		"50s detect restart-all [] #3",
		"50s begin restart-all [1 2 3] #3",
		"1m10s done restart-all [1 2 3] #3",
	})
}

func TestRebootNodeTakesBootTime(t *testing.T) {
	m := NewMachine(Config{DetectAfter: 90 * s, Policy: RebootNode, ActionTime: 5 * s, Boot: 40 * s}, 2, nil)
	got := run(t, m, []feed{{60 * s, true, occ(1, 2, "node-freeze", 60*s)}}, time.Hour)
	check(t, got, []string{
		"2m30s detect reboot-node [] #1",
		"2m30s begin reboot-node [2] #1",
		"3m15s done reboot-node [2] #1",
	})
}

func TestNoSingleNode(t *testing.T) {
	m := NewMachine(Config{DetectAfter: s, Policy: RestartFailed}, 2, nil)
	link := fault.Occurrence{ID: 1, Type: "link-down", Link: []int{1, 2}}
	check(t, run(t, m, []feed{{0, true, link}}, time.Hour), []string{"1s detect restart-failed [] #1 idle"})
}

// The response delay is drawn from the operator's seeded stream: the same
// seed gives the same delays, and they follow the law.
func TestResponseLaw(t *testing.T) {
	law, err := law.Parse("exponential(30s)")
	if err != nil {
		t.Fatal(err)
	}
	begins := func(seed uint64) []time.Duration {
		m := NewMachine(Config{DetectAfter: s, Policy: RestartFailed, Response: law}, 1, rand.New(rand.NewPCG(seed, 9)))
		var out []time.Duration
		for i := range 2000 {
			at := time.Duration(i) * time.Hour
			m.Injected(at, occ(i+1, 1, "app-crash", at))
			for range 3 {
				next, ok := m.Next()
				if !ok {
					break
				}
				for _, st := range m.Advance(next) {
					if st.Kind == Begin {
						out = append(out, st.At-at-s)
					}
				}
			}
		}
		return out
	}
	a, b := begins(1), begins(1)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different response times")
	}
	var sum time.Duration
	for _, d := range a {
		sum += d
	}
	if mean := sum / time.Duration(len(a)); len(a) != 2000 || mean < 27*s || mean > 33*s {
		t.Fatalf("%d actions, mean response %v, want 2000 around 30s", len(a), mean)
	}
}

func TestFromScenarioErrors(t *testing.T) {
	for _, bad := range []Config{{Policy: "pray"}, {DetectAfter: -s}, {ActionTime: -s}} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
