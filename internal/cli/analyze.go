package cli

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/faultbench/faultbench/internal/analysis"
)

func init() { register(newAnalyzeCmd) }

func newAnalyzeCmd() *cobra.Command {
	var baseline string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "analyze DIR",
		Short: "(Re)compute DIR/summary.json: every metric, the baseline band, deviations, fault classes and stages",
		Long: `analyze reads a results directory (requests.parquet or requests.csv, and
events.jsonl, windows.csv and scenario.yaml when present) and writes
DIR/summary.json. Exit status 3 means a threshold of the scenario was missed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			opts := analysis.Options{BaselineDir: baseline, Complete: true}
			if prev, err := analysis.Read(dir); err == nil {
				opts.Complete = prev.Complete // re-analysis keeps what the run recorded
			}
			sum, err := analysis.Analyze(dir, opts)
			if err != nil {
				if errors.Is(err, analysis.ErrBadInput) {
					return BadInput(err)
				}
				return Failed(err)
			}
			if err := analysis.Write(dir, sum); err != nil {
				return Failed(err)
			}
			stdout := cmd.OutOrStdout()
			if asJSON {
				b, err := analysis.Marshal(sum)
				if err != nil {
					return Failed(err)
				}
				if _, err := stdout.Write(b); err != nil {
					return Failed(err)
				}
			} else {
				printAnalysis(stdout, sum)
			}
			return thresholdsExit(sum.Thresholds, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&baseline, "baseline", "", "fault-free results `DIR` whose windows form the baseline band")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print summary.json to stdout")
	return cmd
}

// printAnalysis prints a short table: one row per period, then the faults.
func printAnalysis(w io.Writer, s *analysis.Summary) {
	fmt.Fprintf(w, "%s: %.1fs, %d attempts", s.Run.Name, s.Run.DurationS, s.Run.Attempts)
	if !s.Complete {
		fmt.Fprint(w, " (interrupted run)")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "period\tattempts\tok/s\tgoodput\tpunct.\tmean\ttrim.mean\tp99\tmax\tP(>2s)\tdemerits\t")
	row := func(name string, m *analysis.Metrics) {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, m.Attempts,
			fmtFloat(float64(m.ThroughputMeanPerS), "%.1f"), fmtFloat(float64(m.Goodput), "%.3f"), fmtFloat(float64(m.Punctuality), "%.3f"),
			fmtSeconds(float64(m.LatencyMeanS)), fmtSeconds(float64(m.LatencyTrimmedMeanS)), fmtSeconds(float64(m.LatencyP99S)),
			fmtSeconds(float64(m.LatencyMaxS)), fmtFloat(float64(m.PExceed["2"]), "%.4f"), fmtFloat(float64(m.Demerits), "%.0f"))
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
	if b := s.Baseline; b != nil {
		fmt.Fprintf(w, "baseline (%s, %d windows): %.1f ± %.1f ok/s, band [%.1f, %.1f]; %d deviation(s)\n",
			b.Source, b.Windows, b.Mean, b.Stddev, b.Low, b.High, len(s.Deviations))
	} else {
		fmt.Fprintln(w, "baseline: none (fewer than two fault-free windows): no band, deviations or classes")
	}
	for _, f := range s.Faults {
		fmt.Fprintf(w, "fault %s on node %d at %.1fs: fault %s, failure %s, class %s\n", f.Type, f.Node, f.InjectS,
			fmtSeconds(float64(f.FaultDurationS)), fmtSeconds(float64(f.FailureDurationS)), f.Class)
	}
	for _, t := range s.Thresholds {
		status := "ok"
		if !t.Passed {
			status = "MISSED"
		}
		fmt.Fprintf(w, "threshold %-24s %s (value %s)\n", t.Expr, status, fmtFloat(float64(t.Value), "%.4g"))
	}
}
