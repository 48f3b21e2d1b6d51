package reproduce

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/faultbench/faultbench/internal/sweep"
)

// Run status of a repetition.
const (
	StatusComplete   = "complete"
	StatusFailed     = "failed"
	StatusIncomplete = "incomplete"
)

// Report is reproduce.json: every claim of the selected papers with its
// verdict, from what the results directory holds.
type Report struct {
	Command string        `json:"command,omitempty"`
	Papers  []PaperReport `json:"papers"`
}

// PaperReport is one paper's table.
type PaperReport struct {
	Key         string             `json:"key"`
	Cite        string             `json:"cite"`
	Title       string             `json:"title"`
	Docs        string             `json:"docs,omitempty"`
	Counts      map[Verdict]int    `json:"counts"`
	Claims      []ClaimReport      `json:"claims"`
	Experiments []ExperimentReport `json:"experiments"`
}

// ClaimReport is one row: published beside measured.
type ClaimReport struct {
	ID            string          `json:"id"`
	Location      string          `json:"location"`
	Published     any             `json:"published"` // a number, a text, or [lo, hi] with null for an open end
	PublishedText string          `json:"published_text"`
	Rule          string          `json:"rule,omitempty"`
	Tolerance     string          `json:"tolerance,omitempty"`
	Source        string          `json:"source,omitempty"` // experiment/run and key or events
	Measured      *MeasuredReport `json:"measured,omitempty"`
	Verdict       Verdict         `json:"verdict"`
	Note          string          `json:"note,omitempty"`   // why it failed, or how many runs it rests on
	Reason        string          `json:"reason,omitempty"` // where it is close or differs: one sentence from the docs
	Basis         string          `json:"basis,omitempty"`
	Missing       string          `json:"missing,omitempty"`
	Runs          []RunRef        `json:"runs,omitempty"`
}

// MeasuredReport is the aggregate and every repetition's value.
type MeasuredReport struct {
	Value     any      `json:"value"`
	Text      string   `json:"text"` // as the table prints it, e.g. "C-1 (3 of 3)"
	Values    []any    `json:"values"`
	Aggregate string   `json:"aggregate"`
	Min       *float64 `json:"min,omitempty"`
	Max       *float64 `json:"max,omitempty"`
}

// RunRef is one repetition's directory, relative to reproduce.json.
type RunRef struct {
	Dir    string `json:"dir"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	Link   string `json:"link,omitempty"` // its report.html, model.json or sweep.json
	// Figures are the SVG figures a model command drew (-o {dir}/...).
	Figures []string `json:"figures,omitempty"`
}

// ExperimentReport lists an experiment's runs and their status.
type ExperimentReport struct {
	ID   string   `json:"id"`
	Kind string   `json:"kind"`
	What string   `json:"what,omitempty"`
	Runs []RunRef `json:"runs"`
}

// Execute runs the plan's jobs through sweep.RunBatch, then evaluates
// every claim of the plan's papers from what out holds and writes
// reproduce.json and reproduce.html. An interrupted batch still writes
// the tables of what finished, and returns the interruption.
func (pl *Plan) Execute(ctx context.Context, opt sweep.BatchOptions) (*Report, sweep.BatchResult, error) {
	res, runErr := sweep.RunBatch(ctx, pl.Jobs, opt)
	if runErr != nil && ctx.Err() == nil {
		return nil, res, runErr
	}
	rep, err := pl.Table()
	if err != nil {
		return rep, res, err
	}
	return rep, res, runErr
}

// Table judges every claim of the plan's papers from what the results
// directory holds, whatever made it, and writes reproduce.json and
// reproduce.html there. Execute ends with it; --table-only is only it.
func (pl *Plan) Table() (*Report, error) {
	rep, err := Evaluate(pl.Papers, pl.opt.Out)
	if err != nil {
		return nil, err
	}
	rep.Command = pl.opt.Command
	if err := rep.Write(pl.opt.Out); err != nil {
		return rep, err
	}
	return rep, nil
}

// Evaluate judges every claim of papers from the runs under out, whatever
// invocation made them.
func Evaluate(papers []*Paper, out string) (*Report, error) {
	ev := &evaluator{out: out, reps: map[string][]repetition{}}
	rep := &Report{}
	for _, p := range papers {
		pr := PaperReport{Key: p.Key, Cite: p.Cite, Title: p.Title, Docs: p.Docs, Counts: map[Verdict]int{}}
		for _, v := range Verdicts {
			pr.Counts[v] = 0
		}
		for _, e := range p.Experiments {
			er := ExperimentReport{ID: e.ID, Kind: e.Kind(), What: e.What}
			for _, run := range e.RunIDs() {
				for _, r := range ev.repetitions(p, e, run) {
					er.Runs = append(er.Runs, r.ref)
				}
			}
			pr.Experiments = append(pr.Experiments, er)
		}
		for _, c := range p.Claims {
			cr := ev.claim(p, c)
			cr.Note = ev.relText(cr.Note)
			pr.Counts[cr.Verdict]++
			pr.Claims = append(pr.Claims, cr)
		}
		rep.Papers = append(rep.Papers, pr)
	}
	return rep, nil
}

type repetition struct {
	n     int
	dir   string
	scale float64
	ref   RunRef
}

type evaluator struct {
	out  string
	reps map[string][]repetition
}

// repetitions lists out/paper/exp/run/rN in order of N, with their status.
func (ev *evaluator) repetitions(p *Paper, e *Experiment, run string) []repetition {
	key := p.Key + "/" + e.ID + "/" + run
	if r, ok := ev.reps[key]; ok {
		return r
	}
	base := filepath.Join(ev.out, p.Key, e.ID, run)
	entries, _ := os.ReadDir(base)
	var reps []repetition
	for _, de := range entries {
		n, err := strconv.Atoi(strings.TrimPrefix(de.Name(), "r"))
		if !de.IsDir() || !strings.HasPrefix(de.Name(), "r") || err != nil || n < 1 {
			continue
		}
		dir := filepath.Join(base, de.Name())
		r := repetition{n: n, dir: dir, scale: e.TimeScale}
		r.ref = RunRef{Dir: ev.rel(dir)}
		switch e.Kind() {
		case KindExamples:
			ev.exampleStatus(&r)
		case KindModel:
			ev.fileStatus(&r, ModelFile)
		case KindSweep:
			ev.sweepStatus(&r)
		}
		reps = append(reps, r)
	}
	sort.Slice(reps, func(i, j int) bool { return reps[i].n < reps[j].n })
	ev.reps[key] = reps
	return reps
}

func (ev *evaluator) rel(p string) string {
	r, err := filepath.Rel(ev.out, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(r)
}

// relText writes the files a note names relative to the results
// directory, as the table's links are: the table reads the same wherever
// the directory is judged from (a copy, another -o spelling).
func (ev *evaluator) relText(s string) string {
	return strings.ReplaceAll(s, filepath.Clean(ev.out)+string(filepath.Separator), "")
}

func (ev *evaluator) exampleStatus(r *repetition) {
	if reason, ok := sweep.FailedReason(r.dir); ok {
		r.ref.Status, r.ref.Reason = StatusFailed, reason
		return
	}
	var meta runMeta
	if data, err := os.ReadFile(filepath.Join(r.dir, MetaFile)); err == nil && json.Unmarshal(data, &meta) == nil && meta.TimeScale > 0 {
		r.scale = meta.TimeScale
	}
	if !sweep.Complete(r.dir) {
		r.ref.Status, r.ref.Reason = StatusIncomplete, "no complete summary.json: the run was interrupted (--resume redoes it)"
		return
	}
	r.ref.Status = StatusComplete
	if fileExists(filepath.Join(r.dir, "report.html")) {
		r.ref.Link = ev.rel(filepath.Join(r.dir, "report.html"))
	}
}

func (ev *evaluator) fileStatus(r *repetition, file string) {
	if reason, ok := sweep.FailedReason(r.dir); ok {
		r.ref.Status, r.ref.Reason = StatusFailed, reason
		return
	}
	if !fileExists(filepath.Join(r.dir, file)) {
		r.ref.Status, r.ref.Reason = StatusIncomplete, "no "+file+": the run was interrupted (--resume redoes it)"
		return
	}
	r.ref.Status, r.ref.Link = StatusComplete, ev.rel(filepath.Join(r.dir, file))
	svgs, _ := filepath.Glob(filepath.Join(r.dir, "*.svg"))
	for _, f := range svgs {
		r.ref.Figures = append(r.ref.Figures, ev.rel(f))
	}
}

// sweepStatus collects the repetition's runs into its sweep.json (the
// analysis the claims read); a repetition with runs still missing or
// failed is judged on those that completed, as the sweep command does.
func (ev *evaluator) sweepStatus(r *repetition) {
	dirs, err := sweep.RunDirs(r.dir)
	if err != nil || len(dirs) == 0 {
		r.ref.Status, r.ref.Reason = StatusIncomplete, "no sweep runs yet"
		return
	}
	t, err := sweep.Collect(dirs, r.dir)
	if err != nil {
		r.ref.Status, r.ref.Reason = StatusFailed, "collecting the sweep: "+err.Error()
		return
	}
	failed := 0
	for _, row := range t.Rows {
		if row.Status != sweep.StatusComplete {
			failed++
		}
	}
	if failed == len(t.Rows) {
		r.ref.Status, r.ref.Reason = StatusFailed, fmt.Sprintf("all %d runs failed or are incomplete (first: %s)", failed, t.Rows[0].Reason)
		return
	}
	r.ref.Status, r.ref.Link = StatusComplete, ev.rel(filepath.Join(r.dir, sweep.AnalysisFile))
	if failed > 0 {
		r.ref.Reason = fmt.Sprintf("%d of %d runs failed or are incomplete and are left out", failed, len(t.Rows))
	}
}

func (ev *evaluator) claim(p *Paper, c *Claim) ClaimReport {
	cr := ClaimReport{ID: c.ID, Location: c.Location, Published: publishedJSON(c.Published), PublishedText: c.Published.String()}
	switch {
	case c.Basis != "":
		cr.Verdict, cr.Basis = ByConstruction, c.Basis
		return cr
	case c.Measure == nil:
		cr.Verdict, cr.Missing = NotMeasured, c.Missing
		return cr
	}
	cr.Rule, cr.Tolerance, cr.Source = c.Rule, c.ToleranceText(), measureSource(c.Measure)
	vals, refs, problems, ran := ev.values(p, c.Measure)
	cr.Runs = refs
	if len(vals) == 0 {
		if !ran {
			cr.Verdict, cr.Note = NotMeasured, fmt.Sprintf("not run: `faultbench reproduce %s --only %s`", p.Key, strings.Join(measureExperiments(c.Measure), ","))
			return cr
		}
		cr.Verdict, cr.Note = Failed, strings.Join(problems, "; ")
		return cr
	}
	agg, err := aggregate(vals, c.Measure.Aggregate)
	if err != nil {
		cr.Verdict, cr.Note = Failed, err.Error()
		return cr
	}
	cr.Measured = measuredJSON(agg)
	v, err := judge(c, agg.Value)
	cr.Verdict = v
	if err != nil {
		cr.Note = err.Error()
	}
	if len(problems) > 0 {
		cr.Note = strings.TrimPrefix(cr.Note+"; ", "; ") + fmt.Sprintf("%d repetition(s) gave no value: %s", len(problems), strings.Join(problems, "; "))
	}
	if v == Close || v == Differs {
		cr.Reason = c.Reason
	}
	return cr
}

// values reads the measurement of every repetition; ran says whether any
// repetition exists at all.
func (ev *evaluator) values(p *Paper, m *Measure) (vals []Value, refs []RunRef, problems []string, ran bool) {
	e := p.Experiment(m.Experiment)
	reps := ev.repetitions(p, e, m.Run)
	var per []repetition
	if m.Per != nil {
		per = ev.repetitions(p, p.Experiment(m.Per.Experiment), m.Per.Run)
	}
	for _, r := range reps {
		refs = append(refs, r.ref)
	}
	for _, r := range per {
		refs = append(refs, r.ref)
	}
	ran = len(reps) > 0 || len(per) > 0
	for i, r := range reps {
		if r.ref.Status != StatusComplete {
			problems = append(problems, fmt.Sprintf("%s %s: %s", r.ref.Dir, r.ref.Status, r.ref.Reason))
			continue
		}
		v, err := readValue(e.Kind(), r.dir, m, r.scale)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if m.Per != nil {
			if i >= len(per) {
				problems = append(problems, fmt.Sprintf("%s: no repetition %d of %s/%s to divide by", r.ref.Dir, r.n, m.Per.Experiment, m.Per.Run))
				continue
			}
			if per[i].ref.Status != StatusComplete {
				problems = append(problems, fmt.Sprintf("%s %s: %s", per[i].ref.Dir, per[i].ref.Status, per[i].ref.Reason))
				continue
			}
			d, err := readValue(p.Experiment(m.Per.Experiment).Kind(), per[i].dir, m.Per, per[i].scale)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			if d.IsText || d.Num == 0 {
				problems = append(problems, fmt.Sprintf("%s: cannot divide by %s", per[i].ref.Dir, d))
				continue
			}
			v.Num /= d.Num
		}
		vals = append(vals, v)
	}
	if len(reps) == 0 && ran {
		problems = append(problems, fmt.Sprintf("%s/%s did not run", m.Experiment, m.Run))
	}
	return vals, refs, problems, ran
}

func measureExperiments(m *Measure) []string {
	ids := []string{m.Experiment}
	if m.Per != nil && m.Per.Experiment != m.Experiment {
		ids = append(ids, m.Per.Experiment)
	}
	return ids
}

func measureSource(m *Measure) string {
	s := m.Experiment + "/" + m.Run + " "
	switch {
	case m.Events != nil:
		s += "events " + m.Events.From + " → " + m.Events.To + " (s)"
	case m.Answered != nil:
		s += "share of " + m.Answered.From + " answered by " + m.Answered.To
	case m.Drop != nil:
		s += "worst window's drop below the baseline mean from " + m.Drop.From + " to " + m.Drop.To
	case m.Largest != nil:
		s += "largest " + m.Largest.Param + " with " + m.Largest.Text()
	case m.Falls != nil:
		s += "first " + m.Falls.Param + " past the peak with " + m.Falls.Text()
	case m.Config > 0:
		s += fmt.Sprintf("cfg-%04d-r1 %s", m.Config, m.Key)
	default:
		s += m.Key
	}
	if m.Unscale {
		s += " ÷ time scale"
	}
	if m.Factor != 0 {
		s += " × " + formatNum(m.Factor)
	}
	if m.Per != nil {
		s += " ÷ " + measureSource(m.Per)
	}
	return s
}

func publishedJSON(p Published) any {
	switch {
	case p.IsText:
		return p.Text
	case p.IsRange:
		b := []any{p.Lo, p.Hi}
		if math.IsInf(p.Lo, 0) {
			b[0] = nil
		}
		if math.IsInf(p.Hi, 0) {
			b[1] = nil
		}
		return b
	}
	return p.Num
}

func valueJSON(v Value) any {
	if v.IsText {
		return v.Text
	}
	if math.IsNaN(v.Num) || math.IsInf(v.Num, 0) {
		return nil
	}
	return v.Num
}

func measuredJSON(a Aggregated) *MeasuredReport {
	m := &MeasuredReport{Value: valueJSON(a.Value), Text: a.String(), Aggregate: a.How}
	for _, v := range a.Values {
		m.Values = append(m.Values, valueJSON(v))
	}
	if !a.Value.IsText {
		lo, hi := a.Min, a.Max
		m.Min, m.Max = &lo, &hi
	}
	return m
}
