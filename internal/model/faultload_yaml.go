package model

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// LoadFaultLoad reads and validates a fault-load file. from_run paths are
// relative to the file's directory.
func LoadFaultLoad(path string) (*FaultLoad, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &InputError{File: path, Msg: err.Error()}
	}
	return ParseFaultLoad(path, data, func(dir string) ([]byte, error) {
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(filepath.Dir(path), dir)
		}
		return os.ReadFile(filepath.Join(dir, "summary.json"))
	})
}

// ParseFaultLoad decodes a fault load. readRun returns the summary.json of a
// from_run directory; it may be nil when no fault uses from_run.
func ParseFaultLoad(file string, data []byte, readRun func(dir string) ([]byte, error)) (*FaultLoad, error) {
	d := doc{file}
	root, err := d.parse(data)
	if err != nil {
		return nil, err
	}
	top, err := d.fields(root, "", "normal_throughput", "ideal_unavailability", "denominator", "groups", "faults")
	if err != nil {
		return nil, err
	}
	fl := &FaultLoad{IdealUnavailability: 1e-5, Denominator: DenomMTTF, Groups: map[string]float64{}}
	n, ok := top["normal_throughput"]
	if !ok {
		return nil, d.errf(root, "normal_throughput", "missing (the service's throughput without faults, requests/s)")
	}
	if fl.NormalThroughput, err = d.positive(n, "normal_throughput"); err != nil {
		return nil, err
	}
	if n, ok := top["ideal_unavailability"]; ok {
		if fl.IdealUnavailability, err = d.positive(n, "ideal_unavailability"); err != nil {
			return nil, err
		}
		if fl.IdealUnavailability >= 1 {
			return nil, d.errf(n, "ideal_unavailability", "must be < 1, got %v", fl.IdealUnavailability)
		}
	}
	if n, ok := top["denominator"]; ok {
		if fl.Denominator, err = d.str(n, "denominator"); err != nil {
			return nil, err
		}
		if fl.Denominator != DenomMTTF && fl.Denominator != DenomMTTFPlusMTTR {
			return nil, d.errf(n, "denominator", "must be %q or %q, got %q", DenomMTTF, DenomMTTFPlusMTTR, fl.Denominator)
		}
	}
	if n, ok := top["groups"]; ok {
		if err := d.groups(n, fl); err != nil {
			return nil, err
		}
	}
	n, ok = top["faults"]
	if !ok {
		return nil, d.errf(root, "faults", "missing (a list of faults with mttf and stages)")
	}
	items, err := d.seq(n, "faults")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, item := range items {
		f, err := d.fault(item, fmt.Sprintf("faults[%d]", i), fl, readRun)
		if err != nil {
			return nil, err
		}
		if seen[f.Name] {
			return nil, d.errf(item, fmt.Sprintf("faults[%d].name", i), "fault %q named twice", f.Name)
		}
		if _, clash := fl.Groups[f.Name]; clash {
			return nil, d.errf(item, fmt.Sprintf("faults[%d].name", i), "%q is also a group name", f.Name)
		}
		seen[f.Name] = true
		fl.Faults = append(fl.Faults, f)
	}
	return fl, nil
}

func (d doc) groups(n *yaml.Node, fl *FaultLoad) error {
	if n.Kind != yaml.MappingNode {
		return d.errf(n, "groups", "must be a mapping of group name to {mttf}")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		name := n.Content[i].Value
		key := "groups." + name
		g, err := d.fields(n.Content[i+1], key, "mttf")
		if err != nil {
			return err
		}
		m, ok := g["mttf"]
		if !ok {
			return d.errf(n.Content[i+1], key+".mttf", "missing")
		}
		mttf, err := d.duration(m, key+".mttf", false)
		if err != nil {
			return err
		}
		fl.Groups[name] = 1 / mttf.Seconds()
	}
	return nil
}

func (d doc) fault(n *yaml.Node, key string, fl *FaultLoad, readRun func(string) ([]byte, error)) (Fault, error) {
	var f Fault
	m, err := d.fields(n, key, "name", "mttf", "mttr", "group", "share", "stages", "from_run", "run_fault")
	if err != nil {
		return f, err
	}
	nn, ok := m["name"]
	if !ok {
		return f, d.errf(n, key+".name", "missing")
	}
	if f.Name, err = d.str(nn, key+".name"); err != nil {
		return f, err
	}
	if f.Name == "" {
		return f, d.errf(nn, key+".name", "must not be empty")
	}
	if v, ok := m["mttr"]; ok {
		mttr, err := d.duration(v, key+".mttr", false)
		if err != nil {
			return f, err
		}
		f.MTTR = mttr.Seconds()
	}
	// The rate: an mttf of its own, or a share of a group's.
	mt, hasMTTF := m["mttf"]
	g, hasGroup := m["group"]
	switch {
	case hasMTTF && hasGroup:
		return f, d.errf(g, key+".group", "give either mttf or group+share, not both")
	case hasMTTF:
		mttf, err := d.duration(mt, key+".mttf", false)
		if err != nil {
			return f, err
		}
		f.Rate = 1 / mttf.Seconds()
	case hasGroup:
		if f.Group, err = d.str(g, key+".group"); err != nil {
			return f, err
		}
		if _, ok := fl.Groups[f.Group]; !ok {
			return f, d.errf(g, key+".group", "group %q is not declared under groups", f.Group)
		}
		s, ok := m["share"]
		if !ok {
			return f, d.errf(n, key+".share", "missing (the fraction of the group's rate, e.g. 0.4)")
		}
		if f.Share, err = d.positive(s, key+".share"); err != nil {
			return f, err
		}
		if f.Share > 1 {
			return f, d.errf(s, key+".share", "must be ≤ 1, got %v", f.Share)
		}
	default:
		return f, d.errf(n, key+".mttf", "missing (a Go duration such as 4380h, or group+share)")
	}
	if s, ok := m["share"]; ok && !hasGroup {
		return f, d.errf(s, key+".share", "share needs a group")
	}
	// Stages: from a run, then overridden by those given here.
	var fromRun [7]*Stage
	if r, ok := m["from_run"]; ok {
		if f.FromRun, err = d.str(r, key+".from_run"); err != nil {
			return f, err
		}
		index := 0
		if idx, ok := m["run_fault"]; ok {
			v, err := d.float(idx, key+".run_fault")
			if err != nil || v < 0 || v != math.Trunc(v) {
				return f, d.errf(idx, key+".run_fault", "must be a fault index 0, 1, ...")
			}
			index = int(v)
		}
		if readRun == nil {
			return f, d.errf(r, key+".from_run", "runs cannot be read here")
		}
		if fromRun, err = runStages(readRun, f.FromRun, index); err != nil {
			return f, d.errf(r, key+".from_run", "%v", err)
		}
	} else if idx, ok := m["run_fault"]; ok {
		return f, d.errf(idx, key+".run_fault", "run_fault needs from_run")
	}
	given := map[byte]*yaml.Node{}
	if s, ok := m["stages"]; ok {
		if err := d.stages(s, key+".stages", &f, given); err != nil {
			return f, err
		}
	}
	for i := range fromRun {
		if fromRun[i] == nil || given[StageNames[i]] != nil {
			continue
		}
		st := *fromRun[i]
		if i == 2 && f.MTTR > 0 {
			// The run's stage C ended when the experiment cleared the fault;
			// under the fault load it lasts until the repair instead.
			st.UntilRepair = true
		}
		if math.IsNaN(st.Throughput) {
			if st.Duration > 0 || st.UntilRepair {
				return f, d.errf(m["from_run"], key+".from_run", "stage %c of the run has no throughput; give it under stages", StageNames[i])
			}
			st.Throughput = 0
		}
		f.Stages[i] = st
	}
	if f.MTTR == 0 {
		for i, st := range f.Stages {
			if st.UntilRepair {
				where := given[StageNames[i]]
				if where == nil {
					where = n
				}
				return f, d.errf(where, fmt.Sprintf("%s.stages.%c", key, StageNames[i]), "until_repair needs the fault's mttr")
			}
		}
	}
	if f.FromRun == "" && len(given) == 0 {
		return f, d.errf(n, key+".stages", "missing (stages A..G, or from_run)")
	}
	return f, nil
}

func (d doc) stages(n *yaml.Node, key string, f *Fault, given map[byte]*yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return d.errf(n, key, "must be a mapping of stage letters A..G")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		idx := strings.Index(StageNames, k.Value)
		if len(k.Value) != 1 || idx < 0 {
			return d.errf(k, join(key, k.Value), "unknown stage (stages are A, B, C, D, E, F, G)")
		}
		if given[k.Value[0]] != nil {
			return d.errf(k, join(key, k.Value), "stage given twice")
		}
		given[k.Value[0]] = k
		sk := join(key, k.Value)
		m, err := d.fields(v, sk, "duration", "throughput", "source", "reason")
		if err != nil {
			return err
		}
		if src, ok := m["source"]; ok {
			// Provenance written by fromruns: checked, not used.
			switch src.Value {
			case SourceMeasured:
			case SourceSupplied:
				if r, ok := m["reason"]; !ok || strings.TrimSpace(r.Value) == "" {
					return d.errf(src, sk+".reason", "a supplied stage needs a reason")
				}
			default:
				return d.errf(src, sk+".source", "must be %q or %q, got %q", SourceMeasured, SourceSupplied, src.Value)
			}
		}
		var st Stage
		dn, ok := m["duration"]
		if !ok {
			return d.errf(v, sk+".duration", "missing")
		}
		if dn.Kind == yaml.ScalarNode && dn.Value == "until_repair" {
			if idx >= preRepair {
				return d.errf(dn, sk+".duration", "only stages A, B and C can last until_repair (the later stages follow the repair)")
			}
			st.UntilRepair = true
		} else {
			dur, err := d.duration(dn, sk+".duration", true)
			if err != nil {
				return err
			}
			st.Duration = dur.Seconds()
		}
		tn, ok := m["throughput"]
		if !ok {
			return d.errf(v, sk+".throughput", "missing")
		}
		if st.Throughput, err = d.float(tn, sk+".throughput"); err != nil {
			return err
		}
		if st.Throughput < 0 {
			return d.errf(tn, sk+".throughput", "must be ≥ 0, got %v", st.Throughput)
		}
		f.Stages[idx] = st
	}
	return nil
}
