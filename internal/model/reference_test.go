package model

import (
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/quick"

	"gonum.org/v1/gonum/mat"
)

// denseSteady is the textbook reference: solve πQ = 0 with one equation
// replaced by Σπ = 1, by dense LU. Fine for small, non-stiff chains.
func denseSteady(c *Chain) []float64 {
	n := len(c.States)
	qt := mat.NewDense(n, n, nil) // Qᵀ
	for _, t := range c.Transitions {
		qt.Set(t.To, t.From, qt.At(t.To, t.From)+t.Rate)
		qt.Set(t.From, t.From, qt.At(t.From, t.From)-t.Rate)
	}
	b := mat.NewVecDense(n, nil)
	for j := 0; j < n; j++ {
		qt.Set(n-1, j, 1)
	}
	b.SetVec(n-1, 1)
	var x mat.VecDense
	if err := x.SolveVec(qt, b); err != nil {
		return nil
	}
	return x.RawVector().Data
}

// The banded GTH solver agrees with the dense reference on random
// irreducible chains whose rates span two decades.
func TestSteadyStateMatchesDenseReference(t *testing.T) {
	f := func(seed uint64) bool {
		r := rand.New(rand.NewPCG(seed, 99))
		c := randomChainSpan(r, 2+r.IntN(25), 2)
		res, err := Solve(c)
		want := denseSteady(c)
		if err != nil || want == nil {
			return false
		}
		for i, s := range c.States {
			if d := res.SteadyState[s] - want[i]; d > 1e-10 || d < -1e-10 {
				t.Logf("seed %d state %s: %v vs %v", seed, s, res.SteadyState[s], want[i])
				return false
			}
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 200}); err != nil {
		t.Error(err)
	}
}

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// The human-readable table of the worked example, as a golden file
// (go test -run Golden -update ./internal/model/ to accept a change).
func TestPerformabilityTableGolden(t *testing.T) {
	fl, err := LoadFaultLoad("../../examples/models/press-table3.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := Evaluate(fl).WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "press-table3.golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if b.String() != string(want) {
		t.Errorf("table changed:\n%s\nwant:\n%s", b.String(), want)
	}
}
