package report

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/provenance"
)

// ErrMixedSchemas is returned (wrapped) when runs compared side by side
// hold summaries computed under different schema versions, whose metrics
// may be defined differently, and Options.AllowMixedSchemas is false.
var ErrMixedSchemas = errors.New("runs analysed under different schema versions")

// comparability checks whether runs may be set side by side. It returns
// the error of ErrMixedSchemas when their summaries' schema versions
// differ (re-analysing the older runs makes them agree), and a warning for
// every other difference that changes what a metric means: the record's
// schema, the window, the timeouts, the demerit weights, how the baseline
// was formed. One run is always comparable with itself.
func comparability(runs []*run) (mixed error, warnings []string) {
	if len(runs) < 2 {
		return nil, nil
	}
	differ := func(what string, value func(*run) string) []string {
		vals := map[string][]string{}
		for _, r := range runs {
			if v := value(r); v != "" { // "": the run does not say
				vals[v] = append(vals[v], r.Label)
			}
		}
		if len(vals) < 2 {
			return nil
		}
		var parts []string
		for _, v := range slices.Sorted(maps.Keys(vals)) {
			parts = append(parts, fmt.Sprintf("%s in %s", v, strings.Join(vals[v], ", ")))
		}
		return []string{fmt.Sprintf("%s differ: %s", what, strings.Join(parts, "; "))}
	}
	if d := differ("summary schema versions", func(r *run) string { return fmt.Sprint(r.Summary.SchemaVersion) }); d != nil {
		var old []string
		for _, r := range runs {
			if r.Summary.SchemaVersion < provenance.SchemaVersion {
				old = append(old, r.Dir)
			}
		}
		remedy := "pass --allow-mixed-schemas to compare them anyway"
		if len(old) > 0 {
			remedy = fmt.Sprintf("run `faultbench analyze` on %s to recompute with today's definitions, or %s", strings.Join(old, ", "), remedy)
		}
		mixed = fmt.Errorf("%w: %s (%s)", ErrMixedSchemas, strings.TrimPrefix(d[0], "summary schema versions differ: "), remedy)
		warnings = append(warnings, d[0]+": metrics may be defined differently")
	}
	warnings = append(warnings, differ("record schema versions (what the files hold)", func(r *run) string {
		if p := r.Summary.Provenance; p != nil {
			return fmt.Sprint(p.SchemaVersion)
		}
		return fmt.Sprintf("%d (no provenance)", provenance.LegacySchemaVersion)
	})...)
	warnings = append(warnings, differ("windows (band, deviations and failure durations are measured in them)", func(r *run) string {
		return fmtSeconds(r.WindowS)
	})...)
	defs := func(f func(*analysis.Definitions) string) func(*run) string {
		return func(r *run) string {
			if r.Summary.Definitions == nil {
				return "" // schema 1 kept no definitions: nothing to compare
			}
			return f(r.Summary.Definitions)
		}
	}
	warnings = append(warnings, differ("timeouts (which attempts count as timeout and conn_abort)", defs(func(d *analysis.Definitions) string {
		return fmt.Sprintf("connect %s/response %s", secs(d.ConnectTimeoutS), secs(d.ResponseTimeoutS))
	}))...)
	warnings = append(warnings, differ("demerit weights", defs(func(d *analysis.Definitions) string {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(d.Demerits)) {
			kv = append(kv, fmt.Sprintf("%s=%g", k, d.Demerits[k]))
		}
		return strings.Join(kv, " ")
	}))...)
	warnings = append(warnings, differ("baselines (the band and punctuality's ideal)", defs(func(d *analysis.Definitions) string {
		return d.Baseline
	}))...)
	warnings = append(warnings, differ("window judges (what the band holds: ok/s, or goodput × offered rate)", defs(func(d *analysis.Definitions) string {
		if d.Judge == "" {
			return analysis.JudgeThroughput // schema 2 and before judged throughput
		}
		return d.Judge
	}))...)
	return mixed, warnings
}
