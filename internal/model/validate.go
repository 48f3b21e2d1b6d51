package model

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Validation compares phase 2's prediction for a fault load with a run that
// injected the same fault load as recurring Poisson processes: a run the
// model never saw. JSON keys are a contract.
type Validation struct {
	Run        string  `json:"run"`
	ObservedS  float64 `json:"observed_s"` // the run after its first phase (warm-up)
	Faults     int     `json:"faults"`     // occurrences in the observed time
	OverlapS   float64 `json:"overlap_s"`  // time with two or more faults in effect
	Overlap    float64 `json:"overlap_fraction"`
	NormalTput float64 `json:"normal_throughput"` // the run's baseline

	Predicted Comparison `json:"predicted"`
	Measured  Comparison `json:"measured"`
	// NoOverlap is the measurement without the overlapping stretches.
	NoOverlap Comparison `json:"measured_without_overlap"`

	UnavailabilityError          float64 `json:"unavailability_rel_error"`            // (measured − predicted) / predicted
	UnavailabilityErrorNoOverlap float64 `json:"unavailability_rel_error_no_overlap"` // the same without overlapping stretches
	ThroughputError              float64 `json:"throughput_rel_error"`
	// CILow and CIHigh bound the measured unavailability (95%): a Poisson
	// count of faults, relative half-width 1.96/√faults.
	CILow  float64 `json:"unavailability_ci_low"`
	CIHigh float64 `json:"unavailability_ci_high"`

	ByFault []FaultCheck `json:"by_fault"`
	// Outside is the unavailability measured while no fault was in effect
	// (stages the model gives no fault, e.g. noise or effects outlasting
	// the run's view of a fault).
	Outside float64 `json:"unavailability_outside_faults"`
	// Offered is the number of requests offered in the observed time.
	Offered float64 `json:"offered"`

	// Repetitions of the run (Pool): every figure above is pooled over
	// Runs (time, requests and occurrences summed; unavailabilities
	// weighted by the requests offered), and RepCILow/RepCIHigh bound the
	// unavailability from the spread of the repetitions' own (95%,
	// Student's t over the Runs' unavailabilities). Absent for one run.
	Runs      []string      `json:"runs,omitempty"`
	PerRun    []RunMeasured `json:"per_run,omitempty"`
	RepCILow  float64       `json:"unavailability_ci_reps_low,omitempty"`
	RepCIHigh float64       `json:"unavailability_ci_reps_high,omitempty"`
}

// RunMeasured is one repetition's measurement, beside the pooled one.
type RunMeasured struct {
	Run            string  `json:"run"`
	Faults         int     `json:"faults"`
	Overlap        float64 `json:"overlap_fraction"`
	Unavailability float64 `json:"unavailability"`
	Error          float64 `json:"unavailability_rel_error"`
}

// Comparison is an unavailability and a mean throughput.
type Comparison struct {
	Unavailability float64 `json:"unavailability"` // 1 − A: the fraction of offered requests not served
	Throughput     float64 `json:"throughput"`     // mean requests/s served
}

// FaultCheck is one fault type's share, predicted and measured (measured:
// requests lost while only this fault was in effect, over all offered, and
// extended to all its time in effect).
type FaultCheck struct {
	Name          string  `json:"name"`
	Occurrences   int     `json:"occurrences"`
	Predicted     float64 `json:"predicted_unavailability"`
	Measured      float64 `json:"measured_unavailability"`
	PredictedMTTF float64 `json:"model_mttf_s"`
	RunMTTF       float64 `json:"run_mttf_s"`
}

type window struct {
	t, offered, ok float64
}

type validateSummary struct {
	Run struct {
		WindowS float64 `json:"window_s"`
	} `json:"run"`
	Baseline struct {
		Mean float64 `json:"mean"`
	} `json:"baseline"`
	PhaseOrder []string `json:"phase_order"`
	Faults     []struct {
		Type       string   `json:"type"`
		InjectS    float64  `json:"inject_s"`
		ClearS     *float64 `json:"clear_s"`
		FailureEnd *float64 `json:"failure_end_s"`
	} `json:"faults"`
}

type validateScenario struct {
	Faults []struct {
		Type     string `yaml:"type"`
		Duration string `yaml:"duration"`
		Every    string `yaml:"every"`
		Mode     string `yaml:"mode"`
	} `yaml:"faults"`
}

// Validate predicts fl's unavailability and mean throughput and compares
// them with the run in dir. The run's scenario must inject every fault of
// fl, and only those, each recurring as a Poisson process (every:
// poisson(MEAN)) whose mean cycle (MEAN plus the occurrence's duration, or
// the fault's MTTR for a fault the operator repairs) matches the fault's
// MTTF within 10%; otherwise Validate refuses and says how to align them.
func Validate(fl *FaultLoad, dir string) (*Validation, error) {
	sj := filepath.Join(dir, "summary.json")
	data, err := os.ReadFile(sj)
	if err != nil {
		return nil, &InputError{File: sj, Msg: err.Error()}
	}
	var sum validateSummary
	if err := json.Unmarshal(data, &sum); err != nil {
		return nil, &InputError{File: sj, Msg: err.Error()}
	}
	var raw struct {
		Phases map[string]struct {
			StartS float64 `json:"start_s"`
			EndS   float64 `json:"end_s"`
		} `json:"phases"`
	}
	_ = json.Unmarshal(data, &raw)
	sy := filepath.Join(dir, "scenario.yaml")
	data, err = os.ReadFile(sy)
	if err != nil {
		return nil, &InputError{File: sy, Msg: err.Error()}
	}
	var sc validateScenario
	if err := yaml.Unmarshal(data, &sc); err != nil {
		return nil, &InputError{File: sy, Msg: err.Error()}
	}
	v := &Validation{Run: dir, NormalTput: sum.Baseline.Mean}

	// The fault loads must agree.
	model := map[string]*Fault{}
	for i := range fl.Faults {
		model[fl.Faults[i].Name] = &fl.Faults[i]
	}
	runMTTF := map[string]float64{}
	for i, f := range sc.Faults {
		key := fmt.Sprintf("faults[%d]", i)
		mf := model[f.Type]
		if mf == nil {
			return nil, &InputError{File: sy, Key: key + ".type", Msg: fmt.Sprintf("the run injects %s, which the model's fault load does not have: add it to the model (mttf = its every's mean plus its duration) or validate against a run of the model's faults", f.Type)}
		}
		mean, ok := strings.CutPrefix(f.Every, "poisson(")
		if !ok || !strings.HasSuffix(mean, ")") {
			return nil, &InputError{File: sy, Key: key + ".every", Msg: fmt.Sprintf("%s recurs as %q: validate needs every fault recurring as poisson(MEAN), as phase 2 assumes", f.Type, f.Every)}
		}
		gap, err := time.ParseDuration(strings.TrimSuffix(mean, ")"))
		if err != nil {
			return nil, &InputError{File: sy, Key: key + ".every", Msg: err.Error()}
		}
		occ := mf.MTTR
		if f.Duration != "" {
			d, err := time.ParseDuration(f.Duration)
			if err != nil {
				return nil, &InputError{File: sy, Key: key + ".duration", Msg: err.Error()}
			}
			occ = d.Seconds()
		}
		runMTTF[f.Type] += 1 / (gap.Seconds() + occ) // several entries of one type add their rates
	}
	for _, f := range fl.Faults {
		r, ok := runMTTF[f.Name]
		if !ok {
			return nil, validateErr("the model has fault %s, which the run %s never injects: the run's fault load differs from the model's (drop it from the model, or rerun with it)", f.Name, dir)
		}
		want := 1 / fl.rate(&f)
		got := 1 / r
		if math.Abs(got-want) > 0.1*want {
			return nil, validateErr("fault %s: the run recurs every %.4g s on average (every's mean plus the occurrence), the model's mttf is %.4g s: the fault loads differ; give the model mttf: %s (or rerun)", f.Name, got, want, time.Duration(got*float64(time.Second)).Round(time.Millisecond))
		}
	}

	// The measured windows, after the warm-up phase.
	wins, err := readWindows(filepath.Join(dir, "windows.csv"))
	if err != nil {
		return nil, err
	}
	wlen := sum.Run.WindowS
	if wlen <= 0 && len(wins) > 1 {
		wlen = wins[1].t - wins[0].t
	}
	from := 0.0
	if len(sum.PhaseOrder) > 1 {
		from = raw.Phases[sum.PhaseOrder[1]].StartS
	}
	var obs []window
	for _, w := range wins {
		if w.t >= from {
			obs = append(obs, w)
		}
	}
	if len(obs) == 0 || wlen <= 0 {
		return nil, validateErr("%s: no windows after the warm-up (from %.3g s)", dir, from)
	}
	end := obs[len(obs)-1].t + wlen

	// Fault intervals: injection to the later of the clear and the end of
	// the failure.
	var ivs []faultSpan
	for _, f := range sum.Faults {
		e := f.InjectS
		if f.ClearS != nil {
			e = math.Max(e, *f.ClearS)
		} else {
			e = end
		}
		if f.FailureEnd != nil {
			e = math.Max(e, *f.FailureEnd)
		}
		if !(e > from && f.InjectS < end) {
			continue
		}
		x := faultSpan{f.Type, math.Max(f.InjectS, from), math.Min(e, end)}
		// A node that exited on its own while a fault was in effect (a VIA
		// node failing fast on a bad parameter, and its peer) is that
		// fault's consequence, as fromruns counts it: its time extends the
		// fault's, rather than counting as a second fault that overlaps.
		if f.Type == unplannedType {
			if k := causeOf(ivs, f.InjectS, wlen); k >= 0 {
				ivs[k].end = math.Max(ivs[k].end, x.end)
				continue
			}
		}
		ivs = append(ivs, x)
	}
	v.Faults = len(ivs)
	// For each window: how many faults were in effect during it, and which.
	var offered, ok, lostOutside float64
	lostBy := map[string]float64{}
	timeIn, timeOnly := map[string]float64{}, map[string]float64{} // windows with the fault in effect; with it alone
	occurrences := map[string]int{}
	for _, x := range ivs {
		occurrences[x.typ]++
	}
	// Overlap time, exactly, by sweeping the interval endpoints.
	type ev struct {
		t float64
		d int
	}
	var evs []ev
	for _, x := range ivs {
		evs = append(evs, ev{x.start, 1}, ev{x.end, -1})
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].t != evs[j].t {
			return evs[i].t < evs[j].t
		}
		return evs[i].d < evs[j].d
	})
	active := 0
	for i, e := range evs {
		if active >= 2 && i > 0 {
			v.OverlapS += e.t - evs[i-1].t
		}
		active += e.d
	}
	for _, w := range obs {
		offered += w.offered
		ok += w.ok
		var in []string
		for _, x := range ivs {
			if x.start < w.t+wlen && x.end > w.t {
				in = append(in, x.typ)
			}
		}
		lost := math.Max(0, w.offered-w.ok)
		switch len(in) {
		case 0:
			lostOutside += lost
		case 1:
			lostBy[in[0]] += lost
			timeOnly[in[0]]++
		}
		for _, typ := range uniq(in) {
			timeIn[typ]++
		}
	}
	v.ObservedS = end - from
	v.Overlap = v.OverlapS / v.ObservedS
	if offered <= 0 {
		return nil, validateErr("%s: no requests offered after the warm-up", dir)
	}
	v.Offered = offered
	v.Measured = Comparison{Unavailability: 1 - ok/offered, Throughput: ok / v.ObservedS}
	v.Outside = lostOutside / offered
	// Without the overlapping stretches: each fault's loss while it was
	// alone, extended to all of its time in effect (as if its overlapped
	// part had lost at the same rate), plus the loss outside faults.
	only := map[string]float64{}
	v.NoOverlap.Unavailability = v.Outside
	for typ, l := range lostBy {
		if timeOnly[typ] > 0 {
			only[typ] = l / offered * timeIn[typ] / timeOnly[typ]
			v.NoOverlap.Unavailability += only[typ]
		}
	}
	v.NoOverlap.Throughput = (1 - v.NoOverlap.Unavailability) * offered / v.ObservedS

	p := Evaluate(fl)
	v.Predicted = Comparison{Unavailability: p.Unavailability, Throughput: p.AverageThroughput}
	for _, s := range p.Faults {
		v.ByFault = append(v.ByFault, FaultCheck{Name: s.Name, Occurrences: occurrences[s.Name], Predicted: s.Unavailability,
			Measured: only[s.Name], PredictedMTTF: 1 / s.Rate, RunMTTF: 1 / runMTTF[s.Name]})
	}
	v.compare()
	return v, nil
}

// compare sets the relative errors and the fault-count interval from the
// predicted and measured figures.
func (v *Validation) compare() {
	v.UnavailabilityError = relErr(v.Measured.Unavailability, v.Predicted.Unavailability)
	v.UnavailabilityErrorNoOverlap = relErr(v.NoOverlap.Unavailability, v.Predicted.Unavailability)
	v.ThroughputError = relErr(v.Measured.Throughput, v.Predicted.Throughput)
	v.CILow, v.CIHigh = 0, 0
	if v.Faults > 0 {
		h := 1.96 / math.Sqrt(float64(v.Faults))
		v.CILow, v.CIHigh = v.Measured.Unavailability*math.Max(0, 1-h), v.Measured.Unavailability*(1+h)
	}
}

// ValidateRuns validates fl against each of dirs, repetitions of one
// scenario (its seed aside), and pools them (Pool). One dir is Validate.
func ValidateRuns(fl *FaultLoad, dirs ...string) (*Validation, error) {
	var vs []*Validation
	for _, d := range dirs {
		v, err := Validate(fl, d)
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	return Pool(vs)
}

// Pool combines validations of one model against repetitions of a run: a
// longer observation with more fault occurrences, which narrows the
// fault-count interval, and the repetitions' spread, which gives an
// interval of its own. The validations must share the model (the same
// predictions); a single one is returned as it is.
func Pool(vs []*Validation) (*Validation, error) {
	if len(vs) == 0 {
		return nil, validateErr("no runs to pool")
	}
	if len(vs) == 1 {
		return vs[0], nil
	}
	first := vs[0]
	p := &Validation{Run: first.Run, Predicted: first.Predicted}
	weigh := func(get func(*Validation) float64) float64 {
		var sum float64
		for _, v := range vs {
			sum += get(v) * v.Offered
		}
		return sum / p.Offered
	}
	for _, v := range vs {
		if v.Predicted != first.Predicted || len(v.ByFault) != len(first.ByFault) {
			return nil, validateErr("runs %s and %s were validated against different models: pool only repetitions of one run against one model", first.Run, v.Run)
		}
		p.Runs = append(p.Runs, v.Run)
		p.ObservedS += v.ObservedS
		p.Faults += v.Faults
		p.OverlapS += v.OverlapS
		p.Offered += v.Offered
		p.NormalTput += v.NormalTput / float64(len(vs))
		p.Measured.Throughput += v.Measured.Throughput * v.ObservedS
		p.NoOverlap.Throughput += v.NoOverlap.Throughput * v.ObservedS
	}
	if p.Offered <= 0 || p.ObservedS <= 0 {
		return nil, validateErr("the runs offered no requests after their warm-ups")
	}
	p.Overlap = p.OverlapS / p.ObservedS
	p.Measured.Throughput /= p.ObservedS
	p.NoOverlap.Throughput /= p.ObservedS
	p.Measured.Unavailability = weigh(func(v *Validation) float64 { return v.Measured.Unavailability })
	p.NoOverlap.Unavailability = weigh(func(v *Validation) float64 { return v.NoOverlap.Unavailability })
	p.Outside = weigh(func(v *Validation) float64 { return v.Outside })
	for i, f := range first.ByFault {
		pf := f
		pf.Occurrences = 0
		for _, v := range vs {
			pf.Occurrences += v.ByFault[i].Occurrences
		}
		pf.Measured = weigh(func(v *Validation) float64 { return v.ByFault[i].Measured })
		p.ByFault = append(p.ByFault, pf)
	}
	p.compare()
	us := make([]float64, len(vs))
	var mean float64
	for i, v := range vs {
		us[i] = v.Measured.Unavailability
		mean += us[i] / float64(len(vs))
		p.PerRun = append(p.PerRun, RunMeasured{Run: v.Run, Faults: v.Faults, Overlap: v.Overlap,
			Unavailability: v.Measured.Unavailability, Error: v.UnavailabilityError})
	}
	var ss float64
	for _, u := range us {
		ss += (u - mean) * (u - mean)
	}
	half := studentT975(len(vs)-1) * math.Sqrt(ss/float64(len(vs)-1)/float64(len(vs)))
	p.RepCILow, p.RepCIHigh = math.Max(0, mean-half), mean+half
	return p, nil
}

// studentT975 is the 97.5% quantile of Student's t with df degrees of
// freedom (a two-sided 95% interval), from the table for small df and the
// normal's 1.96 beyond it.
func studentT975(df int) float64 {
	table := []float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086}
	switch {
	case df < 1:
		return math.Inf(1)
	case df <= len(table):
		return table[df-1]
	case df <= 30:
		return 2.042
	}
	return 1.96
}

// faultSpan is a fault of the run: its type and its time in effect.
type faultSpan struct {
	typ        string
	start, end float64
}

// causeOf is the index of the latest injected fault of ivs in effect at t
// (or ended less than a window before it), -1 if none.
func causeOf(ivs []faultSpan, t, wlen float64) int {
	for k := len(ivs) - 1; k >= 0; k-- {
		if ivs[k].typ != unplannedType && ivs[k].start <= t && t <= ivs[k].end+wlen {
			return k
		}
	}
	return -1
}

func relErr(measured, predicted float64) float64 {
	if predicted == 0 {
		if measured == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return (measured - predicted) / predicted
}

// readWindows reads windows.csv's t_start_s, offered and ok columns.
func readWindows(path string) ([]window, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &InputError{File: path, Msg: err.Error()}
	}
	defer f.Close()
	r := csv.NewReader(f)
	head, err := r.Read()
	if err != nil {
		return nil, &InputError{File: path, Msg: "no header: " + err.Error()}
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	for _, k := range []string{"t_start_s", "offered", "ok"} {
		if _, ok := col[k]; !ok {
			return nil, &InputError{File: path, Msg: "no column " + k}
		}
	}
	var out []window
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, &InputError{File: path, Line: line, Msg: err.Error()}
		}
		var w window
		for k, p := range map[string]*float64{"t_start_s": &w.t, "offered": &w.offered, "ok": &w.ok} {
			if *p, err = strconv.ParseFloat(rec[col[k]], 64); err != nil {
				return nil, &InputError{File: path, Line: line, Key: k, Msg: err.Error()}
			}
		}
		out = append(out, w)
	}
	return out, nil
}

// WriteTable prints the comparison.
func (v *Validation) WriteTable(w io.Writer) error {
	pct := func(x float64) string { return strconv.FormatFloat(100*x, 'f', 1, 64) + "%" }
	var b strings.Builder
	if len(v.Runs) > 1 {
		fmt.Fprintf(&b, "%d runs pooled: %.0f s observed after their warm-ups, %d fault occurrences, overlap %.1f%% of the time (%.0f s)\n",
			len(v.Runs), v.ObservedS, v.Faults, 100*v.Overlap, v.OverlapS)
		for _, r := range v.PerRun {
			fmt.Fprintf(&b, "  %s: %d faults, overlap %.1f%%, unavailability %.5g (%s)\n", r.Run, r.Faults, 100*r.Overlap, r.Unavailability, pct(r.Error))
		}
	} else {
		fmt.Fprintf(&b, "run %s: %.0f s observed after warm-up, %d fault occurrences, overlap %.1f%% of the time (%.0f s)\n",
			v.Run, v.ObservedS, v.Faults, 100*v.Overlap, v.OverlapS)
	}
	fmt.Fprintf(&b, "%-34s %14s %14s %10s\n", "", "predicted", "measured", "rel.error")
	fmt.Fprintf(&b, "%-34s %14.5g %14.5g %10s\n", "unavailability (1 - A)", v.Predicted.Unavailability, v.Measured.Unavailability, pct(v.UnavailabilityError))
	fmt.Fprintf(&b, "%-34s %14s %14.5g %10s\n", "  without overlapping stretches", "", v.NoOverlap.Unavailability, pct(v.UnavailabilityErrorNoOverlap))
	fmt.Fprintf(&b, "%-34s %14s [%.5g, %.5g]\n", "  95% interval (fault count)", "", v.CILow, v.CIHigh)
	if len(v.Runs) > 1 {
		fmt.Fprintf(&b, "%-34s %14s [%.5g, %.5g]\n", "  95% interval (repetitions)", "", v.RepCILow, v.RepCIHigh)
	}
	fmt.Fprintf(&b, "%-34s %14.5g %14.5g %10s\n", "mean throughput (requests/s)", v.Predicted.Throughput, v.Measured.Throughput, pct(v.ThroughputError))
	fmt.Fprintf(&b, "where the difference comes from (unavailability by fault; measured = lost while only that fault was in effect, extended to all its time):\n")
	fmt.Fprintf(&b, "  %-20s %6s %14s %14s\n", "fault", "count", "predicted", "measured")
	for _, f := range v.ByFault {
		fmt.Fprintf(&b, "  %-20s %6d %14.5g %14.5g\n", f.Name, f.Occurrences, f.Predicted, f.Measured)
	}
	fmt.Fprintf(&b, "  %-20s %6s %14s %14.5g\n", "(overlaps, net)", "", "0", v.Measured.Unavailability-v.NoOverlap.Unavailability)
	fmt.Fprintf(&b, "  %-20s %6s %14s %14.5g\n", "(no fault in effect)", "", "0", v.Outside)
	_, err := io.WriteString(w, b.String())
	return err
}

func uniq(xs []string) []string {
	var out []string
	for _, x := range xs {
		dup := false
		for _, o := range out {
			dup = dup || o == x
		}
		if !dup {
			out = append(out, x)
		}
	}
	return out
}

// validateErr is an input error of validate (its model or its run).
func validateErr(format string, args ...any) error {
	return &InputError{File: "validate", Msg: fmt.Sprintf(format, args...)}
}
