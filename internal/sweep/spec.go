package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/faultbench/faultbench/internal/scenario"
)

// DefaultMaxConfigs is how many configurations × repetitions a sweep may
// hold before Load asks for --yes (Options.Yes): a grid grows by
// multiplication, and a typo can turn an evening's sweep into a month's.
const DefaultMaxConfigs = 200

// maxGridProduct bounds a grid's combinations, whatever --yes says: a
// sweep beyond it is a mistake, or a job for several sweeps.
const maxGridProduct = 100_000

// ErrTooLarge is wrapped by Load's error when the sweep holds more runs
// than its max_runs and the caller did not accept that.
var ErrTooLarge = errors.New("sweep too large")

// Sweep is a loaded, validated sweep file.
type Sweep struct {
	Name        string
	File        string // the sweep file, for messages
	Repetitions int
	Keys        []string // grid keys in the file's order
	Configs     []Config // every configuration left after exclusion, in order
}

// Config is one point of the grid.
type Config struct {
	Index  int // from 1, over the configurations left after exclusion
	Params []scenario.SweepParam
	doc    *yaml.Node // the base scenario with the parameters set
}

// Run is one configuration × repetition: a complete scenario.
type Run struct {
	ID       string // cfg-NNNN-rR, also the run directory's name
	Config   *Config
	Scenario *scenario.Scenario
}

// file is the sweep file's schema.
type file struct {
	Name        string      `yaml:"name"`
	Scenario    yaml.Node   `yaml:"scenario"` // a path (relative to the sweep file) or an inline scenario
	Repetitions int         `yaml:"repetitions"`
	MaxRuns     int         `yaml:"max_runs"`
	Grid        yaml.Node   `yaml:"grid"`
	Exclude     []yaml.Node `yaml:"exclude"`
}

// LoadOptions adjust Load.
type LoadOptions struct {
	// Yes accepts a sweep with more runs than its max_runs.
	Yes bool
}

// Load reads and validates a sweep file. Every error names the sweep file
// and the line of the offending key or value.
func Load(path string, opt LoadOptions) (*Sweep, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %s (keys: name, scenario, repetitions, max_runs, grid, exclude)", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	s := &Sweep{Name: f.Name, File: path, Repetitions: f.Repetitions}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	if s.Repetitions == 0 {
		s.Repetitions = 1
	}
	if s.Repetitions < 0 || s.Repetitions > 10000 {
		return nil, fmt.Errorf("%s: repetitions %d: want 1 to 10000", path, s.Repetitions)
	}
	baseData, baseName, err := baseScenario(path, &f.Scenario)
	if err != nil {
		return nil, err
	}
	var base yaml.Node
	if err := yaml.Unmarshal(baseData, &base); err != nil || len(base.Content) == 0 || base.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: the base scenario is not a YAML mapping", baseName)
	}
	if _, err := scenario.Parse(baseData, baseName); err != nil {
		if f.Scenario.Kind == yaml.MappingNode {
			return nil, fmt.Errorf("%s:%d: the inline base scenario is not valid (its lines below count from the line after scenario:):\n%w", path, f.Scenario.Line, err)
		}
		return nil, fmt.Errorf("the base scenario is not valid:\n%w", err)
	}

	grid, err := readGrid(path, &f.Grid)
	if err != nil {
		return nil, err
	}
	for _, g := range grid {
		s.Keys = append(s.Keys, g.key)
	}
	// Each value alone on the base scenario: a wrong type or an impossible
	// value is reported at the value's own line.
	var errs []error
	for _, g := range grid {
		for _, v := range g.values {
			doc := clone(&base)
			if err := setPath(doc, g.key, v); err != nil {
				errs = append(errs, fmt.Errorf("%s:%d: grid key %s: %v", path, v.Line, g.key, err))
				continue
			}
			if _, err := parseDoc(doc, baseName); err != nil {
				errs = append(errs, fmt.Errorf("%s:%d: grid key %s, value %s: %v", path, v.Line, g.key, flow(v), err))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	excl, err := readExcludes(path, f.Exclude, grid)
	if err != nil {
		return nil, err
	}

	maxRuns := f.MaxRuns
	if maxRuns == 0 {
		maxRuns = DefaultMaxConfigs
	}
	// Count first, cheaply: a grid grows by multiplication, and nothing is
	// built for a sweep that will be refused.
	product := 1
	for _, g := range grid {
		product *= len(g.values)
		if product > maxGridProduct {
			return nil, fmt.Errorf("%s: the grid has more than %d combinations: split the sweep", path, maxGridProduct)
		}
	}
	kept := 0
	idx := make([]int, len(grid))
	for n := 0; n < product; n++ {
		if !excluded(excl, grid, idx) {
			kept++
		}
		next(idx, grid)
	}
	if kept == 0 {
		return nil, fmt.Errorf("%s: the exclude rules leave no configuration to run", path)
	}
	if runs := kept * s.Repetitions; runs > maxRuns && !opt.Yes {
		return nil, fmt.Errorf("%s: %w: %d configurations × %d repetitions = %d runs, above max_runs %d: pass --yes to run them all, or raise max_runs",
			path, ErrTooLarge, kept, s.Repetitions, runs, maxRuns)
	}
	for n := 0; n < product; n++ {
		if !excluded(excl, grid, idx) {
			c := Config{Index: len(s.Configs) + 1, doc: clone(&base)}
			for i, g := range grid {
				v := g.values[idx[i]]
				c.Params = append(c.Params, scenario.SweepParam{Key: g.key, Value: flow(v)})
				_ = setPath(c.doc, g.key, v) // checked above
			}
			s.Configs = append(s.Configs, c)
		}
		next(idx, grid)
	}
	// Whole configurations: values that are valid alone may still clash.
	for i := range s.Configs {
		if _, err := parseDoc(s.Configs[i].doc, baseName); err != nil {
			errs = append(errs, fmt.Errorf("%s: configuration %d (%s): %v", path, i+1, ParamString(s.Configs[i].Params), err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// Runs lists every configuration × repetition in the order they run:
// configuration by configuration, repetitions together.
func (s *Sweep) Runs() ([]Run, error) {
	var runs []Run
	for i := range s.Configs {
		c := &s.Configs[i]
		for r := 1; r <= s.Repetitions; r++ {
			id := RunID(c.Index, r)
			sc, err := parseDoc(c.doc, s.File)
			if err != nil {
				return nil, err
			}
			sc.Name = s.Name + "-" + id
			sc.Seed += int64(r - 1)
			sc.Sweep = &scenario.SweepRun{Name: s.Name, Config: c.Index, Repetition: r, Params: c.Params}
			runs = append(runs, Run{ID: id, Config: c, Scenario: sc})
		}
	}
	return runs, nil
}

// RunID is the run directory name of a configuration and repetition.
func RunID(config, rep int) string { return configID(config) + fmt.Sprintf("-r%d", rep) }

// configID names a configuration: cfg-NNNN.
func configID(config int) string { return fmt.Sprintf("cfg-%04d", config) }

// ParamString is "key=value key=value" for messages and progress lines.
func ParamString(ps []scenario.SweepParam) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.Key + "=" + p.Value
	}
	return strings.Join(parts, " ")
}

func baseScenario(path string, n *yaml.Node) ([]byte, string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		p := n.Value
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(path), p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, "", fmt.Errorf("%s:%d: scenario: %v", path, n.Line, err)
		}
		return data, p, nil
	case yaml.MappingNode:
		data, err := yaml.Marshal(n)
		if err != nil {
			return nil, "", err
		}
		// Relative paths inside an inline scenario resolve next to the sweep file.
		return data, filepath.Join(filepath.Dir(path), "scenario.yaml"), nil
	case 0:
		return nil, "", fmt.Errorf("%s: scenario is missing: give the base scenario's path, or the scenario itself", path)
	}
	return nil, "", fmt.Errorf("%s:%d: scenario: want a file path or a scenario mapping", path, n.Line)
}

type gridKey struct {
	key    string
	line   int
	values []*yaml.Node
}

func readGrid(path string, n *yaml.Node) ([]gridKey, error) {
	if n.Kind == 0 || (n.Kind == yaml.MappingNode && len(n.Content) == 0) {
		return nil, fmt.Errorf("%s: the grid is empty: give at least one key, e.g. grid: {workload.clients: [1, 4, 7]}", path)
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: grid: want a mapping of scenario key paths to lists of values", path, n.Line)
	}
	var grid []gridKey
	var errs []error
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if err := checkPath(k.Value); err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: grid key %s: %v", path, k.Line, k.Value, err))
			continue
		}
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			errs = append(errs, fmt.Errorf("%s:%d: grid key %s: want a non-empty list of values, e.g. [1, 2, 3]", path, v.Line, k.Value))
			continue
		}
		grid = append(grid, gridKey{key: k.Value, line: k.Line, values: v.Content})
	}
	return grid, errors.Join(errs...)
}

type rule map[int]string // grid index → value (flow text)

func readExcludes(path string, nodes []yaml.Node, grid []gridKey) ([]rule, error) {
	var rules []rule
	for _, n := range nodes {
		if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
			return nil, fmt.Errorf("%s:%d: exclude: each rule is a mapping of grid keys to values, e.g. {cluster.nodes: 1, workload.users: 8}", path, n.Line)
		}
		r := rule{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			gi := -1
			for j, g := range grid {
				if g.key == k.Value {
					gi = j
				}
			}
			if gi < 0 {
				return nil, fmt.Errorf("%s:%d: exclude: %s is not a grid key", path, k.Line, k.Value)
			}
			want := flow(v)
			found := false
			for _, gv := range grid[gi].values {
				found = found || flow(gv) == want
			}
			if !found {
				return nil, fmt.Errorf("%s:%d: exclude: %s is never %s in the grid", path, v.Line, k.Value, want)
			}
			r[gi] = want
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func excluded(rules []rule, grid []gridKey, idx []int) bool {
	for _, r := range rules {
		match := true
		for gi, want := range r {
			match = match && flow(grid[gi].values[idx[gi]]) == want
		}
		if match {
			return true
		}
	}
	return false
}

// next advances the odometer; the last key varies fastest.
func next(idx []int, grid []gridKey) bool {
	for i := len(idx) - 1; i >= 0; i-- {
		idx[i]++
		if idx[i] < len(grid[i].values) {
			return true
		}
		idx[i] = 0
	}
	return false
}

// flow is a node's compact YAML text: 4, 2ms, [1, 2], {a: b}.
func flow(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return n.Value // "1" and 1 alike: the column is text in CSV either way
	}
	c := clone(n)
	setFlow(c)
	out, err := yaml.Marshal(c)
	if err != nil {
		return n.Value
	}
	return strings.TrimSpace(string(out))
}

func setFlow(n *yaml.Node) {
	n.Style |= yaml.FlowStyle
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	for _, c := range n.Content {
		setFlow(c)
	}
}

func clone(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = clone(k)
	}
	return &c
}

var reFileLine = regexp.MustCompile(`(?m)^[^\n:]+:\d+: `)

// parseDoc validates a scenario document; its error drops the generated
// text's file:line, which means nothing to the user.
func parseDoc(doc *yaml.Node, name string) (*scenario.Scenario, error) {
	data, err := yaml.Marshal(doc)
	if err != nil {
		return nil, err
	}
	sc, err := scenario.Parse(data, name)
	if err != nil {
		return nil, errors.New(reFileLine.ReplaceAllString(err.Error(), ""))
	}
	return sc, nil
}

// setPath sets the value at a dotted key path, creating mappings on the
// way; a number indexes an existing list element.
func setPath(doc *yaml.Node, path string, v *yaml.Node) error {
	n := doc
	if n.Kind == yaml.DocumentNode {
		n = n.Content[0]
	}
	parts := strings.Split(path, ".")
	for i, p := range parts {
		last := i == len(parts)-1
		switch n.Kind {
		case yaml.MappingNode:
			var next *yaml.Node
			for j := 0; j+1 < len(n.Content); j += 2 {
				if n.Content[j].Value == p {
					if last {
						n.Content[j+1] = clone(v)
						return nil
					}
					next = n.Content[j+1]
				}
			}
			if next == nil {
				next = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				if last {
					next = clone(v)
				} else if _, err := strconv.Atoi(parts[i+1]); err == nil {
					return fmt.Errorf("%s is not in the base scenario, so its element %s cannot be set", strings.Join(parts[:i+1], "."), parts[i+1])
				}
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p}, next)
				if last {
					return nil
				}
			}
			n = next
		case yaml.SequenceNode:
			k, err := strconv.Atoi(p)
			if err != nil || k < 0 || k >= len(n.Content) {
				return fmt.Errorf("%s: the base scenario's list has %d elements, want an index 0..%d", strings.Join(parts[:i+1], "."), len(n.Content), len(n.Content)-1)
			}
			if last {
				n.Content[k] = clone(v)
				return nil
			}
			n = n.Content[k]
		default:
			return fmt.Errorf("%s is a single value in the base scenario, not a section", strings.Join(parts[:i], "."))
		}
	}
	return nil
}

var durationType = reflect.TypeOf(scenario.Duration{})
var nodeRefType = reflect.TypeOf(scenario.NodeRef{})

// checkPath reports whether a dotted key path names a field of the
// scenario schema (the Scenario type's yaml tags): list elements are
// numbers, the keys of free-form maps (cluster.options, demerits, a
// fault's params) are anything.
func checkPath(path string) error {
	t := reflect.TypeOf(scenario.Scenario{})
	parts := strings.Split(path, ".")
	for i, p := range parts {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case t == durationType || t == nodeRefType:
			return fmt.Errorf("%s is a single value; %s cannot go below it", strings.Join(parts[:i], "."), p)
		case t.Kind() == reflect.Struct:
			f, ok := fieldByTag(t, p)
			if !ok {
				return fmt.Errorf("%q is not a key of %s (see docs/scenario.md)", p, sectionName(parts[:i]))
			}
			t = f
		case t.Kind() == reflect.Slice:
			if _, err := strconv.Atoi(p); err != nil {
				return fmt.Errorf("%s is a list: index it with a number, e.g. %s.0", strings.Join(parts[:i], "."), strings.Join(parts[:i], "."))
			}
			t = t.Elem()
		case t.Kind() == reflect.Map:
			t = t.Elem()
		default:
			return fmt.Errorf("%s is a single value; %s cannot go below it", strings.Join(parts[:i], "."), p)
		}
	}
	if parts[0] == "sweep" {
		return errors.New("sweep is set by the sweep itself, for each run")
	}
	return nil
}

func fieldByTag(t reflect.Type, name string) (reflect.Type, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if tag == name {
			return f.Type, true
		}
	}
	return nil, false
}

func sectionName(parts []string) string {
	if len(parts) == 0 {
		return "the scenario's top level"
	}
	return strings.Join(parts, ".")
}
