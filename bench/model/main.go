// Command model writes the 10,000-state chains that docs/benchmarks.md
// ("Models") times through `faultbench model ctmc`, so the CLI's parse,
// ordering and solve are measured together with their peak memory:
//
//	go run ./bench/model -o /tmp/fb-chains
//	/usr/bin/time -v faultbench model ctmc /tmp/fb-chains/grid-steady.yaml
//
// grid-steady: two pools of 99 units (100×100 states), failures 1e-4 beside
// repairs 10 per unit (stiff), irreducible: steady state.
// grid-mtta: failures 1 beside repairs 0.1 per unit, "pool A exhausted" absorbing:
// mean time to absorption over 9,900 transient states.
// random: a ring plus two random edges a state, which no ordering makes
// narrow: the iterative solver's case.
// kofn: 10,000-state birth–death chain (k-of-n, n = 9,999, k = 1).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
)

func main() {
	out := flag.String("o", "/tmp/fb-chains", "directory to write the chains to")
	size := flag.Int("size", 100, "grid side: the grid chains have size² states")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for name, write := range map[string]func(*bufio.Writer){
		"grid-steady.yaml": func(w *bufio.Writer) { grid(w, *size, 1e-4, 10, false) },
		"grid-mtta.yaml":   func(w *bufio.Writer) { grid(w, *size, 1, 0.1, true) },
		"random.yaml":      func(w *bufio.Writer) { random(w, *size**size) },
	} {
		if err := writeFile(filepath.Join(*out, name), write); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func writeFile(path string, write func(*bufio.Writer)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	write(w)
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func grid(w *bufio.Writer, size int, lambda, mu float64, absorbing bool) {
	units := size - 1
	state := func(i, j int) string { return fmt.Sprintf("a%d-b%d", i, j) }
	fmt.Fprint(w, "states:\n")
	for i := 0; i < size; i++ {
		for j := 0; j < size; j++ {
			fmt.Fprintf(w, "  - %s\n", state(i, j))
		}
	}
	fmt.Fprintf(w, "initial: %s\ntransitions:\n", state(0, 0))
	for i := 0; i < size; i++ {
		for j := 0; j < size; j++ {
			if absorbing && i == units {
				continue
			}
			from := state(i, j)
			if i < units {
				fmt.Fprintf(w, "  - {from: %s, to: %s, rate: %g}\n", from, state(i+1, j), float64(units-i)*lambda)
			}
			if j < units {
				fmt.Fprintf(w, "  - {from: %s, to: %s, rate: %g}\n", from, state(i, j+1), float64(units-j)*lambda)
			}
			if i > 0 {
				fmt.Fprintf(w, "  - {from: %s, to: %s, rate: %g}\n", from, state(i-1, j), float64(i)*mu)
			}
			if j > 0 {
				fmt.Fprintf(w, "  - {from: %s, to: %s, rate: %g}\n", from, state(i, j-1), float64(j)*mu)
			}
		}
	}
	fmt.Fprint(w, "rewards:\n")
	for i := 0; i < size; i++ {
		for j := 0; j < size; j++ {
			fmt.Fprintf(w, "  %s: %d\n", state(i, j), 2*units-i-j)
		}
	}
	if absorbing {
		fmt.Fprint(w, "absorbing:\n")
		for j := 0; j < size; j++ {
			fmt.Fprintf(w, "  - %s\n", state(units, j))
		}
	}
}

func random(w *bufio.Writer, n int) {
	r := rand.New(rand.NewPCG(9, 9))
	fmt.Fprint(w, "states:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, "  - s%d\n", i)
	}
	fmt.Fprint(w, "initial: s0\ntransitions:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, "  - {from: s%d, to: s%d, rate: %g}\n", i, (i+1)%n, 1+r.Float64())
		for k := 0; k < 2; k++ {
			if j := r.IntN(n); j != i {
				fmt.Fprintf(w, "  - {from: s%d, to: s%d, rate: %g}\n", i, j, 0.1+r.Float64())
			}
		}
	}
	fmt.Fprint(w, "rewards:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, "  s%d: %d\n", i, i%7)
	}
}
