package report

import (
	"maps"
	"slices"

	"github.com/faultbench/faultbench/internal/analysis"
)

// checkTable counts, per period, the attempts whose expectation failed
// (summary.json's check_failures: workload.requests[].expect), one row a
// check, so a reader sees which expectation the fault broke. ok is false
// when no period of the run has a failed check.
func checkTable(r *run) (t table, ok bool) {
	names := map[string]bool{}
	var head []string
	var ms []*analysis.Metrics
	for _, p := range r.Periods {
		m := r.metrics(p.Name)
		if m == nil {
			continue
		}
		for name := range m.CheckFailures {
			names[name] = true
		}
		head, ms = append(head, p.Name), append(ms, m)
	}
	if len(names) == 0 {
		return table{}, false
	}
	t = table{Caption: r.Label + ": failed checks per period (attempts; each also counted as http_error or data_error)",
		Head: append([]string{"check"}, head...)}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		row := []string{name}
		for _, m := range ms {
			row = append(row, num(float64(m.CheckFailures[name])))
		}
		t.Rows = append(t.Rows, row)
	}
	return t, true
}
