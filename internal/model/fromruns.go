package model

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Phase 1 to phase 2 (Nagaraja et al. 2002, §2): FromRuns reads one
// single-fault run per fault type and a fault load of rates, and returns a
// fault load whose every stage says whether it was measured or supplied
// (and why).

// Stage sources, written as a stage's source key.
const (
	SourceMeasured = "measured"
	SourceSupplied = "supplied"
)

// Run is what phase 2 takes from one run directory: its scenario's system,
// mode and page set, its baseline and the stages of its (only) fault.
type Run struct {
	Dir                  string
	System, Mode         string
	Pages, PageSize      int
	Type                 string  // the fault's type
	Baseline             float64 // the baseline's mean throughput, requests/s
	Recovered            bool    // throughput returned to the baseline band before the run ended
	Stages               [7]*Stage
	FaultCount           int
	DurationS            float64 // the run's length
	FailureS, InjectS    float64
	ClearS               float64
	ScenarioFaultsByType map[string]int
}

// runFile is the part of summary.json ReadRun needs (docs/results.md keys).
type runFile struct {
	Run struct {
		DurationS float64 `json:"duration_s"`
	} `json:"run"`
	Baseline struct {
		Mean float64 `json:"mean"`
	} `json:"baseline"`
	Faults []struct {
		Type      string   `json:"type"`
		InjectS   float64  `json:"inject_s"`
		ClearS    *float64 `json:"clear_s"`
		FailureS  *float64 `json:"failure_duration_s"`
		FailEndS  *float64 `json:"failure_end_s"`
		Recovered *bool    `json:"recovered"`
		Stages    map[string]struct {
			DurationS  float64  `json:"duration_s"`
			Throughput *float64 `json:"throughput"`
		} `json:"stages"`
	} `json:"faults"`
}

// scenarioFile is the part of a run's scenario.yaml ReadRun needs.
type scenarioFile struct {
	Cluster struct {
		System   string `yaml:"system"`
		Mode     string `yaml:"mode"`
		Pages    int    `yaml:"pages"`
		PageSize int    `yaml:"page_size"`
	} `yaml:"cluster"`
	Faults []struct {
		Type string `yaml:"type"`
	} `yaml:"faults"`
}

// ReadRun reads dir/summary.json and dir/scenario.yaml. Errors are
// ErrBadInput and name the file.
func ReadRun(dir string) (*Run, error) {
	sj := filepath.Join(dir, "summary.json")
	data, err := os.ReadFile(sj)
	if err != nil {
		return nil, &InputError{File: sj, Msg: fmt.Sprintf("%v (is %s a run directory? faultbench analyze writes summary.json)", err, dir)}
	}
	var s runFile
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, &InputError{File: sj, Msg: err.Error()}
	}
	sy := filepath.Join(dir, "scenario.yaml")
	data, err = os.ReadFile(sy)
	if err != nil {
		return nil, &InputError{File: sy, Msg: err.Error()}
	}
	var sc scenarioFile
	if err := yaml.Unmarshal(data, &sc); err != nil {
		return nil, &InputError{File: sy, Msg: err.Error()}
	}
	r := &Run{Dir: dir, System: sc.Cluster.System, Mode: sc.Cluster.Mode, Pages: sc.Cluster.Pages, PageSize: sc.Cluster.PageSize,
		Baseline: s.Baseline.Mean, FaultCount: len(s.Faults), DurationS: s.Run.DurationS, ScenarioFaultsByType: map[string]int{}}
	for _, f := range sc.Faults {
		r.ScenarioFaultsByType[f.Type]++
	}
	// Maintenance events (an operator's restart-all in the scenario) are
	// part of the repair, not faults of their own.
	// An unplanned exit during the run (a VIA node failing fast on the
	// injected bad parameter, or its peer) is the fault's consequence,
	// not a fault of its own: foldFollowers adds its time to the fault's.
	faults := s.Faults[:0:0]
	for _, f := range s.Faults {
		if !maintenance[f.Type] && f.Type != unplannedType {
			faults = append(faults, f)
		}
	}
	r.FaultCount = len(faults)
	if len(faults) == 0 {
		return r, nil
	}
	f := faults[0]
	r.Type, r.InjectS = f.Type, f.InjectS
	r.Recovered = f.Recovered == nil || *f.Recovered
	if f.ClearS != nil {
		r.ClearS = *f.ClearS
	}
	if f.FailureS != nil {
		r.FailureS = *f.FailureS
	}
	for name, st := range f.Stages {
		i := strings.Index(StageNames, name)
		if len(name) != 1 || i < 0 {
			return nil, &InputError{File: sj, Key: "faults[0].stages." + name, Msg: "unknown stage (stages are A..G)"}
		}
		if st.DurationS < 0 || math.IsNaN(st.DurationS) {
			return nil, &InputError{File: sj, Key: "faults[0].stages." + name, Msg: fmt.Sprintf("duration %v", st.DurationS)}
		}
		tp := math.NaN()
		if st.Throughput != nil {
			tp = *st.Throughput
		}
		r.Stages[i] = &Stage{Duration: st.DurationS, Throughput: tp}
	}
	r.foldFollowers(s)
	return r, nil
}

// unplannedType is the fault type of a node that exited on its own
// (analysis.UnplannedFault, docs/results.md).
const unplannedType = "unplanned"

// foldFollowers makes what follows the fault in the run part of its course.
// The analysis ends a fault's span at the next injection, so the spans of
// the fault and of everything injected after it partition the time:
//
//   - an unplanned exit (a VIA node failing fast on the bad parameter, and
//     in via3/via5 its peer) carries the failure the fault caused: its
//     stages are added to the fault's, stage by stage (durations summed,
//     throughputs weighted by duration), and its recovery is the fault's;
//   - a scheduled repair step (perf's restart-all once the rebooted node is
//     back) ends the same repair: its failure — from its injection to the
//     end of its failure, its stages walked in order — is the rest of
//     stage G, and its recovery the fault's. Without this the fault read
//     as unrecovered, and fromruns supplied a stage E "until someone resets
//     the cluster" that the run never had.
func (r *Run) foldFollowers(s runFile) {
	var dur, work float64
	steps := 0
	for k, m := range s.Faults {
		if m.InjectS < r.InjectS || k == 0 {
			continue
		}
		switch {
		case m.Type == unplannedType:
			r.Recovered = m.Recovered == nil || *m.Recovered
			for name, st := range m.Stages {
				i := strings.Index(StageNames, name)
				if len(name) != 1 || i < 0 || st.DurationS <= 0 || st.Throughput == nil {
					continue
				}
				r.Stages[i] = addStage(r.Stages[i], st.DurationS, *st.Throughput)
			}
		case maintenance[m.Type]:
			steps++
			r.Recovered = m.Recovered == nil || *m.Recovered
			if m.FailEndS == nil {
				continue // users saw nothing of this step
			}
			left := *m.FailEndS - m.InjectS
			for _, n := range StageNames {
				st, ok := m.Stages[string(n)]
				if !ok || left <= 0 || st.DurationS <= 0 {
					continue
				}
				d := math.Min(st.DurationS, left)
				left -= d
				if st.Throughput != nil {
					dur += d
					work += d * *st.Throughput
				}
			}
		}
	}
	if steps > 0 && dur > 0 {
		r.Stages[6] = addStage(r.Stages[6], dur, work/dur)
	}
}

// addStage is st extended by d seconds at throughput tp.
func addStage(st *Stage, d, tp float64) *Stage {
	if st == nil || st.Duration == 0 || math.IsNaN(st.Throughput) {
		return &Stage{Duration: d, Throughput: tp}
	}
	return &Stage{Duration: st.Duration + d, Throughput: (st.Duration*st.Throughput + d*tp) / (st.Duration + d)}
}

// maintenance are the instant maintenance types of the fault catalogue.
var maintenance = map[string]bool{"restart-node": true, "restart-all": true, "replace-disk": true,
	"start-reconstruction": true, "remove-wrong-disk": true}

// RatesFault is one fault of a fault load given to FromRuns: its rate,
// repair time, the run fault type that measures it, and stages supplied
// by hand with the reason they cannot be measured.
type RatesFault struct {
	Name     string
	Type     string // the runs' fault type; default Name
	MTTF     time.Duration
	Group    string
	Share    float64
	MTTR     time.Duration
	Supplied map[byte]SuppliedStage
	// SelfRepair (repair: self) says an occurrence ends by itself after
	// MTTR, before any operator acts: the runs' operator reset and what
	// followed it (stages F, G) are not part of its course and are left
	// out, unless supplied. Default (repair: operator): the runs' reset is
	// the repair.
	SelfRepair bool
}

// SuppliedStage is a stage the runs cannot give, with why.
type SuppliedStage struct {
	Duration    time.Duration
	UntilRepair bool
	Throughput  float64 // requests/s at the runs' scale (before T_n scaling); -1 = keep the measured throughput
	Relative    bool    // Throughput is a fraction of the normal throughput
	Reason      string
	// Unrecovered: supplied only when a run never recovered (when:
	// unrecovered), e.g. the time until an operator resets a cluster that
	// does not merge; otherwise the measured stage is kept.
	Unrecovered bool
}

// Rates is the fault load FromRuns completes.
type Rates struct {
	File                string
	NormalThroughput    float64 // 0: the runs' mean baseline
	NormalReason        string  // why T_n is supplied
	IdealUnavailability float64
	Denominator         string
	Groups              map[string]time.Duration
	GroupOrder          []string
	Faults              []RatesFault
}

// ScaleTime multiplies every time of r — MTTFs, MTTRs, supplied stage
// durations — by f, for runs made with faultbench run --time-scale f (whose
// measured stages are already in the compressed time).
func (r *Rates) ScaleTime(f float64) {
	sc := func(d time.Duration) time.Duration { return time.Duration(float64(d) * f) }
	for g, d := range r.Groups {
		r.Groups[g] = sc(d)
	}
	for i := range r.Faults {
		rf := &r.Faults[i]
		rf.MTTF, rf.MTTR = sc(rf.MTTF), sc(rf.MTTR)
		sup := map[byte]SuppliedStage{}
		for k, st := range rf.Supplied {
			st.Duration = sc(st.Duration)
			sup[k] = st
		}
		rf.Supplied = sup
	}
}

// LoadRates reads a fault load for FromRuns (docs/models.md, "From runs").
func LoadRates(path string) (*Rates, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &InputError{File: path, Msg: err.Error()}
	}
	return ParseRates(path, data)
}

// ParseRates decodes a fault load for FromRuns.
func ParseRates(file string, data []byte) (*Rates, error) {
	d := doc{file}
	root, err := d.parse(data)
	if err != nil {
		return nil, err
	}
	top, err := d.fields(root, "", "normal_throughput", "normal_throughput_reason", "ideal_unavailability", "denominator", "groups", "faults")
	if err != nil {
		return nil, err
	}
	r := &Rates{File: file, IdealUnavailability: 1e-5, Denominator: DenomMTTF, Groups: map[string]time.Duration{}}
	if n, ok := top["normal_throughput"]; ok {
		if r.NormalThroughput, err = d.positive(n, "normal_throughput"); err != nil {
			return nil, err
		}
		rn, ok := top["normal_throughput_reason"]
		if !ok {
			return nil, d.errf(n, "normal_throughput_reason", "missing: a supplied normal throughput needs a reason (e.g. the knee measured with faultbench run ...); omit normal_throughput to use the runs' baseline")
		}
		if r.NormalReason, err = d.str(rn, "normal_throughput_reason"); err != nil {
			return nil, err
		}
	}
	if n, ok := top["ideal_unavailability"]; ok {
		if r.IdealUnavailability, err = d.positive(n, "ideal_unavailability"); err != nil {
			return nil, err
		}
	}
	if n, ok := top["denominator"]; ok {
		if r.Denominator, err = d.str(n, "denominator"); err != nil {
			return nil, err
		}
		if r.Denominator != DenomMTTF && r.Denominator != DenomMTTFPlusMTTR {
			return nil, d.errf(n, "denominator", "must be %q or %q", DenomMTTF, DenomMTTFPlusMTTR)
		}
	}
	if n, ok := top["groups"]; ok {
		if n.Kind != yaml.MappingNode {
			return nil, d.errf(n, "groups", "must be a mapping of group name to {mttf}")
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			name := n.Content[i].Value
			g, err := d.fields(n.Content[i+1], "groups."+name, "mttf")
			if err != nil {
				return nil, err
			}
			m, ok := g["mttf"]
			if !ok {
				return nil, d.errf(n.Content[i+1], "groups."+name+".mttf", "missing")
			}
			if r.Groups[name], err = d.duration(m, "groups."+name+".mttf", false); err != nil {
				return nil, err
			}
			r.GroupOrder = append(r.GroupOrder, name)
		}
	}
	n, ok := top["faults"]
	if !ok {
		return nil, d.errf(root, "faults", "missing (a list of faults with mttf or group+share, and mttr)")
	}
	items, err := d.seq(n, "faults")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, item := range items {
		key := fmt.Sprintf("faults[%d]", i)
		m, err := d.fields(item, key, "name", "type", "mttf", "group", "share", "mttr", "supplied", "repair")
		if err != nil {
			return nil, err
		}
		var f RatesFault
		nn, ok := m["name"]
		if !ok {
			return nil, d.errf(item, key+".name", "missing")
		}
		if f.Name, err = d.str(nn, key+".name"); err != nil || f.Name == "" {
			return nil, d.errf(nn, key+".name", "must be a non-empty string")
		}
		if seen[f.Name] {
			return nil, d.errf(nn, key+".name", "fault %q named twice", f.Name)
		}
		seen[f.Name] = true
		f.Type = f.Name
		if t, ok := m["type"]; ok {
			if f.Type, err = d.str(t, key+".type"); err != nil {
				return nil, err
			}
		}
		if v, ok := m["mttr"]; ok {
			if f.MTTR, err = d.duration(v, key+".mttr", false); err != nil {
				return nil, err
			}
		}
		if v, ok := m["repair"]; ok {
			switch rv, _ := d.str(v, key+".repair"); rv {
			case "self":
				f.SelfRepair = true
			case "operator":
			default:
				return nil, d.errf(v, key+".repair", "%q: want self (an occurrence ends by itself after mttr, before the operator acts) or operator (the runs' reset is the repair; the default)", rv)
			}
		}
		mt, hasMTTF := m["mttf"]
		g, hasGroup := m["group"]
		switch {
		case hasMTTF && hasGroup:
			return nil, d.errf(g, key+".group", "give either mttf or group+share, not both")
		case hasMTTF:
			if f.MTTF, err = d.duration(mt, key+".mttf", false); err != nil {
				return nil, err
			}
		case hasGroup:
			if f.Group, err = d.str(g, key+".group"); err != nil {
				return nil, err
			}
			if _, ok := r.Groups[f.Group]; !ok {
				return nil, d.errf(g, key+".group", "group %q is not declared under groups", f.Group)
			}
			s, ok := m["share"]
			if !ok {
				return nil, d.errf(item, key+".share", "missing (the fraction of the group's rate)")
			}
			if f.Share, err = d.positive(s, key+".share"); err != nil {
				return nil, err
			}
		default:
			return nil, d.errf(item, key+".mttf", "missing (a Go duration such as 4380h, or group+share)")
		}
		if s, ok := m["supplied"]; ok {
			if f.Supplied, err = d.supplied(s, key+".supplied"); err != nil {
				return nil, err
			}
		}
		r.Faults = append(r.Faults, f)
	}
	return r, nil
}

func (d doc) supplied(n *yaml.Node, key string) (map[byte]SuppliedStage, error) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias // the same supplied stages for several faults (&anchor, *alias)
	}
	if n.Kind != yaml.MappingNode {
		return nil, d.errf(n, key, "must be a mapping of stage letters A..G to {duration, throughput, reason}")
	}
	out := map[byte]SuppliedStage{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		idx := strings.Index(StageNames, k.Value)
		sk := join(key, k.Value)
		if len(k.Value) != 1 || idx < 0 {
			return nil, d.errf(k, sk, "unknown stage (stages are A, B, C, D, E, F, G)")
		}
		m, err := d.fields(v, sk, "duration", "throughput", "reason", "when")
		if err != nil {
			return nil, err
		}
		var st SuppliedStage
		if w, ok := m["when"]; ok {
			if w.Value != "unrecovered" {
				return nil, d.errf(w, sk+".when", "must be \"unrecovered\" (supply the stage only for runs that never recovered), got %q", w.Value)
			}
			st.Unrecovered = true
		}
		rn, ok := m["reason"]
		if !ok {
			return nil, d.errf(v, sk+".reason", "missing: say why this stage cannot be measured (e.g. an operator's time to notice)")
		}
		if st.Reason, err = d.str(rn, sk+".reason"); err != nil || strings.TrimSpace(st.Reason) == "" {
			return nil, d.errf(rn, sk+".reason", "must be a non-empty string")
		}
		dn, ok := m["duration"]
		if !ok {
			return nil, d.errf(v, sk+".duration", "missing")
		}
		if dn.Kind == yaml.ScalarNode && dn.Value == "until_repair" {
			if idx >= preRepair {
				return nil, d.errf(dn, sk+".duration", "only stages A, B and C can last until_repair")
			}
			st.UntilRepair = true
		} else if st.Duration, err = d.duration(dn, sk+".duration", true); err != nil {
			return nil, err
		}
		st.Throughput = -1
		if tn, ok := m["throughput"]; ok {
			s := strings.TrimSpace(tn.Value)
			if pct, isPct := strings.CutSuffix(s, "%"); isPct && tn.Kind == yaml.ScalarNode {
				p, err := strconv.ParseFloat(pct, 64)
				if err != nil || p < 0 || math.IsNaN(p) {
					return nil, d.errf(tn, sk+".throughput", "%q is not a percentage of the normal throughput", tn.Value)
				}
				st.Throughput, st.Relative = p/100, true
			} else if st.Throughput, err = d.float(tn, sk+".throughput"); err != nil || st.Throughput < 0 {
				return nil, d.errf(tn, sk+".throughput", "must be ≥ 0 requests/s, or a percentage of the normal throughput such as 75%%")
			}
		}
		out[k.Value[0]] = st
	}
	return out, nil
}

// MeasuredStage is one stage of FromRuns' result, with its provenance.
type MeasuredStage struct {
	Stage
	Source string // SourceMeasured or SourceSupplied
	Reason string // supplied: why
	Runs   int    // measured: how many runs it is the mean of
}

// MeasuredFault is one fault of FromRuns' result.
type MeasuredFault struct {
	RatesFault
	Runs   []string
	Stages [7]*MeasuredStage
	// Note says where the runs' fault lasted much longer or shorter than
	// the fault load's repair time: the stages that follow the repair were
	// measured after another fault than the one the model charges them to.
	Note string
}

// Measured is the phase-2 input FromRuns writes.
type Measured struct {
	Rates            *Rates
	System, Mode     string
	Pages, PageSize  int
	NormalThroughput float64
	NormalSource     string // "measured: ..." or "supplied: ..."
	Baseline         float64
	Faults           []MeasuredFault
}

// FromRuns turns single-fault runs into a phase-2 input for the fault load
// r. Every fault of r must be measured by at least one run of its type
// (repetitions are averaged) unless all its stages are supplied; every run
// must hold exactly one fault and share the others' system, mode and page
// set. Measured throughputs are scaled by T_n / baseline when r supplies
// T_n (so a run at a light load gives the relative loss at the knee).
func FromRuns(r *Rates, dirs []string) (*Measured, error) {
	if len(dirs) == 0 {
		return nil, runsErr("fromruns needs at least one run directory")
	}
	byType := map[string][]*Run{}
	var first *Run
	var baseSum float64
	for _, dir := range dirs {
		run, err := ReadRun(dir)
		if err != nil {
			return nil, err
		}
		switch {
		case run.FaultCount == 0:
			return nil, runsErr("%s: the run has no fault (a baseline run?): fromruns takes one single-fault run per fault type", dir)
		case run.FaultCount > 1:
			return nil, runsErr("%s: the run has %d faults: fromruns takes single-fault runs (compare a multi-fault run with model validate)", dir, run.FaultCount)
		case !(run.Baseline > 0):
			return nil, runsErr("%s: summary.json has no baseline throughput (run faultbench analyze %s)", dir, dir)
		}
		if first == nil {
			first = run
		} else if run.System != first.System || run.Mode != first.Mode || run.Pages != first.Pages || run.PageSize != first.PageSize {
			return nil, runsErr("%s is %s mode %q with %d pages of %d B, but %s is %s mode %q with %d pages of %d B: give runs of one system, mode and page set",
				dir, run.System, run.Mode, run.Pages, run.PageSize, first.Dir, first.System, first.Mode, first.Pages, first.PageSize)
		}
		byType[run.Type] = append(byType[run.Type], run)
		baseSum += run.Baseline
	}
	baseline := baseSum / float64(len(dirs))
	m := &Measured{Rates: r, System: first.System, Mode: first.Mode, Pages: first.Pages, PageSize: first.PageSize, Baseline: baseline}
	scale := 1.0
	if r.NormalThroughput > 0 {
		m.NormalThroughput = r.NormalThroughput
		m.NormalSource = "supplied: " + r.NormalReason
		scale = r.NormalThroughput / baseline
	} else {
		m.NormalThroughput = baseline
		m.NormalSource = fmt.Sprintf("measured: the mean baseline of %d runs", len(dirs))
	}
	var missing []string
	for _, rf := range r.Faults {
		mf := MeasuredFault{RatesFault: rf}
		runs := byType[rf.Type]
		allSupplied := len(rf.Supplied) == len(StageNames)
		if len(runs) == 0 && !allSupplied {
			missing = append(missing, fmt.Sprintf("%s (type %s)", rf.Name, rf.Type))
			continue
		}
		for _, run := range runs {
			mf.Runs = append(mf.Runs, run.Dir)
		}
		recovered := true
		for _, run := range runs {
			recovered = recovered && run.Recovered
		}
		for i := range StageNames {
			if rf.SelfRepair && i >= 5 {
				if _, ok := rf.Supplied[StageNames[i]]; !ok {
					continue // the runs' operator reset is not this fault's course
				}
			}
			if sup, ok := rf.Supplied[StageNames[i]]; ok && (!sup.Unrecovered || !recovered) {
				st := &MeasuredStage{Source: SourceSupplied, Reason: sup.Reason}
				st.Duration, st.UntilRepair = sup.Duration.Seconds(), sup.UntilRepair
				switch {
				case sup.Relative:
					st.Throughput = sup.Throughput * m.NormalThroughput
				case sup.Throughput >= 0:
					st.Throughput = sup.Throughput * scale
				default:
					tp, ok := latestThroughput(runs, i)
					if !ok {
						return nil, runsErr("%s: fault %s: stage %c is supplied without a throughput, and the runs have none for it: give its throughput", r.File, rf.Name, StageNames[i])
					}
					st.Throughput = tp * scale
				}
				mf.Stages[i] = st
				continue
			}
			st, err := meanStage(runs, i)
			if err != nil {
				return nil, runsErr("%s: fault %s: %v: supply stage %c with a reason", r.File, rf.Name, err, StageNames[i])
			}
			if st == nil {
				continue
			}
			if i == 2 && rf.MTTR > 0 {
				st.UntilRepair = true // the run cleared the fault; the fault load repairs it after MTTR
				// Extended to the repair, a stage cannot serve more than is
				// offered: a short stage C caught in a backlog's burst (a
				// resumed node answering its queue) is held to the baseline.
				st.Throughput = math.Min(st.Throughput, baseline)
			}
			st.Throughput *= scale
			mf.Stages[i] = st
		}
		mf.Note = heldNote(runs, rf.MTTR)
		if _, hasE := rf.Supplied['E']; !recovered && !hasE && !allSupplied {
			return nil, runsErr("%s: fault %s: a run of it never recovered (its stage E lasts until someone resets the cluster, longer than the run): supply stage E's duration with a reason, e.g. the operator's time to notice (when: unrecovered)", r.File, rf.Name)
		}
		m.Faults = append(m.Faults, mf)
	}
	if len(missing) > 0 {
		var have []string
		for t := range byType {
			have = append(have, t)
		}
		sort.Strings(have)
		return nil, runsErr("%s: no run measures %s (the runs have: %s): add a run of each, or supply all seven stages with reasons", r.File, strings.Join(missing, ", "), strings.Join(have, ", "))
	}
	return m, nil
}

// heldNote compares how long the runs held their fault (injection to
// clear) with the fault load's repair time mttr. More than half again
// either way, it returns a note: a recovery measured after a 90-second
// fault (a backlog to drain, a split to mend) is not the recovery after a
// 20-second one, and phase 2 would carry it over.
func heldNote(runs []*Run, mttr time.Duration) string {
	if mttr <= 0 {
		return ""
	}
	var held float64
	n := 0
	for _, run := range runs {
		if run.ClearS > run.InjectS {
			held += run.ClearS - run.InjectS
			n++
		}
	}
	if n == 0 {
		return ""
	}
	held /= float64(n)
	ratio := held / mttr.Seconds()
	if ratio <= 1.5 && ratio >= 1/1.5 {
		return ""
	}
	return fmt.Sprintf("the runs held the fault %s, the fault load repairs it after %s: the stages after the repair (D-G) were measured after a fault %.2g times as long; runs whose fault lasts the mttr measure them",
		dur(time.Duration(math.Round(held*10))*100*time.Millisecond), dur(mttr), ratio)
}

// meanStage averages stage i over runs: durations by run, throughputs
// weighted by duration. nil when no run has the stage; an error when a run
// has time in it but no throughput.
func meanStage(runs []*Run, i int) (*MeasuredStage, error) {
	var dur, work float64
	n := 0
	for _, run := range runs {
		st := run.Stages[i]
		if st == nil || st.Duration == 0 {
			continue
		}
		if math.IsNaN(st.Throughput) {
			return nil, fmt.Errorf("stage %c of %s lasts %.3g s but has no throughput", StageNames[i], run.Dir, st.Duration)
		}
		dur += st.Duration
		work += st.Duration * st.Throughput
		n++
	}
	if n == 0 {
		return nil, nil
	}
	out := &MeasuredStage{Source: SourceMeasured, Runs: n}
	out.Duration = dur / float64(len(runs)) // a run without the stage counts as 0 s
	out.Throughput = work / dur
	return out, nil
}

// latestThroughput is the measured throughput of stage i, or else of the
// latest stage before it that the runs measured (a supplied stage E goes on
// at the level the run ended in).
func latestThroughput(runs []*Run, i int) (float64, bool) {
	for j := i; j >= 0; j-- {
		if st, err := meanStage(runs, j); err == nil && st != nil {
			return st.Throughput, true
		}
	}
	return 0, false
}

// FaultLoad returns m as a FaultLoad, ready for Evaluate.
func (m *Measured) FaultLoad() *FaultLoad {
	fl := &FaultLoad{NormalThroughput: m.NormalThroughput, IdealUnavailability: m.Rates.IdealUnavailability,
		Denominator: m.Rates.Denominator, Groups: map[string]float64{}}
	for g, mttf := range m.Rates.Groups {
		fl.Groups[g] = 1 / mttf.Seconds()
	}
	for _, mf := range m.Faults {
		f := Fault{Name: mf.Name, Group: mf.Group, Share: mf.Share, MTTR: mf.MTTR.Seconds()}
		if mf.Group == "" {
			f.Rate = 1 / mf.MTTF.Seconds()
		}
		if len(mf.Runs) > 0 {
			f.FromRun = mf.Runs[0]
		}
		for i, st := range mf.Stages {
			if st != nil {
				f.Stages[i] = st.Stage
			}
		}
		fl.Faults = append(fl.Faults, f)
	}
	return fl
}

// YAML writes m as a fault load `faultbench model performability` reads,
// every stage with its source (and reason).
func (m *Measured) YAML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Phase-2 input written by `faultbench model fromruns` from runs of %s mode %s\n", m.System, m.Mode)
	fmt.Fprintf(&b, "# (%d pages of %d B) and the fault load %s. Every stage says where it\n", m.Pages, m.PageSize, m.Rates.File)
	b.WriteString("# comes from: measured (the mean over the runs named above the fault) or\n# supplied (with the reason). Edit the fault load, not this file.\n")
	fmt.Fprintf(&b, "normal_throughput: %s   # %s\n", num(m.NormalThroughput), m.NormalSource)
	if m.NormalSource[0] == 's' {
		fmt.Fprintf(&b, "# The runs' baseline was %s requests/s: measured stage throughputs are scaled by %s.\n", num(m.Baseline), num(m.NormalThroughput/m.Baseline))
	}
	fmt.Fprintf(&b, "ideal_unavailability: %s\ndenominator: %s\n", num(m.Rates.IdealUnavailability), m.Rates.Denominator)
	if len(m.Rates.GroupOrder) > 0 {
		b.WriteString("groups:\n")
		for _, g := range m.Rates.GroupOrder {
			fmt.Fprintf(&b, "  %s: {mttf: %s}\n", g, dur(m.Rates.Groups[g]))
		}
	}
	b.WriteString("faults:\n")
	for _, f := range m.Faults {
		for _, r := range f.Runs {
			fmt.Fprintf(&b, "  # run: %s\n", r)
		}
		if f.Note != "" {
			fmt.Fprintf(&b, "  # note: %s\n", f.Note)
		}
		fmt.Fprintf(&b, "  - name: %s\n", f.Name)
		if f.Group != "" {
			fmt.Fprintf(&b, "    group: %s\n    share: %s\n", f.Group, num(f.Share))
		} else {
			fmt.Fprintf(&b, "    mttf: %s\n", dur(f.MTTF))
		}
		if f.MTTR > 0 {
			fmt.Fprintf(&b, "    mttr: %s\n", dur(f.MTTR))
		}
		b.WriteString("    stages:\n")
		any := false
		for i, st := range f.Stages {
			if st == nil {
				continue
			}
			any = true
			d := dur(time.Duration(st.Duration * float64(time.Second)))
			if st.UntilRepair {
				d = "until_repair"
			}
			fmt.Fprintf(&b, "      %c: {duration: %s, throughput: %s, source: %s", StageNames[i], d, num(st.Throughput), st.Source)
			if st.Reason != "" {
				fmt.Fprintf(&b, ", reason: %s", strconv.Quote(st.Reason))
			}
			b.WriteString("}\n")
		}
		if !any {
			// No stage differs from normal operation: state it explicitly.
			fmt.Fprintf(&b, "      C: {duration: 0s, throughput: %s, source: measured}\n", num(m.NormalThroughput))
		}
	}
	return b.String()
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', 7, 64) }

// dur formats d as a Go duration the fault-load parser reads, without
// sub-millisecond noise.
func dur(d time.Duration) string {
	if d >= time.Hour && d%time.Hour == 0 {
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return d.Round(time.Millisecond).String()
}

// runsErr is an input error of fromruns (its runs or its fault load).
func runsErr(format string, args ...any) error {
	return &InputError{File: "fromruns", Msg: fmt.Sprintf(format, args...)}
}
