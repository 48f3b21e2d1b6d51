package law

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	good := map[string]Law{
		"poisson(120s)":       {Name: "poisson", Mean: 120 * time.Second},
		"exponential(1m)":     {Name: "exponential", Mean: time.Minute},
		" gaussian(120s,20s)": {Name: "gaussian", Mean: 120 * time.Second, Stddev: 20 * time.Second},
		"gaussian(2s, 500ms)": {Name: "gaussian", Mean: 2 * time.Second, Stddev: 500 * time.Millisecond},
		"fixed(60s)":          {Name: "fixed", Mean: 60 * time.Second},
		"fixed(0s)":           {Name: "fixed"},
	}
	for in, want := range good {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "poisson", "poisson()", "poisson(120)", "poisson(0s)", "gaussian(1s)",
		"fixed(1s, 2s)", "weibull(1s)", "poisson(-1s)", "poisson(1s"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted", in)
		}
	}
}

// meanStddev is the plain two-pass reference.
func meanStddev(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)-1))
}

func TestLawDraws(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 20000
	cases := []struct {
		law          string
		mean, stddev float64 // seconds
	}{
		{"poisson(120s)", 120, 120}, // exponential gaps: stddev = mean
		{"exponential(30s)", 30, 30},
		{"gaussian(120s, 20s)", 120, 20},
		{"fixed(60s)", 60, 0},
	}
	for _, c := range cases {
		l, err := Parse(c.law)
		if err != nil {
			t.Fatal(err)
		}
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = l.Draw(rng).Seconds()
			if xs[i] < 0 {
				t.Fatalf("%s drew %v", c.law, xs[i])
			}
		}
		mean, sd := meanStddev(xs)
		// Loose bounds: 5 standard errors of the mean, 5% on the stddev.
		if se := c.stddev / math.Sqrt(n); math.Abs(mean-c.mean) > 5*se+1e-9 {
			t.Errorf("%s: mean %.2f, want %.2f ± %.2f", c.law, mean, c.mean, 5*se)
		}
		if math.Abs(sd-c.stddev) > 0.05*c.stddev+1e-9 {
			t.Errorf("%s: stddev %.2f, want %.2f", c.law, sd, c.stddev)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"poisson(120s)", "gaussian(120s, 20s)", "fixed(0s)", "exponential(1h)", "x(", "fixed(1s,)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(l.String())
		if err != nil || again != l {
			t.Fatalf("%q parsed as %v, which reparses as %v, %v", s, l, again, err)
		}
		if d := l.Draw(rand.New(rand.NewPCG(1, 1))); d < 0 {
			t.Fatalf("%v drew %v", l, d)
		}
	})
}
