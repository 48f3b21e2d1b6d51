package sweep

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
	"gopkg.in/yaml.v3"

	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
)

// File names Collect writes into its output directory.
const (
	CSVFile      = "sweep.csv"
	ParquetFile  = "sweep.parquet"
	AnalysisFile = "sweep.json"
)

// Run statuses in sweep.csv's status column.
const (
	StatusComplete   = "complete"   // summary.json says complete
	StatusIncomplete = "incomplete" // interrupted, or no summary.json
	StatusFailed     = "failed"     // the run failed; reason says why
)

// fixedColumns lead every row; then the grid's keys, then the metric set
// of summary.json's "overall" (docs/results.md) flattened with dots.
var fixedColumns = []string{"sweep", "config", "repetition", "seed", "run", "status", "reason"}

// Row is one run of a sweep.
type Row struct {
	Dir        string
	Sweep      string
	Config     int
	Repetition int
	Seed       int64
	Run        string // the scenario's name
	Status     string
	Reason     string
	Params     []scenario.SweepParam
	Metrics    map[string]float64 // flattened "overall"; absent: null
}

// Table is a sweep's runs with the column order of sweep.csv.
type Table struct {
	Keys    []string // grid keys, first seen order
	Metrics []string // metric columns, first seen order
	Rows    []Row    // by configuration, repetition, directory
}

// Collect reads run directories produced anywhere (by Execute, or by
// `faultbench run` on the files of Plan) and writes sweep.csv,
// sweep.parquet and sweep.json into out; an existing sweep.json is kept
// when none of the runs holds its request record.
func Collect(dirs []string, out string) (*Table, error) {
	t, err := ReadTable(dirs)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	if err := t.WriteCSV(filepath.Join(out, CSVFile)); err != nil {
		return nil, err
	}
	if err := t.WriteParquet(filepath.Join(out, ParquetFile)); err != nil {
		return nil, err
	}
	// Runs kept without their request records (docs/results keeps only
	// the small files) cannot be analysed again: every latency
	// distribution would come out empty. Keep the sweep.json their full
	// runs wrote.
	if _, err := os.Stat(filepath.Join(out, AnalysisFile)); err == nil && !recordsKept(dirs) {
		return t, nil
	}
	a, err := Analyze(t, AnalyzeOptions{})
	if err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(out, AnalysisFile), a); err != nil {
		return nil, err
	}
	return t, nil
}

// recordsKept says whether any of the run directories holds its request
// record.
func recordsKept(dirs []string) bool {
	for _, d := range dirs {
		if record.HoldsRun(d) {
			return true
		}
	}
	return false
}

// ReadTable reads the rows of run directories.
func ReadTable(dirs []string) (*Table, error) {
	t := &Table{}
	seenKey, seenMetric := map[string]bool{}, map[string]bool{}
	var errs []error
	for _, d := range dirs {
		r, order, err := readRow(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, p := range r.Params {
			if !seenKey[p.Key] {
				seenKey[p.Key] = true
				t.Keys = append(t.Keys, p.Key)
			}
		}
		for _, m := range order {
			if !seenMetric[m] {
				seenMetric[m] = true
				t.Metrics = append(t.Metrics, m)
			}
		}
		t.Rows = append(t.Rows, r)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(t.Rows) == 0 {
		return nil, errors.New("no run directories given")
	}
	sort.SliceStable(t.Rows, func(i, j int) bool {
		a, b := t.Rows[i], t.Rows[j]
		if a.Config != b.Config {
			return a.Config < b.Config
		}
		if a.Repetition != b.Repetition {
			return a.Repetition < b.Repetition
		}
		return a.Run < b.Run
	})
	return t, nil
}

func readRow(dir string) (Row, []string, error) {
	r := Row{Dir: dir, Status: StatusIncomplete}
	data, err := os.ReadFile(filepath.Join(dir, record.ScenarioFile))
	if err != nil {
		return r, nil, fmt.Errorf("%s: not a run directory (%v)", dir, err)
	}
	// Only the identity is needed; a full scenario.Load would resolve
	// relative paths against a directory the run may not be in any more.
	var head struct {
		Name  string             `yaml:"name"`
		Seed  int64              `yaml:"seed"`
		Sweep *scenario.SweepRun `yaml:"sweep"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil {
		return r, nil, fmt.Errorf("%s: %v", filepath.Join(dir, record.ScenarioFile), err)
	}
	r.Run, r.Seed = head.Name, head.Seed
	if s := head.Sweep; s != nil {
		r.Sweep, r.Config, r.Repetition, r.Params = s.Name, s.Config, s.Repetition, s.Params
	}
	if msg, err := os.ReadFile(filepath.Join(dir, FailedFile)); err == nil {
		r.Status, r.Reason = StatusFailed, strings.TrimSpace(string(msg))
		return r, nil, nil
	}
	data, err = os.ReadFile(filepath.Join(dir, record.SummaryFile))
	if err != nil {
		r.Reason = "no summary.json: the run did not finish"
		return r, nil, nil
	}
	var sum struct {
		Complete bool            `json:"complete"`
		Overall  json.RawMessage `json:"overall"`
	}
	if err := json.Unmarshal(data, &sum); err != nil {
		return r, nil, fmt.Errorf("%s: %v", filepath.Join(dir, record.SummaryFile), err)
	}
	if sum.Complete {
		r.Status = StatusComplete
	} else {
		r.Reason = "interrupted"
	}
	r.Metrics = map[string]float64{}
	var order []string
	if err := flatten(sum.Overall, "", r.Metrics, &order); err != nil {
		return r, nil, fmt.Errorf("%s: overall: %v", filepath.Join(dir, record.SummaryFile), err)
	}
	return r, order, nil
}

// flatten walks a JSON object in its key order, recording numbers under
// dotted names; nulls keep their column without a value.
func flatten(raw json.RawMessage, prefix string, into map[string]float64, order *[]string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return flattenValue(dec, prefix, into, order)
}

func flattenValue(dec *json.Decoder, name string, into map[string]float64, order *[]string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			for dec.More() { // no lists in the metric set; skip any
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					return err
				}
			}
			_, err := dec.Token()
			return err
		}
		var keys []string
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			keys = append(keys, kt.(string))
			key := kt.(string)
			if name != "" {
				key = name + "." + key
			}
			if err := flattenValue(dec, key, into, order); err != nil {
				return err
			}
		}
		_, err := dec.Token()
		return err
	case json.Number:
		f, err := v.Float64()
		if err != nil {
			return err
		}
		into[name] = f
		*order = append(*order, name)
	case nil:
		*order = append(*order, name)
	}
	return nil
}

// Columns is sweep.csv's header.
func (t *Table) Columns() []string {
	cols := append([]string{}, fixedColumns...)
	cols = append(cols, t.Keys...)
	return append(cols, t.Metrics...)
}

// Param is a row's value of a grid key ("" when the run has none).
func (r *Row) Param(key string) string {
	for _, p := range r.Params {
		if p.Key == key {
			return p.Value
		}
	}
	return ""
}

func (t *Table) record(r *Row) []string {
	rec := []string{r.Sweep, strconv.Itoa(r.Config), strconv.Itoa(r.Repetition), strconv.FormatInt(r.Seed, 10), r.Run, r.Status, r.Reason}
	for _, k := range t.Keys {
		rec = append(rec, r.Param(k))
	}
	for _, m := range t.Metrics {
		v, ok := r.Metrics[m]
		if !ok {
			rec = append(rec, "")
			continue
		}
		rec = append(rec, strconv.FormatFloat(v, 'g', -1, 64))
	}
	return rec
}

// WriteCSV writes the table with a header row; empty cells are nulls.
func (t *Table) WriteCSV(path string) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.Write(t.Columns())
	for i := range t.Rows {
		_ = w.Write(t.record(&t.Rows[i]))
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// WriteParquet writes the same table as Parquet, in the same column order:
// text columns as strings, numbers as doubles (a grid key whose values are
// all numbers is a double column), missing values as nulls. The schema is
// a struct type built for the table, since a parquet.Group would sort the
// columns by name.
func (t *Table) WriteParquet(path string) error {
	cols := t.Columns()
	numeric := map[string]bool{"config": true, "repetition": true, "seed": true}
	for _, m := range t.Metrics {
		numeric[m] = true
	}
	for _, k := range t.Keys {
		all := true
		for i := range t.Rows {
			if _, err := strconv.ParseFloat(t.Rows[i].Param(k), 64); err != nil {
				all = false
			}
		}
		numeric[k] = all
	}
	fields := make([]reflect.StructField, len(cols))
	for i, c := range cols {
		typ := reflect.TypeOf((*string)(nil))
		if numeric[c] {
			typ = reflect.TypeOf((*float64)(nil))
		}
		fields[i] = reflect.StructField{Name: fmt.Sprintf("F%d", i), Type: typ,
			Tag: reflect.StructTag(fmt.Sprintf(`parquet:"%s,optional"`, strings.ReplaceAll(c, ",", "_")))}
	}
	st := reflect.StructOf(fields)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := parquet.NewWriter(f, parquet.SchemaOf(reflect.New(st).Interface()), parquet.Compression(&parquet.Snappy))
	for i := range t.Rows {
		rec := t.record(&t.Rows[i])
		row := reflect.New(st).Elem()
		for j, c := range cols {
			if rec[j] == "" && c != "reason" && c != "sweep" {
				continue
			}
			if numeric[c] {
				v, err := strconv.ParseFloat(rec[j], 64)
				if err != nil {
					continue
				}
				row.Field(j).Set(reflect.ValueOf(&v))
			} else {
				s := rec[j]
				row.Field(j).Set(reflect.ValueOf(&s))
			}
		}
		if err := w.Write(row.Addr().Interface()); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
