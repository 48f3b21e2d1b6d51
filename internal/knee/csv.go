package knee

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// File is the name of the steps file in a results directory.
const File = "knee.csv"

// header is knee.csv's header row (docs/scenario.md). Columns 11 and 12
// repeat the bounds a step was judged by, so the file stands alone; the
// last two, the generator's refusals and whether the step was a valid
// measurement of the service, came later (a file without them is read
// with none refused).
var header = []string{"step", "stage", "rate_per_s", "attempts", "ok", "goodput", "latency_p50_s", "latency_p99_s", "pass", "why",
	"goodput_min", "latency_p99_max_s", "gen_refused", "valid"}

// oldColumns is the width of knee.csv before gen_refused and valid.
const oldColumns = 12

// WriteCSV writes steps, judged by cfg's bounds, as knee.csv.
func WriteCSV(w io.Writer, cfg Config, steps []Step) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return err
	}
	f := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'g', 6, 64)
	}
	for _, s := range steps {
		row := []string{strconv.Itoa(s.N), s.Stage, f(s.Rate), strconv.Itoa(s.Attempts), strconv.Itoa(s.OK),
			f(s.Goodput), f(s.P50.Seconds()), f(s.P99.Seconds()), strconv.FormatBool(s.Pass), s.Why,
			f(cfg.Goodput), f(cfg.P99.Seconds()), strconv.Itoa(s.Refused), strconv.FormatBool(!s.Invalid)}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReadCSV reads a knee.csv written by WriteCSV; name is used in errors.
// Of the Config, only the bounds Goodput and P99 are known.
func ReadCSV(r io.Reader, name string) ([]Step, Config, error) {
	var cfg Config
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	rows, err := cr.ReadAll()
	if err != nil {
		return nil, cfg, fmt.Errorf("%s: %w", name, err)
	}
	if len(rows) == 0 || rows[0][0] != header[0] {
		return nil, cfg, fmt.Errorf("%s: no header row %q", name, header)
	}
	var steps []Step
	width := len(rows[0])
	if width != len(header) && width != oldColumns {
		return nil, cfg, fmt.Errorf("%s:1: %d columns, want %d (or %d from before gen_refused)", name, width, len(header), oldColumns)
	}
	for i, row := range rows[1:] {
		if len(row) != width {
			return nil, cfg, fmt.Errorf("%s:%d: %d columns, want %d as in the header", name, i+2, len(row), width)
		}
		var s Step
		var errs [12]error
		s.N, errs[0] = strconv.Atoi(row[0])
		s.Stage = row[1]
		s.Rate, errs[1] = strconv.ParseFloat(row[2], 64)
		s.Attempts, errs[2] = strconv.Atoi(row[3])
		s.OK, errs[3] = strconv.Atoi(row[4])
		s.Goodput, errs[4] = parseOpt(row[5])
		var p50, p99 float64
		p50, errs[5] = parseOpt(row[6])
		p99, errs[6] = parseOpt(row[7])
		s.P50, s.P99 = secs(p50), secs(p99)
		s.Pass, errs[7] = strconv.ParseBool(row[8])
		s.Why = row[9]
		var p99Max float64
		cfg.Goodput, errs[8] = strconv.ParseFloat(row[10], 64)
		p99Max, errs[9] = strconv.ParseFloat(row[11], 64)
		cfg.P99 = secs(p99Max)
		if width == len(header) {
			var valid bool
			s.Refused, errs[10] = strconv.Atoi(row[12])
			valid, errs[11] = strconv.ParseBool(row[13])
			s.Invalid = !valid
		}
		for _, e := range errs {
			if e != nil {
				return nil, cfg, fmt.Errorf("%s:%d: %w", name, i+2, e)
			}
		}
		steps = append(steps, s)
	}
	return steps, cfg, nil
}

func parseOpt(v string) (float64, error) {
	if v == "" {
		return math.NaN(), nil
	}
	return strconv.ParseFloat(v, 64)
}

func secs(v float64) time.Duration {
	if math.IsNaN(v) {
		return 0
	}
	return time.Duration(math.Round(v * float64(time.Second)))
}

// Summary is a one-line account of a search, for the run.knee event and
// the terminal.
func (r Result) Summary(cfg Config) string {
	if r.Knee == 0 {
		return fmt.Sprintf("no knee: %d step(s), none passed (goodput ≥ %g, p99 ≤ %v)", len(r.Steps), cfg.Goodput, cfg.P99)
	}
	where := fmt.Sprintf("below %.4g/s", r.Above)
	switch {
	case r.Unsaturated:
		where = fmt.Sprintf("not saturated at max %g/s", cfg.Max)
	case r.GenLimit > 0 && r.GenLimit <= r.Above:
		where = fmt.Sprintf("the generator could not offer %.4g/s: the knee is the generator's, the service may hold more", r.GenLimit)
	case math.IsInf(r.Above, 1):
		where = "no step failed yet"
	}
	rate := fmt.Sprintf("run rate %g × knee = %.4g/s", cfg.Fraction, r.Rate)
	if r.Lowered > 0 {
		rate = fmt.Sprintf("run rate %g × knee = %.4g/s did not hold; lowered %d time(s) by %g to %.4g/s",
			cfg.Fraction, cfg.Fraction*r.Knee, r.Lowered, cfg.Fraction, r.Rate)
	}
	return fmt.Sprintf("knee %.4g/s (%s; goodput ≥ %g and p99 ≤ %v), %s, %d step(s): %s",
		r.Knee, where, cfg.Goodput, cfg.P99, rate, len(r.Steps), r.stepList())
}

func (r Result) stepList() string {
	var b []byte
	for i, s := range r.Steps {
		if i > 0 {
			b = append(b, ' ')
		}
		verdict := "ok"
		switch {
		case s.Invalid:
			verdict = "invalid"
		case !s.Pass:
			verdict = "fail"
		}
		b = fmt.Appendf(b, "%.4g:%s", s.Rate, verdict)
	}
	return string(b)
}
