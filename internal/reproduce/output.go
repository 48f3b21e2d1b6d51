package reproduce

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/faultbench/faultbench/internal/report"
)

// Write puts reproduce.json and reproduce.html into out.
func (r *Report) Write(out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := writeJSONFile(filepath.Join(out, JSONFile), r); err != nil {
		return err
	}
	var b bytes.Buffer
	if err := report.WriteDoc(&b, r.doc()); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, HTMLFile), b.Bytes(), 0o644)
}

var verdictClass = map[Verdict]string{Agrees: "agrees", Close: "close", Differs: "differs", Failed: "failed",
	NotMeasured: "unmeasured", ByConstruction: "construction"}

func (r *Report) doc() report.Doc {
	d := report.Doc{Title: "faultbench reproduce: published beside measured"}
	d.Intro = []string{
		"Each row is one published table cell, figure reading or stated number: where it is in the paper, the value the paper gives, the value faultbench measured (aggregated over repetitions), the tolerance fixed before measuring and why, and the verdict.",
		"Verdicts: agrees (within the tolerance), close (within the close tolerance, or the same behaviour class letter), differs (the reason is the docs' own sentence), not measured (no experiment yet, or not run), by construction (behaviour built to match the paper: never counted as agreement), failed (the runs that measure it failed).",
	}
	if r.Command != "" {
		d.Intro = append(d.Intro, "Command: "+r.Command)
	}
	for _, p := range r.Papers {
		sec := report.DocSection{ID: p.Key, Heading: fmt.Sprintf("%s: %s, %s", p.Key, p.Cite, p.Title)}
		var counts []string
		for _, v := range Verdicts {
			if p.Counts[v] > 0 {
				counts = append(counts, fmt.Sprintf("%d %s", p.Counts[v], v))
			}
		}
		intro := fmt.Sprintf("%d claims: %s.", len(p.Claims), strings.Join(counts, ", "))
		if p.Docs != "" {
			intro += " Discussed in " + p.Docs + "."
		}
		sec.Intro = []string{intro}
		t := report.DocTable{Head: []string{"location", "published", "measured", "tolerance", "verdict", "reason / note", "runs"}}
		for _, c := range p.Claims {
			measured := "–"
			if c.Measured != nil {
				measured = c.Measured.Text
			}
			note := c.Reason
			switch c.Verdict {
			case ByConstruction:
				note = c.Basis
			case NotMeasured:
				note = strings.TrimSpace(c.Missing + " " + c.Note)
			}
			if c.Note != "" && c.Verdict != NotMeasured {
				note = strings.TrimSpace(note + " (" + c.Note + ")")
			}
			tol := c.Tolerance
			if c.Source != "" {
				tol = strings.TrimSpace(tol + " [" + c.Source + "]")
			}
			var links []report.DocLink
			for _, run := range c.Runs {
				href := run.Link
				if href == "" {
					href = run.Dir + "/"
				}
				label := strings.TrimPrefix(run.Dir, p.Key+"/")
				if run.Status != StatusComplete {
					label += " (" + run.Status + ")"
				}
				links = append(links, report.DocLink{Text: label, Href: href})
				for _, fig := range run.Figures {
					links = append(links, report.DocLink{Text: path.Base(fig), Href: fig})
				}
			}
			t.Rows = append(t.Rows, report.DocRow{Cells: []report.DocCell{
				{Text: c.Location, Class: "text"},
				{Text: c.PublishedText},
				{Text: measured},
				{Text: tol, Class: "text"},
				{Text: string(c.Verdict), Class: verdictClass[c.Verdict]},
				{Text: note, Class: "text"},
				{Links: links, Class: "text"},
			}})
		}
		sec.Tables = append(sec.Tables, t)
		et := report.DocTable{Caption: "Experiments", Head: []string{"experiment", "kind", "what", "runs"}}
		for _, e := range p.Experiments {
			done := 0
			var bad []string
			for _, run := range e.Runs {
				if run.Status == StatusComplete {
					done++
				} else {
					bad = append(bad, run.Dir+": "+run.Status+" "+run.Reason)
				}
			}
			runs := fmt.Sprintf("%d complete of %d", done, len(e.Runs))
			if len(e.Runs) == 0 {
				runs = "not run"
			}
			if len(bad) > 0 {
				runs += "; " + strings.Join(bad, "; ")
			}
			et.Rows = append(et.Rows, report.DocRow{Cells: []report.DocCell{
				{Text: e.ID, Class: "text"}, {Text: e.Kind}, {Text: e.What, Class: "text"}, {Text: runs, Class: "text"}}})
		}
		sec.Tables = append(sec.Tables, et)
		d.Sections = append(d.Sections, sec)
	}
	return d
}

// WriteText prints one line per paper with its verdict counts, then the
// claims that differ, close or failed.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "paper\tclaims\t%s\n", strings.Join(verdictNames(), "\t"))
	for _, p := range r.Papers {
		row := []string{p.Key, fmt.Sprint(len(p.Claims))}
		for _, v := range Verdicts {
			row = append(row, fmt.Sprint(p.Counts[v]))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range r.Papers {
		for _, c := range p.Claims {
			if c.Verdict != Failed {
				continue
			}
			fmt.Fprintf(w, "%s %s: failed: %s\n", p.Key, c.ID, c.Note)
		}
	}
	return nil
}

func verdictNames() []string {
	out := make([]string, len(Verdicts))
	for i, v := range Verdicts {
		out[i] = string(v)
	}
	return out
}
