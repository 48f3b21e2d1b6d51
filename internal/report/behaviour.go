package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/faultbench/faultbench/internal/scenario"
)

// The behaviour tables compare many runs the way Brown and Patterson (2000) do: single-fault
// micro-benchmarks as a fault × policy table of behaviour classes (its
// Table 1), and multi-fault macro-benchmarks as reconstruction time against
// the worst performance drop (its §4.2).

// microRun is one single-fault run's place in the behaviour table.
type microRun struct {
	fault, policy, class string
}

// faultOrder is docs/scenario.md's catalogue, category by category, for row order.
var faultOrder = func() []string {
	var out []string
	for _, c := range []string{"node", "application", "network", "resource", "bug", "disk", "workload", "maintenance"} {
		out = append(out, scenario.FaultTypes[c]...)
	}
	return out
}()

// policyOf is the column of a run: for raid the array's transient-error
// policy, for other systems the cluster mode, else the system's name.
func policyOf(r *run) string {
	sc := r.Scenario
	if sc == nil {
		return "–"
	}
	if p := sc.Cluster.Options["transient_policy"]; p != "" {
		return p
	}
	if sc.Cluster.Mode != "" {
		return sc.Cluster.Mode
	}
	return sc.Cluster.System
}

// macroPolicyOf adds what decides a rebuild's pace (raid's reconstruction
// option and whether it starts by itself) to policyOf.
func macroPolicyOf(r *run) string {
	p := policyOf(r)
	if sc := r.Scenario; sc != nil {
		if rc := sc.Cluster.Options["reconstruction"]; rc != "" {
			p += ", reconstruction " + rc
		}
		if sc.Cluster.Options["reconstruction_auto"] == "false" {
			p += " (manual)"
		}
	}
	return p
}

// firstFault is the type and mode of the run's first fault: from the
// scenario when it has one (with the mode), else from the record.
func firstFault(r *run) string {
	if sc := r.Scenario; sc != nil && len(sc.Faults) > 0 {
		first := slices.MinFunc(sc.Faults, func(a, b scenario.Fault) int { return int(a.At.Duration - b.At.Duration) })
		return first.Type + ", " + first.Mode
	}
	if len(r.Faults) > 0 {
		return r.Faults[0].Type
	}
	return ""
}

// isMicro: exactly one injection. isMacro: several (faults and maintenance
// events alike). A run without faults is neither.
func isMicro(r *run) bool { return len(r.Faults) == 1 }
func isMacro(r *run) bool { return len(r.Faults) > 1 }

// behaviourTable is Brown and Patterson (2000) Table 1 over the single-fault runs: rows are
// faults (in catalogue order, transient before sticky), columns policies
// (in the order the runs were given), cells the behaviour class of the
// run's first fault; several runs in one cell show every class, "/"
// separated, in run order. It is nil unless the runs vary in both fault and
// policy: a single run, or runs of one fault or one policy, are already
// told by the faults table.
func behaviourTable(runs []*run) *table {
	var micro []microRun
	var faults, policies []string
	for _, r := range runs {
		if !isMicro(r) {
			continue
		}
		m := microRun{fault: firstFault(r), policy: policyOf(r), class: "?"}
		if s := r.Summary; s != nil && len(s.Faults) > 0 && s.Faults[0].Class != "" {
			m.class = s.Faults[0].Class
		}
		micro = append(micro, m)
		if !slices.Contains(faults, m.fault) {
			faults = append(faults, m.fault)
		}
		if !slices.Contains(policies, m.policy) {
			policies = append(policies, m.policy)
		}
	}
	if len(faults) < 2 || len(policies) < 2 {
		return nil
	}
	sort.SliceStable(faults, func(i, j int) bool { return faultRank(faults[i]) < faultRank(faults[j]) })
	t := &table{Caption: "Behaviour of each single-fault run (Brown and Patterson 2000, Table 1): the class of its fault (A no effect, B degraded without recovery, C-1/C-2 back by itself without/with a later dip, D stops serving; ? no baseline band)",
		Head: append([]string{"fault"}, policies...)}
	for _, f := range faults {
		row := []string{f}
		for _, p := range policies {
			var classes []string
			for _, m := range micro {
				if m.fault == f && m.policy == p {
					classes = append(classes, m.class)
				}
			}
			row = append(row, orDash(strings.Join(classes, "/")))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// faultRank orders "type, mode" labels by the catalogue, then transient
// before sticky; unknown types go last, by name.
func faultRank(label string) string {
	typ, mode, _ := strings.Cut(label, ", ")
	i := slices.Index(faultOrder, typ)
	if i < 0 {
		i = len(faultOrder)
	}
	m := 1
	if mode == "transient" {
		m = 0
	}
	return fmt.Sprintf("%03d %d %s", i, m, label)
}

// rebuilds sums the run's reconstructions from system.raid.* events:
// each reconstruction.started until the next reconstruction.finished or
// .aborted of the same node. A rebuild still running at the end counts
// until then and makes the total a lower bound. Without such events n is 0.
func rebuilds(r *run) (n int, totalS float64, open bool) {
	startAt := map[int]float64{}
	for _, e := range r.Events {
		switch e.Kind {
		case "system.raid.reconstruction.started":
			if _, running := startAt[e.Node]; !running {
				startAt[e.Node] = e.TS
				n++
			}
		case "system.raid.reconstruction.finished", "system.raid.reconstruction.aborted":
			if s, running := startAt[e.Node]; running {
				totalS += e.TS - s
				delete(startAt, e.Node)
			}
		}
	}
	for _, s := range startAt {
		totalS += math.Max(0, r.EndS-s)
		open = true
	}
	return n, totalS, open
}

// worstDrop is the largest fall below the baseline mean, as a fraction of
// it, over the deviations below the band: (mean − lowest throughput) /
// mean, the "maximum deviation of 34% from its mean" of Brown and Patterson (2000) §4.2. A
// deviation's depth is measured from the band's edge, so the lowest
// throughput is low − depth. NaN without a baseline; 0 when nothing fell
// below the band.
func worstDrop(r *run) float64 {
	s := r.Summary
	if s == nil || s.Baseline == nil || !(s.Baseline.Mean > 0) {
		return math.NaN()
	}
	worst := 0.0
	for _, d := range s.Deviations {
		if d.Side == "high" {
			continue
		}
		worst = math.Max(worst, (s.Baseline.Mean-(s.Baseline.Low-d.Depth))/s.Baseline.Mean)
	}
	return worst
}

// macroTable is Brown and Patterson (2000) §4.2's trade-off over the multi-fault runs: per
// run, how long reconstruction took and how far performance fell. nil
// without a multi-fault run among several runs.
func macroTable(runs []*run) *table {
	if len(runs) < 2 {
		return nil
	}
	t := &table{Caption: "Multi-fault runs (Brown and Patterson 2000, §4.2): reconstruction time against the worst performance drop (from system.raid.reconstruction.* events; drop = (baseline mean − lowest throughput) / baseline mean)",
		Head: []string{"run", "policy", "faults", "reconstructions", "reconstruction time", "worst drop", "deviations"}}
	for _, r := range runs {
		if !isMacro(r) {
			continue
		}
		n, total, open := rebuilds(r)
		recon := "–"
		switch {
		case n > 0 && open:
			recon = "≥ " + fmtSeconds(total) + " (unfinished)"
		case n > 0:
			recon = fmtSeconds(total)
		}
		drop := "–"
		if d := worstDrop(r); !math.IsNaN(d) {
			drop = fmt.Sprintf("%.0f%%", 100*d)
		}
		devs := "–"
		if r.Summary != nil {
			devs = num(float64(len(r.Summary.Deviations)))
		}
		t.Rows = append(t.Rows, []string{r.Label, macroPolicyOf(r), num(float64(len(r.Faults))), num(float64(n)), recon, drop, devs})
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

// writeText prints tables compactly, aligned, one blank line apart.
func writeText(w io.Writer, tables ...*table) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	first := true
	for _, t := range tables {
		if t == nil {
			continue
		}
		if !first {
			fmt.Fprintln(tw)
		}
		first = false
		caption, _, _ := strings.Cut(t.Caption, ":")
		fmt.Fprintln(tw, caption)
		fmt.Fprintln(tw, strings.Join(t.Head, "\t"))
		for _, row := range t.Rows {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
	}
	return tw.Flush()
}
