package reproduce

import (
	"embed"
	"fmt"
	"math"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Paper is one paper's entry in the registry.
type Paper struct {
	Key         string // e.g. brown00: first author and year, the CLI's name
	Cite        string // the docs/papers.md key, e.g. "Brown and Patterson (2000)"
	Title       string
	Docs        string // the document that discusses its results
	File        string // the data file, for messages
	Experiments []*Experiment
	Claims      []*Claim
}

// Experiment is what one ID of `--only` runs: examples, a sweep, or model
// commands, each repeated.
type Experiment struct {
	ID       string
	What     string
	Examples []string   // scenario files, relative to the repository root
	Sweep    string     // a sweep file, relative to the repository root
	Model    []ModelRun // `faultbench model` commands
	// Repetitions of each example or of the whole sweep (model commands
	// are deterministic and run once).
	Repetitions int
	// TimeScale is the default --time-scale of its runs: the scale the
	// docs' results were measured at.
	TimeScale float64
	Line      int
}

// ModelRun is one `faultbench model ARGS --json`; "{dir}" in an argument
// is the run's directory (for -o figures).
type ModelRun struct {
	ID   string   `yaml:"id"`
	Args []string `yaml:"args"`
}

// Kind of an experiment.
const (
	KindExamples = "examples"
	KindSweep    = "sweep"
	KindModel    = "model"
)

// Kind is examples, sweep or model.
func (e *Experiment) Kind() string {
	switch {
	case e.Sweep != "":
		return KindSweep
	case len(e.Model) > 0:
		return KindModel
	}
	return KindExamples
}

// RunIDs names the experiment's runs: each example's file name without
// .yaml, the sweep file's, or each model command's id.
func (e *Experiment) RunIDs() []string {
	var ids []string
	switch e.Kind() {
	case KindSweep:
		ids = append(ids, exampleID(e.Sweep))
	case KindModel:
		for _, m := range e.Model {
			ids = append(ids, m.ID)
		}
	default:
		for _, x := range e.Examples {
			ids = append(ids, exampleID(x))
		}
	}
	return ids
}

func exampleID(file string) string {
	return strings.TrimSuffix(path.Base(filepath.ToSlash(file)), path.Ext(file))
}

// Claim is one published value and how faultbench's is measured.
type Claim struct {
	ID        string
	Location  string // where in the paper, e.g. "Table 1, Correctable read, transient, Linux"
	Published Published
	Rule      string // how the verdict is reached: class, number, range, equal
	Tolerance Tolerance
	Measure   *Measure // nil: not measured (Missing) or by construction (Basis)
	Basis     string   // by construction: what was built to match the paper, and its test
	Missing   string   // not measured: what is missing
	Reason    string   // where it differs: one sentence from the docs
	Quoted    *Quote   // where the docs quote the published value
	Line      int
}

// Verdict rules.
const (
	RuleClass  = "class"  // behaviour class: exact agrees, same letter (C-1 for C-2) is close
	RuleNumber = "number" // |measured − published| within the tolerance agrees, within the close one is close
	RuleRange  = "range"  // inside [lo, hi] agrees, within the close tolerance outside is close
	RuleEqual  = "equal"  // exactly the published text or number
)

// Published is a published value: a text (a behaviour class), a number,
// or a range [lo, hi] whose bounds may be infinite ("over 7 times": [7, .inf]).
type Published struct {
	Text    string
	Num     float64
	Lo, Hi  float64
	IsText  bool
	IsRange bool
}

// String is the value as the tables print it.
func (p Published) String() string {
	switch {
	case p.IsText:
		return p.Text
	case p.IsRange && math.IsInf(p.Hi, 1):
		return "≥ " + formatNum(p.Lo)
	case p.IsRange && math.IsInf(p.Lo, -1):
		return "≤ " + formatNum(p.Hi)
	case p.IsRange:
		return formatNum(p.Lo) + " to " + formatNum(p.Hi)
	}
	return formatNum(p.Num)
}

// Tolerance is fixed before measuring and written beside the published value.
type Tolerance struct {
	Abs      *float64 `yaml:"abs"`
	Rel      *float64 `yaml:"rel"`
	CloseAbs *float64 `yaml:"close_abs"`
	CloseRel *float64 `yaml:"close_rel"`
	Why      string   `yaml:"why"`
}

// Measure says how a claim's value is obtained from an experiment's runs.
type Measure struct {
	Experiment string     `yaml:"experiment"`
	Run        string     `yaml:"run"` // one of the experiment's RunIDs; may be left out when it has one
	Key        string     `yaml:"key"` // path into summary.json, sweep.json or the model's JSON: faults.0.class, points[label=1/day].result.average_availability
	Events     *EventSpan `yaml:"events"`
	// Answered is the fraction of the events of kind From that an event
	// of kind To followed before the next From (or the run's end): 1 when
	// every fault was answered, e.g. each slowdown detected and restarted.
	Answered *EventSpan `yaml:"answered"`
	// Drop is the worst window's fall during a span of events.jsonl (the
	// first From to the first To after it): (baseline mean − the lowest
	// ok/s of a valid window of windows.csv wholly inside the span) ÷
	// baseline mean, both from the same run, e.g. 0.34 for a rebuild that
	// cost a third of the warm-up's throughput at its worst.
	Drop *EventSpan `yaml:"drop"`
	// Largest is a capacity read from a sweep: the largest value of a
	// grid key at which a condition holds.
	Largest *Largest `yaml:"largest"`
	// Falls is where a value that rose with load has fallen, read from a
	// sweep: the first grid value past the peak at which it is at most a
	// share of the peak.
	Falls *Falls `yaml:"falls"`
	// Config, on a sweep, reads Key from the summary.json of that
	// configuration's first run (configurations numbered from 1 in the
	// sweep's order, as cfg-NNNN) instead of from sweep.json: a run's
	// phases, punctuality, p_exceed and demerits, which sweep.json does
	// not pool.
	Config int `yaml:"config"`
	// Unscale divides a duration by the run's time scale, putting it on
	// the scenario's clock (as docs/press.md's tables do).
	Unscale bool    `yaml:"unscale"`
	Factor  float64 `yaml:"factor"` // multiplies the value (e.g. ρ × 5 minutes between writes)
	// Per divides the value by another measurement of the same
	// repetition: a ratio of two runs.
	Per       *Measure `yaml:"per"`
	Aggregate string   `yaml:"aggregate"` // over repetitions: median (numbers), mode (texts), min, max
}

// EventSpan names two event kinds of events.jsonl. As Measure.Events it
// is the time from the first event of kind From to the first event of
// kind To after it; as Measure.Answered, how many From events a To
// followed; as Measure.Drop, the span whose windows are looked at.
type EventSpan struct {
	From string `yaml:"from"`
	To   string `yaml:"to"`
}

// Largest is, over a sweep's configurations (sweep.json's configs), the
// largest value of the grid key Param at which Key meets the bound — there
// and at every smaller value of Param: a capacity, such as the most users
// a service keeps up with. A sweep where the bound fails already at the
// smallest value, or holds at the largest, found no capacity: that is an
// error, not a number.
type Largest struct {
	Param string `yaml:"param"` // a grid key whose values are numbers, e.g. workload.users
	Key   string `yaml:"key"`   // a path in each configuration's entry, e.g. throughput_mean_per_s
	// PerParam bounds Key ÷ Param (throughput per user) instead of Key.
	PerParam bool     `yaml:"per_param"`
	AtLeast  *float64 `yaml:"at_least"`
	AtMost   *float64 `yaml:"at_most"`
}

// Falls is, over a sweep's configurations (sweep.json's configs), the
// smallest value of the grid key Param above the one where Key peaks at
// which Key is at most AtMost × the peak: the load at which goodput has
// halved (AtMost 0.5) or all but vanished (0.05). Values of Param below
// the peak's are not looked at, so a goodput still rising at light load is
// no fall. A sweep where Key never falls that far past its peak found
// nothing: that is an error, not a number.
type Falls struct {
	Param  string  `yaml:"param"`   // a grid key whose values are numbers, e.g. workload.users
	Key    string  `yaml:"key"`     // a path in each configuration's entry, e.g. throughput_mean_per_s
	AtMost float64 `yaml:"at_most"` // the share of the peak, above 0 and below 1
}

// Quote is where the docs quote a published value: a cell of a markdown
// table (the table with a header cell Column and a row whose first cells
// are Row; Part picks one of " / "-separated values), or a text.
type Quote struct {
	Doc    string   `yaml:"doc"`
	Row    []string `yaml:"row"`
	Column string   `yaml:"column"`
	Part   *int     `yaml:"part"`
	Text   string   `yaml:"text"`   // verbatim text of the doc, holding Values
	Values []string `yaml:"values"` // the published value(s) as the text writes them, e.g. "99.8%"
}

//go:embed papers/*.yaml
var papersFS embed.FS

// Papers is the registry: every paper's data file, loaded and checked,
// in the order of their years. The files are part of the binary, so an
// error here is a bug caught by the package's tests.
func Papers() ([]*Paper, error) {
	entries, err := papersFS.ReadDir("papers")
	if err != nil {
		return nil, err
	}
	var papers []*Paper
	var errs []string
	for _, e := range entries {
		data, err := papersFS.ReadFile("papers/" + e.Name())
		if err != nil {
			return nil, err
		}
		p, err := Parse(data, "internal/reproduce/papers/"+e.Name())
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		papers = append(papers, p)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	sort.SliceStable(papers, func(i, j int) bool {
		yi, yj := year(papers[i].Key), year(papers[j].Key)
		if yi != yj {
			return yi < yj
		}
		return papers[i].Key < papers[j].Key
	})
	return papers, nil
}

// year is the paper's year from its key's last two digits.
func year(key string) int {
	if len(key) < 2 {
		return 0
	}
	y, _ := strconv.Atoi(key[len(key)-2:])
	if y < 70 {
		y += 100
	}
	return y
}

// Keys lists the papers' keys in order.
func Keys(papers []*Paper) []string {
	keys := make([]string, len(papers))
	for i, p := range papers {
		keys[i] = p.Key
	}
	return keys
}

// Experiment returns the paper's experiment with that ID, or nil.
func (p *Paper) Experiment(id string) *Experiment {
	for _, e := range p.Experiments {
		if e.ID == id {
			return e
		}
	}
	return nil
}

func formatNum(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "∞"
	case math.IsInf(v, -1):
		return "−∞"
	case math.IsNaN(v):
		return "–"
	}
	if v != 0 && (math.Abs(v) >= 1e7 || math.Abs(v) < 1e-3) {
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	// Five significant digits, at most four decimals: 445.71, 0.99879, 3.7367.
	decimals := 4
	if v != 0 {
		decimals = 5 - int(math.Floor(math.Log10(math.Abs(v)))) - 1
	}
	decimals = max(0, min(decimals, 5))
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
