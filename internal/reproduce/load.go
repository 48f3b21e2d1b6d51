package reproduce

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// The data file's schema; docs/papers.md, "The data files", describes it.
type fileData struct {
	Paper       string           `yaml:"paper"`
	Cite        string           `yaml:"cite"`
	Title       string           `yaml:"title"`
	Docs        string           `yaml:"docs"`
	Experiments []experimentData `yaml:"experiments"`
	Claims      []claimData      `yaml:"claims"`
}

type experimentData struct {
	ID          string     `yaml:"id"`
	What        string     `yaml:"what"`
	Examples    []string   `yaml:"examples"`
	Sweep       string     `yaml:"sweep"`
	Model       []ModelRun `yaml:"model"`
	Repetitions int        `yaml:"repetitions"`
	TimeScale   float64    `yaml:"time_scale"`
}

type claimData struct {
	ID        string    `yaml:"id"`
	Location  string    `yaml:"location"`
	Published yaml.Node `yaml:"published"`
	Rule      string    `yaml:"rule"`
	Tolerance Tolerance `yaml:"tolerance"`
	Measure   *Measure  `yaml:"measure"`
	Basis     string    `yaml:"basis"`
	Missing   string    `yaml:"missing"`
	Reason    string    `yaml:"reason"`
	Quoted    *Quote    `yaml:"quoted"`
}

// DefaultRepetitions of an example or a sweep when the data file gives none.
const DefaultRepetitions = 3

var (
	reKey   = regexp.MustCompile(`^[a-z]+[0-9]{2}$`)
	reID    = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*$`)
	reClass = regexp.MustCompile(`^[ABCD](-[12])?$`)
)

// Parse reads one paper's data file; name is the file, for messages.
// Every problem is reported, each as "name:line: key: what is wrong
// (what to do)".
func Parse(data []byte, name string) (*Paper, error) {
	var f fileData
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %s (keys: paper, cite, title, docs, experiments, claims; docs/papers.md, \"The data files\")", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	v := &validator{file: name, root: &root}
	p := &Paper{Key: f.Paper, Cite: f.Cite, Title: f.Title, Docs: f.Docs, File: name}
	if !reKey.MatchString(p.Key) {
		v.errf(v.line("paper"), "paper", "%q: want the first author's name and the year's two digits, e.g. brown00", p.Key)
	} else if base := strings.TrimSuffix(path.Base(name), path.Ext(name)); base != p.Key && strings.HasSuffix(name, ".yaml") {
		v.errf(v.line("paper"), "paper", "%q differs from the file name %s: name the file after the key", p.Key, path.Base(name))
	}
	if p.Cite == "" {
		v.errf(v.line("cite"), "cite", "missing: give the docs/papers.md key, e.g. \"Brown and Patterson (2000)\"")
	}
	if p.Title == "" {
		v.errf(v.line("title"), "title", "missing")
	}
	for i := range f.Experiments {
		if e := v.experiment(i, &f.Experiments[i], p); e != nil {
			p.Experiments = append(p.Experiments, e)
		}
	}
	for i := range f.Claims {
		if c := v.claim(i, &f.Claims[i], p); c != nil {
			p.Claims = append(p.Claims, c)
		}
	}
	if len(v.errs) > 0 {
		return nil, errors.Join(v.errs...)
	}
	return p, nil
}

type validator struct {
	file string
	root *yaml.Node
	errs []error
}

func (v *validator) errf(line int, key, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s:%d: %s: %s", v.file, line, key, fmt.Sprintf(format, args...)))
}

// line is the line of the value at a key path (strings for mapping keys,
// ints for list indices); the deepest existing node's line when the path
// goes beyond what the file has.
func (v *validator) line(keys ...any) int {
	n := v.root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, k := range keys {
		var next *yaml.Node
		switch k := k.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == k {
						next = n.Content[i+1]
					}
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && k < len(n.Content) {
				next = n.Content[k]
			}
		}
		if next == nil {
			return line
		}
		n, line = next, next.Line
	}
	return line
}

func (v *validator) experiment(i int, d *experimentData, p *Paper) *Experiment {
	at := func(keys ...any) int { return v.line(append([]any{"experiments", i}, keys...)...) }
	key := fmt.Sprintf("experiments[%d]", i)
	e := &Experiment{ID: d.ID, What: d.What, Examples: d.Examples, Sweep: d.Sweep, Model: d.Model,
		Repetitions: d.Repetitions, TimeScale: d.TimeScale, Line: at()}
	ok := true
	if !reID.MatchString(e.ID) {
		v.errf(at("id"), key+".id", "%q: want lower-case letters, digits, '.' and '-'", e.ID)
		ok = false
	} else if p.Experiment(e.ID) != nil {
		v.errf(at("id"), key+".id", "%q is used twice: experiment ids are unique within a paper", e.ID)
		ok = false
	}
	kinds := 0
	for _, has := range []bool{len(d.Examples) > 0, d.Sweep != "", len(d.Model) > 0} {
		if has {
			kinds++
		}
	}
	if kinds != 1 {
		v.errf(at(), key, "give exactly one of examples, sweep and model (it has %d)", kinds)
		ok = false
	}
	if e.TimeScale == 0 {
		e.TimeScale = 1
	}
	if e.TimeScale < 0 || e.TimeScale > 1000 || math.IsNaN(e.TimeScale) {
		v.errf(at("time_scale"), key+".time_scale", "%v: want a factor above 0 (at most 1000)", e.TimeScale)
		ok = false
	}
	switch {
	case len(d.Model) > 0:
		if e.Repetitions > 1 {
			v.errf(at("repetitions"), key+".repetitions", "%d: a model command is deterministic and runs once; leave repetitions out", e.Repetitions)
			ok = false
		}
		e.Repetitions = 1
		seen := map[string]bool{}
		for j, m := range d.Model {
			mk := fmt.Sprintf("%s.model[%d]", key, j)
			if !reID.MatchString(m.ID) || seen[m.ID] {
				v.errf(at("model", j, "id"), mk+".id", "%q: want a unique id of lower-case letters, digits, '.' and '-'", m.ID)
				ok = false
			}
			seen[m.ID] = true
			if len(m.Args) == 0 {
				v.errf(at("model", j), mk+".args", "missing: the arguments after `faultbench model`, e.g. [session-loss, --wq, \"2\", --nines, \"3\"]")
				ok = false
			}
			for _, a := range m.Args {
				if a == "--json" {
					v.errf(at("model", j, "args"), mk+".args", "--json is added by reproduce, which reads the JSON output: leave it out")
					ok = false
				}
			}
		}
	default:
		if e.Repetitions == 0 {
			e.Repetitions = DefaultRepetitions
		}
		if e.Repetitions < 1 || e.Repetitions > 100 {
			v.errf(at("repetitions"), key+".repetitions", "%d: want 1 to 100", e.Repetitions)
			ok = false
		}
	}
	seen := map[string]bool{}
	for j, x := range d.Examples {
		if !strings.HasSuffix(x, ".yaml") || path.IsAbs(x) {
			v.errf(at("examples", j), fmt.Sprintf("%s.examples[%d]", key, j), "%q: want a scenario file relative to the repository root, e.g. examples/quickstart.yaml", x)
			ok = false
		}
		if seen[exampleID(x)] {
			v.errf(at("examples", j), fmt.Sprintf("%s.examples[%d]", key, j), "%q is listed twice", x)
			ok = false
		}
		seen[exampleID(x)] = true
	}
	if d.Sweep != "" && (!strings.HasSuffix(d.Sweep, ".yaml") || path.IsAbs(d.Sweep)) {
		v.errf(at("sweep"), key+".sweep", "%q: want a sweep file relative to the repository root", d.Sweep)
		ok = false
	}
	if !ok {
		return nil
	}
	return e
}

func (v *validator) claim(i int, d *claimData, p *Paper) *Claim {
	at := func(keys ...any) int { return v.line(append([]any{"claims", i}, keys...)...) }
	key := fmt.Sprintf("claims[%d] (%s)", i, d.ID)
	c := &Claim{ID: d.ID, Location: d.Location, Rule: d.Rule, Tolerance: d.Tolerance, Measure: d.Measure,
		Basis: strings.TrimSpace(d.Basis), Missing: strings.TrimSpace(d.Missing), Reason: strings.TrimSpace(d.Reason), Quoted: d.Quoted, Line: at()}
	n0 := len(v.errs)
	if !reID.MatchString(c.ID) {
		v.errf(at("id"), key+".id", "%q: want lower-case letters, digits, '.' and '-'", c.ID)
	}
	for _, o := range p.Claims {
		if o.ID == c.ID {
			v.errf(at("id"), key+".id", "used twice: claim ids are unique within a paper")
		}
	}
	if c.Location == "" {
		v.errf(at(), key+".location", "missing: where in the paper, e.g. \"Table 1, Correctable read, transient, Linux\"")
	}
	pub, err := parsePublished(&d.Published)
	if err != nil {
		v.errf(at("published"), key+".published", "%v", err)
	}
	c.Published = pub
	modes := 0
	for _, has := range []bool{c.Measure != nil, c.Basis != "", c.Missing != ""} {
		if has {
			modes++
		}
	}
	if modes != 1 {
		v.errf(at(), key, "give exactly one of measure (measured), basis (by construction: what was built to match the paper) and missing (not measured: what is missing)")
	}
	if c.Measure != nil {
		v.rule(c, pub, err == nil, at, key)
		if strings.TrimSpace(c.Tolerance.Why) == "" {
			v.errf(at("tolerance"), key+".tolerance.why", "missing: one line of why this tolerance, fixed before measuring")
		}
		v.measure(c.Measure, p, at, key+".measure", "measure")
	} else if c.Rule != "" || c.Tolerance != (Tolerance{}) {
		v.errf(at("rule"), key, "rule and tolerance belong to measured claims: this one has no measure")
	}
	if q := c.Quoted; q != nil {
		table := q.Column != "" || len(q.Row) > 0
		if q.Doc == "" || table == (q.Text != "") || (table && (q.Column == "" || len(q.Row) == 0)) {
			v.errf(at("quoted"), key+".quoted", "want doc and either row and column (a table cell) or text (with values)")
		}
		if q.Text != "" && len(q.Values) == 0 {
			v.errf(at("quoted"), key+".quoted.values", "missing: the published value as the text writes it, e.g. [\"9 s\"]")
		}
	}
	if len(v.errs) > n0 {
		return nil
	}
	return c
}

func (v *validator) rule(c *Claim, pub Published, pubOK bool, at func(...any) int, key string) {
	t := c.Tolerance
	neg := func(p *float64) bool { return p != nil && (*p < 0 || math.IsNaN(*p)) }
	if neg(t.Abs) || neg(t.Rel) || neg(t.CloseAbs) || neg(t.CloseRel) {
		v.errf(at("tolerance"), key+".tolerance", "tolerances are distances: want numbers ≥ 0")
	}
	switch c.Rule {
	case RuleClass:
		if pubOK && (!pub.IsText || !reClass.MatchString(pub.Text)) {
			v.errf(at("published"), key+".published", "%q: rule class wants a behaviour class: A, B, C-1, C-2 or D", pub.String())
		}
		if t.Abs != nil || t.Rel != nil || t.CloseAbs != nil || t.CloseRel != nil {
			v.errf(at("tolerance"), key+".tolerance", "rule class has its own tolerance (exact agrees, the same letter is close): give only why")
		}
	case RuleNumber:
		if pubOK && (pub.IsText || pub.IsRange) {
			v.errf(at("published"), key+".published", "rule number wants a number")
		}
		if (t.Abs == nil) == (t.Rel == nil) {
			v.errf(at("tolerance"), key+".tolerance", "rule number wants abs or rel (one of them): how far from the published value still agrees")
		}
		if t.CloseAbs != nil && t.CloseRel != nil {
			v.errf(at("tolerance"), key+".tolerance", "give close_abs or close_rel, not both")
		}
	case RuleRange:
		if pubOK && !pub.IsRange {
			v.errf(at("published"), key+".published", "rule range wants [lo, hi] (.inf for an open end)")
		}
		if t.Abs != nil || t.Rel != nil {
			v.errf(at("tolerance"), key+".tolerance", "rule range agrees inside the range: give close_abs or close_rel for how far outside is close")
		}
		if t.CloseAbs != nil && t.CloseRel != nil {
			v.errf(at("tolerance"), key+".tolerance", "give close_abs or close_rel, not both")
		}
	case RuleEqual:
		if pubOK && pub.IsRange {
			v.errf(at("published"), key+".published", "rule equal wants a text or a number")
		}
	default:
		v.errf(at("rule"), key+".rule", "%q: want class, number, range or equal", c.Rule)
	}
}

// checkGrid checks what a measure read from a sweep's configurations
// (largest, falls) needs: an experiment of a sweep, a grid key param and a
// path key into a configuration. what names the measure's value in the
// error ("a capacity").
func checkGrid(v *validator, e *Experiment, at func(...any) int, yamlKey, name, key, what, param, path string) {
	if e.Kind() != KindSweep {
		v.errf(at(yamlKey, name), key, "%s is read from a sweep's configurations: use it on an experiment of a sweep", what)
	}
	if param == "" || path == "" {
		v.errf(at(yamlKey, name), key, "want param (a grid key, e.g. workload.users) and key (a path in a configuration, e.g. throughput_mean_per_s)")
	} else if _, err := parsePath(path); err != nil {
		v.errf(at(yamlKey, name, "key"), key+".key", "%v", err)
	}
}

func (v *validator) measure(m *Measure, p *Paper, at func(...any) int, key, yamlKey string) {
	e := p.Experiment(m.Experiment)
	if e == nil {
		var ids []string
		for _, x := range p.Experiments {
			ids = append(ids, x.ID)
		}
		v.errf(at(yamlKey, "experiment"), key+".experiment", "%q is not an experiment of %s (have: %s)", m.Experiment, p.Key, strings.Join(ids, ", "))
		return
	}
	runs := e.RunIDs()
	if m.Run == "" {
		if len(runs) != 1 {
			v.errf(at(yamlKey), key+".run", "missing: experiment %s has %d runs (%s): name one", e.ID, len(runs), strings.Join(runs, ", "))
		} else {
			m.Run = runs[0]
		}
	} else if !contains(runs, m.Run) {
		v.errf(at(yamlKey, "run"), key+".run", "%q is not a run of experiment %s (have: %s)", m.Run, e.ID, strings.Join(runs, ", "))
	}
	if n := btoi(m.Key != "") + btoi(m.Events != nil) + btoi(m.Answered != nil) + btoi(m.Drop != nil) + btoi(m.Largest != nil) + btoi(m.Falls != nil); n != 1 {
		v.errf(at(yamlKey), key, "give key (a path into the run's JSON), events (from, to), answered (from, to), drop (from, to), largest (param, key, bound) or falls (param, key, at_most), one of them")
	}
	if f := m.Falls; f != nil {
		fk := key + ".falls"
		checkGrid(v, e, at, yamlKey, "falls", fk, "a fall", f.Param, f.Key)
		if !(f.AtMost > 0 && f.AtMost < 1) {
			v.errf(at(yamlKey, "falls"), fk+".at_most", "%v: want the share of the peak, above 0 and below 1", f.AtMost)
		}
	}
	if l := m.Largest; l != nil {
		lk := key + ".largest"
		checkGrid(v, e, at, yamlKey, "largest", lk, "a capacity", l.Param, l.Key)
		if (l.AtLeast == nil) == (l.AtMost == nil) {
			v.errf(at(yamlKey, "largest"), lk, "give at_least or at_most, one of them: the bound the capacity keeps")
		}
	}
	if m.Key != "" {
		if _, err := parsePath(m.Key); err != nil {
			v.errf(at(yamlKey, "key"), key+".key", "%v", err)
		}
	}
	for _, sp := range []struct {
		name string
		span *EventSpan
	}{{"events", m.Events}, {"answered", m.Answered}, {"drop", m.Drop}} {
		if sp.span != nil && (sp.span.From == "" || sp.span.To == "" || e.Kind() != KindExamples) {
			v.errf(at(yamlKey, sp.name), key+"."+sp.name, "want from and to (event kinds), on an experiment of examples")
		}
	}
	if m.Config != 0 && (m.Config < 0 || m.Key == "" || e.Kind() != KindSweep) {
		v.errf(at(yamlKey, "config"), key+".config", "%d: want a configuration's number (1, 2, ...) with key, on an experiment of a sweep", m.Config)
	}
	if m.Unscale && e.Kind() != KindExamples {
		v.errf(at(yamlKey, "unscale"), key+".unscale", "only runs of examples have a time scale to undo")
	}
	if m.Factor < 0 || math.IsNaN(m.Factor) || math.IsInf(m.Factor, 0) {
		v.errf(at(yamlKey, "factor"), key+".factor", "%v: want a finite factor above 0", m.Factor)
	}
	switch m.Aggregate {
	case "", "median", "mode", "min", "max":
	default:
		v.errf(at(yamlKey, "aggregate"), key+".aggregate", "%q: want median, mode, min or max", m.Aggregate)
	}
	if m.Per != nil {
		if m.Per.Per != nil {
			v.errf(at(yamlKey, "per", "per"), key+".per.per", "a ratio of ratios: give one per")
			return
		}
		v.measure(m.Per, p, func(keys ...any) int { return at(append([]any{yamlKey}, keys...)...) }, key+".per", "per")
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// parsePublished reads a number, a text, or a [lo, hi] range.
func parsePublished(n *yaml.Node) (Published, error) {
	switch n.Kind {
	case 0:
		return Published{}, errors.New("missing: the value the paper gives")
	case yaml.ScalarNode:
		if n.Tag == "!!int" || n.Tag == "!!float" {
			var f float64
			if err := n.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return Published{}, fmt.Errorf("%q: want a finite number", n.Value)
			}
			return Published{Num: f}, nil
		}
		if strings.TrimSpace(n.Value) == "" {
			return Published{}, errors.New("empty")
		}
		return Published{Text: n.Value, IsText: true}, nil
	case yaml.SequenceNode:
		var b []float64
		if err := n.Decode(&b); err != nil || len(b) != 2 || math.IsNaN(b[0]) || math.IsNaN(b[1]) || b[0] > b[1] || math.IsInf(b[0], 1) || math.IsInf(b[1], -1) {
			return Published{}, errors.New("a range is [lo, hi] with lo ≤ hi (.inf and -.inf for open ends)")
		}
		return Published{Lo: b[0], Hi: b[1], IsRange: true}, nil
	}
	return Published{}, errors.New("want a number, a text or [lo, hi]")
}
