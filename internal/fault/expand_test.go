package fault

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/faultbench/faultbench/internal/scenario"
)

func sec(s float64) scenario.Duration { return scenario.D(time.Duration(s * float64(time.Second))) }

func TestExpandDeterministicBySeed(t *testing.T) {
	faults := []scenario.Fault{
		{Type: "app-hang", Node: scenario.NodeRef{Any: true}, At: sec(10), Duration: sec(5), Every: "poisson(30s)"},
		{Type: "node-freeze", Node: scenario.NodeRef{Any: true}, At: sec(20), Duration: sec(3), Every: "gaussian(40s, 10s)"},
	}
	plan := Plan{RunLength: 1000 * time.Second, Nodes: 4}
	expand := func(seed uint64) []Occurrence {
		occ, err := Expand(faults, plan, rand.New(rand.NewPCG(seed, 0)))
		if err != nil {
			t.Fatal(err)
		}
		return occ
	}
	a, b, c := expand(7), expand(7), expand(8)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different schedules")
	}
	if reflect.DeepEqual(a, c) {
		t.Fatal("different seeds, same schedule")
	}
	nodes := map[int]bool{}
	for i, o := range a {
		if o.ID != i+1 || (i > 0 && o.At < a[i-1].At) {
			t.Fatalf("occurrence %d out of order: %+v", i, o)
		}
		if o.At >= plan.RunLength || o.Node < 1 || o.Node > 4 {
			t.Fatalf("bad occurrence %+v", o)
		}
		nodes[o.Node] = true
	}
	if len(nodes) != 4 {
		t.Fatalf("node: any hit only nodes %v", nodes)
	}
}

func TestExpandShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	occ, err := Expand([]scenario.Fault{
		{Type: "app-crash", Node: scenario.NodeRef{N: 2}, At: sec(10), Duration: sec(5), Every: "fixed(20s)"},
		{Type: "node-crash", Nodes: []int{1, 3}, At: sec(50)},
		{Type: "app-hang", Node: scenario.NodeRef{N: 1}, At: sec(1), Mode: "sticky"},
		{Type: "restart-all", At: sec(2)},
	}, Plan{RunLength: 100 * time.Second, Nodes: 3, Boot: 7 * time.Second}, rng)
	if err != nil {
		t.Fatal(err)
	}
	type short struct {
		Type     string
		Node     int
		At, Dur  float64
		Repaired bool
	}
	var got []short
	for _, o := range occ {
		got = append(got, short{o.Type, o.Node, o.At.Seconds(), o.Duration.Seconds(), o.UntilRepaired()})
	}
	want := []short{
		{"app-hang", 1, 1, 0, true},
		{"restart-all", 0, 2, 0, false},
		{"app-crash", 2, 10, 5, false},
		{"app-crash", 2, 35, 5, false},  // renewal: 10 + 5 + 20
		{"node-crash", 1, 50, 7, false}, // down for the boot time
		{"node-crash", 3, 50, 7, false},
		{"app-crash", 2, 60, 5, false},
		{"app-crash", 2, 85, 5, false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
}

// TestExpandRecurrenceLaw checks the gaps between occurrences of an
// until-repaired recurring fault against the law.
func TestExpandRecurrenceLaw(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	occ, err := Expand([]scenario.Fault{{Type: "app-crash", Node: scenario.NodeRef{N: 1}, Mode: "sticky", Every: "poisson(10s)"}},
		Plan{RunLength: 100000 * time.Second, Nodes: 1}, rng)
	if err != nil {
		t.Fatal(err)
	}
	var gaps []float64
	for i := 1; i < len(occ); i++ {
		gaps = append(gaps, (occ[i].At - occ[i-1].At).Seconds())
	}
	mean, sd := stat.MeanStdDev(gaps, nil)
	if len(gaps) < 9000 || math.Abs(mean-10) > 0.5 || math.Abs(sd-10) > 0.7 {
		t.Fatalf("%d gaps, mean %.2f, stddev %.2f; want ~10000, 10, 10", len(gaps), mean, sd)
	}
}

func TestExpandBounded(t *testing.T) {
	_, err := Expand([]scenario.Fault{{Type: "app-crash", Node: scenario.NodeRef{N: 1}, Mode: "sticky", Every: "fixed(1ms)"}},
		Plan{RunLength: time.Hour, Nodes: 1}, rand.New(rand.NewPCG(1, 1)))
	if err == nil {
		t.Fatal("an unbounded schedule was accepted")
	}
}
