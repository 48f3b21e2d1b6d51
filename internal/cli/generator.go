package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/faultbench/faultbench/internal/analysis"
)

// The generator's own account (arrivals, its refusals, attempts cut short,
// send lag, invalid windows) is printed apart from the service's outcomes,
// so that the console never charges the generator's limits to the service
// (docs/metrics.md, "The generator's own account").

// refusedBy is "max_in_flight 3, no_conn 1", reasons in name order; "" when none.
func refusedBy(m *analysis.Metrics) string {
	var parts []string
	for reason, n := range m.GenRefusedBy {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", reason, n))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// generatorLine is the run summary's one line on the generator.
func generatorLine(m *analysis.Metrics) string {
	refused := fmt.Sprintf("refused %d", m.GenRefused)
	if by := refusedBy(m); by != "" {
		refused += " (" + by + ")"
	}
	return fmt.Sprintf("generator: %d arrivals, %s, cut short %d, send lag p99 %s, %d invalid window(s)",
		m.Arrivals, refused, m.CutShort, fmtSeconds(float64(m.SendLagP99S)), m.InvalidWindows)
}

// invalidWarning says, when some windows were not a valid measurement of
// the service, what that means; "" when every window was valid.
func invalidWarning(m *analysis.Metrics) string {
	if m.InvalidWindows == 0 {
		return ""
	}
	return fmt.Sprintf("warning: %d window(s) are not a valid measurement of the service: the generator refused arrivals, "+
		"cut attempts short or lagged beyond its bound there (windows.csv column valid); the baseline band leaves them out, "+
		"and the service's figures of those windows count only the attempts it was sent", m.InvalidWindows)
}

// printGeneratorTable prints the generator's figures per period, as
// printAnalysis prints the service's.
func printGeneratorTable(w io.Writer, s *analysis.Summary) {
	fmt.Fprintln(w, "the generator's own account (not the service's outcomes):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "period\tarrivals\trefused\tcut short\tsend lag p99\tsend lag max\tinvalid windows\t")
	row := func(name string, m *analysis.Metrics) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%d\t\n", name, m.Arrivals, m.GenRefused, m.CutShort,
			fmtSeconds(float64(m.SendLagP99S)), fmtSeconds(float64(m.SendLagMaxS)), m.InvalidWindows)
	}
	for _, p := range s.PhaseOrder {
		m := s.Phases[p]
		row(p, &m)
	}
	if s.Failure != nil {
		row("failure", s.Failure)
	}
	row("overall", &s.Overall)
	tw.Flush()
	if by := refusedBy(&s.Overall); by != "" {
		fmt.Fprintf(w, "refused by reason: %s\n", by)
	}
	if warn := invalidWarning(&s.Overall); warn != "" {
		fmt.Fprintln(w, warn)
	}
}
