package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// OutputPath is where Write puts the report when out is empty: DIR/report.html
// for one run, ./report.html for several.
func OutputPath(dirs []string, out string) string {
	switch {
	case out != "":
		return out
	case len(dirs) == 1:
		return filepath.Join(dirs[0], "report.html")
	}
	return "report.html"
}

// FiguresDir is where Write puts the PNG and SVG files of a report written
// to out: "figures" beside it for report.html, else "<stem>-figures", so
// several reports can share a directory.
func FiguresDir(out string) string {
	stem := strings.TrimSuffix(filepath.Base(out), filepath.Ext(out))
	if stem == "report" {
		return filepath.Join(filepath.Dir(out), "figures")
	}
	return filepath.Join(filepath.Dir(out), stem+"-figures")
}

// Write reads the results directories dirs and writes one self-contained
// HTML report to out (see OutputPath when out is empty) plus every figure
// as PNG and SVG in FiguresDir(out). With several directories, every
// figure and table compares the runs side by side, in the order given.
//
// Each directory needs requests.parquet or requests.csv; every other file
// is optional and what it would have added is reported as missing inside
// the report. Write prints nothing; errors name the file at fault.
func Write(dirs []string, out string) error { return WriteText(dirs, out, nil) }

// WriteText is Write that also prints to text, compactly, the tables that
// compare many runs (the behaviour table of Brown and Patterson 2000, Table 1 and the
// reconstruction trade-off of §4.2) when the runs call for them; it prints
// nothing otherwise, and nothing at all with a nil text.
func WriteText(dirs []string, out string, text io.Writer) error {
	return WriteWith(dirs, out, Options{Text: text})
}

// Options are the report's choices beyond its inputs and output.
type Options struct {
	// Text receives the tables that compare many runs (see WriteText).
	Text io.Writer
	// Warn receives, one line each, the differences between the runs
	// compared that change what their metrics mean; the report shows them
	// too. nil prints nothing.
	Warn io.Writer
	// AllowMixedSchemas sets runs analysed under different schema versions
	// side by side instead of returning ErrMixedSchemas.
	AllowMixedSchemas bool
}

// WriteWith is Write with Options. Runs whose summaries were computed
// under different schema versions are refused (ErrMixedSchemas) unless
// opts.AllowMixedSchemas; every other difference in definitions is a
// warning.
func WriteWith(dirs []string, out string, opts Options) error {
	text := opts.Text
	if len(dirs) == 0 {
		return errors.New("report: no results directory given")
	}
	out = OutputPath(dirs, out)
	runs := make([]*run, 0, len(dirs))
	for _, d := range dirs {
		r, err := loadRun(d)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	uniqueLabels(runs)
	mixed, warnings := comparability(runs)
	if mixed != nil && !opts.AllowMixedSchemas {
		return mixed
	}
	if opts.Warn != nil {
		for _, w := range warnings {
			fmt.Fprintf(opts.Warn, "warning: %s\n", w)
		}
	}
	figs := figures(runs)
	figDir := FiguresDir(out)
	if err := os.MkdirAll(figDir, 0o755); err != nil {
		return err
	}
	rendered := make([]renderedFigure, 0, len(figs))
	for _, fg := range figs {
		svg, err := fg.svg()
		if err != nil {
			return fmt.Errorf("figure %s: %w", fg.Name, err)
		}
		png, err := fg.png()
		if err != nil {
			return fmt.Errorf("figure %s: %w", fg.Name, err)
		}
		for ext, b := range map[string][]byte{".svg": svg, ".png": png} {
			if err := writeFile(filepath.Join(figDir, fg.Name+ext), b); err != nil {
				return err
			}
		}
		rel, err := filepath.Rel(filepath.Dir(out), figDir)
		if err != nil {
			rel = figDir
		}
		rendered = append(rendered, renderedFigure{figure: fg, SVG: inlineSVG(svg), Link: filepath.ToSlash(filepath.Join(rel, fg.Name))})
	}
	var b bytes.Buffer
	if err := writeHTML(&b, runs, rendered, warnings); err != nil {
		return err
	}
	if err := writeFile(out, b.Bytes()); err != nil {
		return err
	}
	if text != nil {
		return writeText(text, behaviourTable(runs), macroTable(runs))
	}
	return nil
}

// figures lists the report's figures in reading order; figures without
// data (no faults with stages) are left out.
func figures(runs []*run) []*figure {
	figs := []*figure{
		availabilityFigure(runs),
		boxFigure(runs),
		pExceedFigure(runs),
		goodputFigure(runs),
		rawFigure(runs),
		averageFigure(runs),
		demeritsFigure(runs),
		histogramFigure(runs),
		haircutFigure(runs),
	}
	if s := stagesFigure(runs); s != nil {
		figs = append(figs, s)
	}
	if k := kneeFigure(runs); k != nil {
		figs = append(figs, k)
	}
	return figs
}

// uniqueLabels disambiguates runs with the same name by their directory.
func uniqueLabels(runs []*run) {
	count := map[string]int{}
	for _, r := range runs {
		count[r.Label]++
	}
	seen := map[string]int{}
	for _, r := range runs {
		if count[r.Label] < 2 {
			continue
		}
		base := filepath.Base(filepath.Clean(r.Dir))
		l := r.Label + " (" + base + ")"
		seen[l]++
		if seen[l] > 1 {
			l = fmt.Sprintf("%s #%d", l, seen[l])
		}
		r.Label = l
	}
}

// writeFile replaces path atomically so a reader never sees half a report.
func writeFile(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
