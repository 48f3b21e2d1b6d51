// Command sweep runs SSM's two load curves through `faultbench run`, at a
// small time scale, and draws them:
//
//   - Ling, Kiciman and Fox (2004) Fig. 17 (§6): latency as users grow, for the session front
//     end over its three backends (memory, file, ssm), from
//     examples/ssm-app-{memory,file,ssm}.yaml without their crash. Each user
//     makes one request every -think (a user of the paper listened to an
//     email for 3 s; a request here does no work but its session I/O, so
//     users think faster to load the front end at all).
//   - Figs. 11-12 (§5.3): steady-state goodput against offered load, without
//     and with self-protection, from examples/ssm-overload-{basic,aimd}.yaml
//     at each rate of -rates.
//
// Every run's results stay under -o; the program prints the tables of
// docs/ssm.md and writes two PNGs to -img.
//
//	go run ./bench/ssm/sweep [-fb faultbench] [-o /tmp/ssm-sweep] [-img docs/img] [-scale 0.5]
//	                         [-users 10,20,40,80,120,160] [-think 100ms] [-rates 150,250,...] [-port 28290]
//
// Without -fb it builds the binary into -o. Runs that already have a
// summary.json are not run again, so an interrupted sweep resumes.
package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gopkg.in/yaml.v3"
)

func main() {
	fb := flag.String("fb", "", "faultbench binary (default: go build into -o)")
	out := flag.String("o", "/tmp/ssm-sweep", "results directory")
	img := flag.String("img", "docs/img", "where the PNGs go")
	scale := flag.Float64("scale", 0.5, "--time-scale of every run")
	usersList := flag.String("users", "10,40,80,120,160,200,240", "§6: users (each one request per -think)")
	reps := flag.Int("reps", 3, "§6: runs per point (interleaved across backends; the median is kept)")
	think := flag.Duration("think", 100*time.Millisecond, "§6: a user's time between requests")
	ratesList := flag.String("rates", "150,250,350,450,600,900,1400,2000", "Figs. 11-12: offered requests/s")
	port := flag.Int("port", 28290, "cluster.port of every run")
	flag.Parse()
	users, err1 := ints(*usersList)
	rates, err2 := ints(*ratesList)
	if err := errors.Join(err1, err2); err != nil || *think <= 0 || *scale <= 0 || *reps < 1 {
		fmt.Fprintf(os.Stderr, "sweep: bad flags: %v\n", err)
		os.Exit(2)
	}
	if err := run(*fb, *out, *img, *scale, users, *think, *reps, rates, *port); err != nil {
		fmt.Fprintln(os.Stderr, "sweep:", err)
		os.Exit(1)
	}
}

func ints(list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive whole number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// point is one run's steady phase.
type point struct {
	x                   float64 // users or offered rate
	offered, ok, failed float64 // per second
	mean, p99           float64 // seconds
}

func run(fb, out, img string, scale float64, users []int, think time.Duration, reps int, rates []int, port int) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if fb == "" {
		fb = filepath.Join(out, "faultbench")
		build := exec.Command("go", "build", "-o", fb, "./cmd/faultbench")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building faultbench: %w", err)
		}
	}
	// Repetitions are interleaved (every backend at every load, then again)
	// so that a busy spell of a shared host hits the backends alike; each
	// point keeps the run with the median mean latency.
	backends := []string{"memory", "file", "ssm"}
	runs := map[string][][]point{}
	for _, b := range backends {
		runs[b] = make([][]point, len(users))
	}
	for r := 1; r <= reps; r++ {
		for i, n := range users {
			for _, backend := range backends {
				name := fmt.Sprintf("app-%s-%d-r%d", backend, n, r)
				rate := float64(n) / think.Seconds()
				p, err := runOne(fb, out, name, scale, "examples/ssm-app-"+backend+".yaml", "steady", func(sc map[string]any) {
					wl := sc["workload"].(map[string]any)
					clients := 2
					wl["clients"], wl["users"], wl["rate"] = clients, (n+clients-1)/clients, rate
					sc["phases"] = []any{phase("warmup", "8s"), phase("steady", "20s")}
					delete(sc, "faults")
					sc["cluster"].(map[string]any)["port"] = port
				})
				if err != nil {
					return err
				}
				p.x = float64(n)
				runs[backend][i] = append(runs[backend][i], p)
			}
		}
	}
	app := map[string][]point{}
	for _, b := range backends {
		for _, ps := range runs[b] {
			slices.SortFunc(ps, func(x, y point) int { return cmp.Compare(x.mean, y.mean) })
			app[b] = append(app[b], ps[len(ps)/2])
		}
	}
	overload := map[string][]point{}
	for _, kind := range []string{"basic", "aimd"} {
		for _, r := range rates {
			name := fmt.Sprintf("overload-%s-%d", kind, r)
			p, err := runOne(fb, out, name, scale, "examples/ssm-overload-"+kind+".yaml", "overload", func(sc map[string]any) {
				sc["workload"].(map[string]any)["rate"] = r
				sc["phases"] = []any{phase("warmup", "6s"), phase("overload", "20s")}
				sc["cluster"].(map[string]any)["port"] = port
			})
			if err != nil {
				return err
			}
			p.x = float64(r)
			overload[kind] = append(overload[kind], p)
		}
	}
	printTables(app, overload, think)
	return errors.Join(
		appFigure(app, think, filepath.Join(img, "ssm-app-latency-vs-users.png")),
		overloadFigure(overload, filepath.Join(img, "ssm-overload-sweep.png")))
}

func phase(name, d string) map[string]any { return map[string]any{"name": name, "duration": d} }

// runOne runs example with edit applied (unless out/name has a summary)
// and returns the steady phase.
func runOne(fb, out, name string, scale float64, example, phaseName string, edit func(map[string]any)) (point, error) {
	dir := filepath.Join(out, name)
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err != nil {
		raw, err := os.ReadFile(example)
		if err != nil {
			return point{}, err
		}
		var sc map[string]any
		if err := yaml.Unmarshal(raw, &sc); err != nil {
			return point{}, fmt.Errorf("%s: %w", example, err)
		}
		sc["name"] = "ssm-sweep-" + name
		edit(sc)
		b, err := yaml.Marshal(sc)
		if err != nil {
			return point{}, err
		}
		file := filepath.Join(out, name+".yaml")
		if err := os.WriteFile(file, b, 0o644); err != nil {
			return point{}, err
		}
		_ = os.RemoveAll(dir)
		fmt.Fprintf(os.Stderr, "== %s\n", name)
		cmd := exec.Command(fb, "run", file, "-o", dir, "--quiet", "--time-scale", strconv.FormatFloat(scale, 'g', -1, 64))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			// A threshold miss (3) still leaves results; anything else does not.
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 3 {
				return point{}, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return readPhase(filepath.Join(dir, "summary.json"), phaseName)
}

func readPhase(file, name string) (point, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return point{}, err
	}
	var s struct {
		Phases map[string]struct {
			Offered float64 `json:"offered_per_s"`
			OKRate  float64 `json:"throughput_mean_per_s"`
			Mean    float64 `json:"latency_mean_s"`
			P99     float64 `json:"latency_p99_s"`
		} `json:"phases"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return point{}, fmt.Errorf("%s: %w", file, err)
	}
	ph, ok := s.Phases[name]
	if !ok {
		return point{}, fmt.Errorf("%s: no phase %q", file, name)
	}
	p := point{offered: ph.Offered, ok: ph.OKRate, mean: ph.Mean, p99: ph.P99}
	p.failed = math.Max(p.offered-p.ok, 0)
	return p, nil
}

func printTables(app, overload map[string][]point, think time.Duration) {
	fmt.Printf("§6: users (one request per %v each) → mean / p99 latency (ms), goodput (the median of the runs)\n\n", think)
	fmt.Print("| users | offered /s |")
	for _, b := range []string{"memory", "file", "ssm"} {
		fmt.Printf(" %s mean / p99 | %s goodput |", b, b)
	}
	fmt.Print("\n|---|---|")
	fmt.Print(strings.Repeat("---|---|", 3))
	fmt.Println()
	for i, p := range app["memory"] {
		fmt.Printf("| %.0f | %.0f |", p.x, p.offered)
		for _, b := range []string{"memory", "file", "ssm"} {
			q := app[b][i]
			fmt.Printf(" %.2f / %.1f | %.3f |", q.mean*1000, q.p99*1000, q.ok/math.Max(q.offered, 1e-9))
		}
		fmt.Println()
	}
	fmt.Printf("\nFigs. 11-12: offered /s → goodput (ok /s) in the overload phase\n\n| offered /s |")
	for _, p := range overload["basic"] {
		fmt.Printf(" %.0f |", p.x)
	}
	fmt.Print("\n|---|" + strings.Repeat("---|", len(overload["basic"])) + "\n")
	for _, k := range []string{"basic", "aimd"} {
		label := map[string]string{"basic": "basic (no AIMD, no discard)", "aimd": "protected (AIMD + discard)"}[k]
		fmt.Printf("| %s |", label)
		for _, p := range overload[k] {
			fmt.Printf(" %.0f |", p.ok)
		}
		fmt.Println()
	}
}

var colors = map[string]color.Color{
	"memory": color.RGBA{0, 114, 178, 255}, "file": color.RGBA{213, 94, 0, 255}, "ssm": color.RGBA{0, 158, 115, 255},
	"basic": color.RGBA{213, 94, 0, 255}, "aimd": color.RGBA{0, 114, 178, 255},
}

func addLine(p *plot.Plot, label string, c color.Color, dashed bool, xy plotter.XYs) error {
	l, pts, err := plotter.NewLinePoints(xy)
	if err != nil {
		return err
	}
	l.Color, pts.Color, l.Width = c, c, vg.Points(1.5)
	pts.Radius = vg.Points(2)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(l, pts)
	p.Legend.Add(label, l)
	return nil
}

func appFigure(app map[string][]point, think time.Duration, file string) error {
	p := plot.New()
	p.Title.Text = "Session front end: latency as users grow (Ling, Kiciman and Fox 2004, Fig. 17)"
	p.X.Label.Text = fmt.Sprintf("users (each one request per %v)", think)
	p.Y.Label.Text = "latency (ms, log)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	var ticks []plot.Tick
	for _, q := range app["memory"] {
		ticks = append(ticks, plot.Tick{Value: q.x, Label: strconv.FormatFloat(q.x, 'f', -1, 64)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	for _, b := range []string{"memory", "file", "ssm"} {
		var mean, p99 plotter.XYs
		for _, q := range app[b] {
			mean = append(mean, plotter.XY{X: q.x, Y: math.Max(q.mean*1000, 0.01)})
			p99 = append(p99, plotter.XY{X: q.x, Y: math.Max(q.p99*1000, 0.01)})
		}
		if err := errors.Join(addLine(p, b+" mean", colors[b], false, mean), addLine(p, b+" p99", colors[b], true, p99)); err != nil {
			return err
		}
	}
	p.Add(plotter.NewGrid())
	placeLegend(p)
	p.Y.Max *= 6 // room for the legend above the lines (log axis)
	return p.Save(6.5*vg.Inch, 4*vg.Inch, file)
}

// placeLegend puts the legend in the top left corner of the data area,
// clear of the axis labels.
func placeLegend(p *plot.Plot) {
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(12), -vg.Points(4)
}

func overloadFigure(overload map[string][]point, file string) error {
	p := plot.New()
	p.Title.Text = "Overload: goodput against offered load (Ling, Kiciman and Fox 2004, Figs. 11-12)"
	p.X.Label.Text = "offered load (requests/s)"
	p.Y.Label.Text = "requests/s"
	label := map[string]string{"basic": "basic", "aimd": "protected"}
	for _, k := range []string{"basic", "aimd"} {
		var good, failed plotter.XYs
		for _, q := range overload[k] {
			good = append(good, plotter.XY{X: q.x, Y: q.ok})
			failed = append(failed, plotter.XY{X: q.x, Y: q.failed})
		}
		if err := errors.Join(addLine(p, label[k]+": goodput", colors[k], false, good), addLine(p, label[k]+": failed", colors[k], true, failed)); err != nil {
			return err
		}
	}
	p.Add(plotter.NewGrid())
	placeLegend(p)
	p.Y.Min = 0
	p.Y.Max *= 1.35 // room for the legend above the lines
	return p.Save(6.5*vg.Inch, 4*vg.Inch, file)
}
