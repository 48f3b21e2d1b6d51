package reproduce

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/faultbench/faultbench/internal/record"
)

// Value is one measured value: a number, or a text (a behaviour class).
type Value struct {
	Num    float64
	Text   string
	IsText bool
}

func (v Value) String() string {
	if v.IsText {
		return v.Text
	}
	return formatNum(v.Num)
}

// segment is one step of a key path: a field, a list index, or a field
// holding a list and a [field=value] selector of its element.
type segment struct {
	name        string
	index       int // ≥ 0: a list index
	selField    string
	selValue    string
	hasSelector bool
}

// parsePath reads "faults.0.class" or
// "outlier_breakdown[key=cluster.options.state_size].values[value=65536].share".
func parsePath(p string) ([]segment, error) {
	var segs []segment
	var cur strings.Builder
	depth := 0
	flush := func() error {
		s := cur.String()
		cur.Reset()
		if s == "" {
			return fmt.Errorf("key %q has an empty step: write a.b.0.c", p)
		}
		seg := segment{index: -1}
		if i := strings.IndexByte(s, '['); i >= 0 {
			if !strings.HasSuffix(s, "]") || i == 0 {
				return fmt.Errorf("key %q: a selector is name[field=value]", p)
			}
			sel := s[i+1 : len(s)-1]
			eq := strings.IndexByte(sel, '=')
			if eq <= 0 {
				return fmt.Errorf("key %q: a selector is name[field=value]", p)
			}
			seg.name, seg.selField, seg.selValue, seg.hasSelector = s[:i], sel[:eq], sel[eq+1:], true
		} else if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			seg.index = n
		} else {
			seg.name = s
		}
		segs = append(segs, seg)
		return nil
	}
	for _, r := range p {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("key %q: unbalanced ]", p)
			}
		case r == '.' && depth == 0:
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		}
		cur.WriteRune(r)
	}
	if depth != 0 {
		return nil, fmt.Errorf("key %q: unbalanced [", p)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return segs, nil
}

// lookupPath walks a decoded JSON document.
func lookupPath(doc any, key string) (Value, error) {
	segs, err := parsePath(key)
	if err != nil {
		return Value{}, err
	}
	cur := doc
	for i, s := range segs {
		where := strings.Join(segmentNames(segs[:i+1]), ".")
		if s.index >= 0 {
			list, ok := cur.([]any)
			if !ok || s.index >= len(list) {
				return Value{}, fmt.Errorf("%s: no element %d", where, s.index)
			}
			cur = list[s.index]
			continue
		}
		obj, ok := cur.(map[string]any)
		if !ok {
			return Value{}, fmt.Errorf("%s: not an object", where)
		}
		next, ok := obj[s.name]
		if !ok {
			return Value{}, fmt.Errorf("%s: no such key", where)
		}
		cur = next
		if s.hasSelector {
			list, ok := cur.([]any)
			if !ok {
				return Value{}, fmt.Errorf("%s: not a list", where)
			}
			found := false
			for _, el := range list {
				if m, ok := el.(map[string]any); ok && scalarText(m[s.selField]) == s.selValue {
					cur, found = el, true
					break
				}
			}
			if !found {
				return Value{}, fmt.Errorf("%s: no element with %s=%s", where, s.selField, s.selValue)
			}
		}
	}
	switch v := cur.(type) {
	case json.Number:
		f, err := v.Float64()
		if err != nil {
			return Value{}, fmt.Errorf("%s: %v", key, err)
		}
		return Value{Num: f}, nil
	case string:
		return Value{Text: v, IsText: true}, nil
	case bool:
		if v {
			return Value{Num: 1}, nil
		}
		return Value{Num: 0}, nil
	case nil:
		return Value{}, fmt.Errorf("%s is null: the run measured nothing there", key)
	}
	return Value{}, fmt.Errorf("%s is not a number or a text", key)
}

func segmentNames(segs []segment) []string {
	out := make([]string, len(segs))
	for i, s := range segs {
		switch {
		case s.index >= 0:
			out[i] = strconv.Itoa(s.index)
		case s.hasSelector:
			out[i] = s.name + "[" + s.selField + "=" + s.selValue + "]"
		default:
			out[i] = s.name
		}
	}
	return out
}

func scalarText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}

func readJSON(file string) (any, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	doc, err := decodeJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	return doc, nil
}

// decodeJSON keeps numbers as json.Number, so integers stay exact.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	err := dec.Decode(&doc)
	return doc, err
}

// eventSpan is the seconds from the first event of kind from to the first
// event of kind to after it.
func eventSpan(file string, span *EventSpan) (float64, error) {
	start, end, err := eventTimes(file, span)
	return end - start, err
}

// eachEvent calls fn with the time and kind of every event in an
// events.jsonl file, in order, until fn returns false. Lines that do not
// parse are skipped.
func eachEvent(file string, fn func(ts float64, kind string) bool) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e struct {
			TS   float64 `json:"t_s"`
			Kind string  `json:"kind"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		if !fn(e.TS, e.Kind) {
			return nil
		}
	}
	return sc.Err()
}

// eventTimes is when, in the run's seconds, the first event of kind
// span.From and the first event of kind span.To after it happened.
func eventTimes(file string, span *EventSpan) (start, end float64, err error) {
	start, end = math.NaN(), math.NaN()
	err = eachEvent(file, func(ts float64, kind string) bool {
		switch {
		case math.IsNaN(start):
			if kind == span.From {
				start = ts
			}
		case kind == span.To:
			end = ts
			return false
		}
		return true
	})
	switch {
	case err != nil:
		return 0, 0, err
	case math.IsNaN(start):
		return 0, 0, fmt.Errorf("%s: no %s event", file, span.From)
	case math.IsNaN(end):
		return 0, 0, fmt.Errorf("%s: no %s event after %s at %.3f s", file, span.To, span.From, start)
	}
	return start, end, nil
}

// windowDrop is the worst window's fall during span in the run in dir:
// (baseline.mean − the lowest throughput_ok_per_s of the valid windows
// lying wholly inside the span) ÷ baseline.mean. A window the span only
// touches is left out, as it mixes the span with what came before or
// after (a fault's own dip just before a rebuild starts).
func windowDrop(dir string, span *EventSpan) (float64, error) {
	start, end, err := eventTimes(filepath.Join(dir, record.EventsFile), span)
	if err != nil {
		return 0, err
	}
	file := filepath.Join(dir, record.SummaryFile)
	doc, err := readJSON(file)
	if err != nil {
		return 0, err
	}
	positive := func(key string) (float64, error) {
		v, err := lookupPath(doc, key)
		if err == nil && (v.IsText || !(v.Num > 0)) {
			err = fmt.Errorf("%s is %s: want a number above 0", key, v)
		}
		if err != nil {
			return 0, fmt.Errorf("%s: %v", file, err)
		}
		return v.Num, nil
	}
	mean, err := positive("baseline.mean")
	if err != nil {
		return 0, err
	}
	width, err := positive("run.window_s")
	if err != nil {
		return 0, err
	}
	windows, _, err := record.ReadWindows(filepath.Join(dir, record.WindowsFile))
	if err != nil {
		return 0, err
	}
	lowest, found := 0.0, false
	for _, w := range windows {
		if !w.Valid || w.StartS < start || w.StartS+width > end {
			continue
		}
		if !found || w.ThroughputOK < lowest {
			lowest, found = w.ThroughputOK, true
		}
	}
	if !found {
		return 0, fmt.Errorf("%s: no valid window of %s s lies wholly inside %s → %s (%.3f–%.3f s): run with longer spans or shorter windows", dir, formatNum(width), span.From, span.To, start, end)
	}
	return (mean - lowest) / mean, nil
}

// answeredFraction is the fraction of the events of kind span.From that
// an event of kind span.To followed before the next From or the file's
// end. Several To events after one From answer it once; a To before any
// From answers nothing.
func answeredFraction(file string, span *EventSpan) (float64, error) {
	var froms, answered int
	pending := false
	err := eachEvent(file, func(_ float64, kind string) bool {
		switch kind {
		case span.From:
			froms++
			pending = true
		case span.To:
			if pending {
				answered++
				pending = false
			}
		}
		return true
	})
	if err != nil {
		return 0, err
	}
	if froms == 0 {
		return 0, fmt.Errorf("%s: no %s event", file, span.From)
	}
	return float64(answered) / float64(froms), nil
}

// gridPoint is one configuration of a sweep.json document: its value of
// a grid key and of a path in its entry.
type gridPoint struct {
	param, value float64
}

// gridPoints reads, for every configuration of a sweep.json document,
// the number under the grid key param and the number at key.
func gridPoints(doc any, param, key string) ([]gridPoint, error) {
	obj, _ := doc.(map[string]any)
	configs, ok := obj["configs"].([]any)
	if !ok || len(configs) == 0 {
		return nil, errors.New("no configs: the sweep has no complete run")
	}
	points := make([]gridPoint, 0, len(configs))
	for i, c := range configs {
		cfg, _ := c.(map[string]any)
		params, _ := cfg["params"].(map[string]any)
		p, err := strconv.ParseFloat(scalarText(params[param]), 64)
		if err != nil {
			return nil, fmt.Errorf("configs.%d: grid key %s: %q is not a number", i, param, scalarText(params[param]))
		}
		v, err := lookupPath(c, key)
		if err != nil {
			return nil, fmt.Errorf("configs.%d: %v", i, err)
		}
		if v.IsText {
			return nil, fmt.Errorf("configs.%d: %s is the text %q", i, key, v.Text)
		}
		points = append(points, gridPoint{param: p, value: v.Num})
	}
	return points, nil
}

// largestValue reads a capacity from a sweep.json document (Largest).
func largestValue(doc any, l *Largest) (float64, error) {
	grid, err := gridPoints(doc, l.Param, l.Key)
	if err != nil {
		return 0, err
	}
	type point struct {
		param float64
		ok    bool
		shown string
	}
	var points []point
	for i, g := range grid {
		x := g.value
		if l.PerParam {
			if g.param == 0 {
				return 0, fmt.Errorf("configs.%d: cannot divide %s by %s = 0", i, l.Key, l.Param)
			}
			x /= g.param
		}
		good := l.AtLeast != nil && x >= *l.AtLeast || l.AtMost != nil && x <= *l.AtMost
		points = append(points, point{param: g.param, ok: good, shown: formatNum(x)})
	}
	bound := l.Text()
	// The capacity is the largest value below the smallest one at which
	// some configuration misses the bound.
	var fail *point
	for i := range points {
		if !points[i].ok && (fail == nil || points[i].param < fail.param) {
			fail = &points[i]
		}
	}
	if fail == nil {
		return 0, fmt.Errorf("%s at every %s of the grid: the capacity is above it; extend the grid", bound, l.Param)
	}
	capacity, found := 0.0, false
	for _, pt := range points {
		if pt.param < fail.param && (!found || pt.param > capacity) {
			capacity, found = pt.param, true
		}
	}
	if !found {
		return 0, fmt.Errorf("not %s already at the smallest %s, %s (it is %s): the capacity is below the grid; start it lower", bound, l.Param, formatNum(fail.param), fail.shown)
	}
	return capacity, nil
}

// Text is the condition, e.g. "throughput_mean_per_s ÷ workload.users ≥ 0.3233".
func (l *Largest) Text() string {
	s := l.Key
	if l.PerParam {
		s += " ÷ " + l.Param
	}
	if l.AtLeast != nil {
		return s + " ≥ " + formatNum(*l.AtLeast)
	}
	return s + " ≤ " + formatNum(*l.AtMost)
}

// fallsValue reads from a sweep.json document where a value that rose
// with load has fallen (Falls): the smallest grid value above the peak's
// at which Key is at most AtMost × the peak.
func fallsValue(doc any, f *Falls) (float64, error) {
	points, err := gridPoints(doc, f.Param, f.Key)
	if err != nil {
		return 0, err
	}
	sort.SliceStable(points, func(i, j int) bool { return points[i].param < points[j].param })
	peak := points[0]
	for _, pt := range points {
		if pt.value > peak.value {
			peak = pt
		}
	}
	if peak.value <= 0 {
		return 0, fmt.Errorf("%s is never above 0 on the grid: nothing rose to fall", f.Key)
	}
	limit := f.AtMost * peak.value
	for _, pt := range points {
		if pt.param > peak.param && pt.value <= limit {
			return pt.param, nil
		}
	}
	last := points[len(points)-1]
	return 0, fmt.Errorf("%s peaks at %s (%s = %s) and stays above %s of it up to the largest %s, %s (%s): it falls later; extend the grid",
		f.Key, formatNum(peak.value), f.Param, formatNum(peak.param), formatNum(f.AtMost), f.Param, formatNum(last.param), formatNum(last.value))
}

// Text is the condition, e.g. "throughput_mean_per_s ≤ 0.5 × its peak".
func (f *Falls) Text() string {
	return f.Key + " ≤ " + formatNum(f.AtMost) + " × its peak"
}

// readValue reads one measurement from a repetition's directory.
func readValue(kind, dir string, m *Measure, scale float64) (Value, error) {
	var v Value
	switch {
	case m.Events != nil:
		s, err := eventSpan(filepath.Join(dir, record.EventsFile), m.Events)
		if err != nil {
			return Value{}, err
		}
		v = Value{Num: s}
	case m.Answered != nil:
		a, err := answeredFraction(filepath.Join(dir, record.EventsFile), m.Answered)
		if err != nil {
			return Value{}, err
		}
		v = Value{Num: a}
	case m.Drop != nil:
		d, err := windowDrop(dir, m.Drop)
		if err != nil {
			return Value{}, err
		}
		v = Value{Num: d}
	default:
		file := filepath.Join(dir, record.SummaryFile)
		switch kind {
		case KindModel:
			file = filepath.Join(dir, ModelFile)
		case KindSweep:
			file = filepath.Join(dir, "sweep.json")
			if m.Config > 0 {
				file = filepath.Join(dir, fmt.Sprintf("cfg-%04d-r1", m.Config), record.SummaryFile)
			}
		}
		doc, err := readJSON(file)
		if err != nil {
			return Value{}, err
		}
		switch {
		case m.Largest != nil:
			c, err := largestValue(doc, m.Largest)
			if err != nil {
				return Value{}, fmt.Errorf("%s: %v", file, err)
			}
			v = Value{Num: c}
		case m.Falls != nil:
			x, err := fallsValue(doc, m.Falls)
			if err != nil {
				return Value{}, fmt.Errorf("%s: %v", file, err)
			}
			v = Value{Num: x}
		default:
			if v, err = lookupPath(doc, m.Key); err != nil {
				return Value{}, fmt.Errorf("%s: %v", file, err)
			}
		}
	}
	if v.IsText {
		if m.Unscale || m.Factor != 0 || m.Per != nil {
			return Value{}, fmt.Errorf("%s is the text %q: unscale, factor and per need a number", m.Key, v.Text)
		}
		return v, nil
	}
	if m.Unscale && scale > 0 {
		v.Num /= scale
	}
	if m.Factor != 0 {
		v.Num *= m.Factor
	}
	return v, nil
}

// Aggregated is a claim's measurement over its repetitions.
type Aggregated struct {
	Value  Value
	Values []Value
	How    string // median, mode, min, max
	Min    float64
	Max    float64
	Counts map[string]int // texts: how many repetitions gave each
}

// aggregate reduces repetitions' values. Numbers: the median (of an even
// count, the mean of the middle two) unless how says min or max; texts:
// the most frequent, ties to the one seen first.
func aggregate(vals []Value, how string) (Aggregated, error) {
	if len(vals) == 0 {
		return Aggregated{}, errors.New("no value")
	}
	a := Aggregated{Values: vals}
	texts := 0
	for _, v := range vals {
		if v.IsText {
			texts++
		}
	}
	if texts > 0 && texts < len(vals) {
		return Aggregated{}, errors.New("repetitions gave texts and numbers")
	}
	if texts > 0 {
		if how != "" && how != "mode" {
			return Aggregated{}, fmt.Errorf("texts aggregate by mode, not %s", how)
		}
		a.How, a.Counts = "mode", map[string]int{}
		best := ""
		for _, v := range vals {
			a.Counts[v.Text]++
			if best == "" || a.Counts[v.Text] > a.Counts[best] {
				best = v.Text
			}
		}
		a.Value = Value{Text: best, IsText: true}
		return a, nil
	}
	nums := make([]float64, len(vals))
	for i, v := range vals {
		nums[i] = v.Num
	}
	sort.Float64s(nums)
	a.Min, a.Max = nums[0], nums[len(nums)-1]
	switch how {
	case "", "median":
		a.How = "median"
		mid := len(nums) / 2
		if len(nums)%2 == 1 {
			a.Value = Value{Num: nums[mid]}
		} else {
			a.Value = Value{Num: (nums[mid-1] + nums[mid]) / 2}
		}
	case "min":
		a.How, a.Value = "min", Value{Num: a.Min}
	case "max":
		a.How, a.Value = "max", Value{Num: a.Max}
	default:
		return Aggregated{}, fmt.Errorf("numbers aggregate by median, min or max, not %s", how)
	}
	return a, nil
}

// String is "C-1 (3 of 3)", "C-1 (2 of 3; C-2 ×1)", "8.1 (median of 3, 7.9–8.4)".
func (a Aggregated) String() string {
	n := len(a.Values)
	if a.Value.IsText {
		var others []string
		keys := make([]string, 0, len(a.Counts))
		for k := range a.Counts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if k != a.Value.Text {
				others = append(others, fmt.Sprintf("%s ×%d", k, a.Counts[k]))
			}
		}
		s := fmt.Sprintf("%s (%d of %d", a.Value.Text, a.Counts[a.Value.Text], n)
		if len(others) > 0 {
			s += "; " + strings.Join(others, ", ")
		}
		return s + ")"
	}
	if n == 1 {
		return formatNum(a.Value.Num)
	}
	if a.Min == a.Max {
		return fmt.Sprintf("%s (%s of %d)", formatNum(a.Value.Num), a.How, n)
	}
	return fmt.Sprintf("%s (%s of %d, %s to %s)", formatNum(a.Value.Num), a.How, n, formatNum(a.Min), formatNum(a.Max))
}
