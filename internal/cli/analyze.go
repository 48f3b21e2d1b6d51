package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/sweep"
)

func init() { register(newAnalyzeCmd) }

func newAnalyzeCmd() *cobra.Command {
	var baseline, baselineWindow, judge string
	var asJSON bool
	var knob knobFlags
	cmd := &cobra.Command{
		Use:   "analyze DIR",
		Short: "(Re)compute DIR/summary.json: every metric, the baseline band, deviations, fault classes and stages",
		Long: `analyze reads a results directory (requests.parquet, the segments
requests/part-*.parquet a killed run leaves, or requests.csv; and
events.jsonl, windows.csv and scenario.yaml when present) and writes
DIR/summary.json, with "complete": false and the reason when the run was
cut short. Exit status 3 means a threshold of the scenario was missed.

The baseline band (and punctuality's ideal latency) comes from the
scenario's baseline phase; --baseline DIR takes it from a fault-free run
instead, and --baseline-window START:END from a fault-free stretch of this
record (seconds, or durations such as 10s:60s). A bare requests.csv has no
phases: without either flag its whole record is its own baseline, which
analyze says, since punctuality near 1 then means nothing.

An open-loop run's windows are judged by goodput: ok/offered in the window
× the baseline's offered rate, so a Poisson window that was simply offered
fewer requests is not a deviation. --judge throughput gives the figure of
schema 2 and before (ok/s), which closed-loop runs keep by default.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if sweep.IsSweepDir(dir) {
				return analyzeSweep(cmd, dir, asJSON, knob)
			}
			opts := analysis.Options{BaselineDir: baseline, Complete: true, Judge: judge}
			if baselineWindow != "" {
				span, err := parseSpan(baselineWindow)
				if err != nil {
					return BadInput(fmt.Errorf("--baseline-window: %w", err))
				}
				opts.BaselineWindow = &span
			}
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
	cmd.Flags().StringVar(&baselineWindow, "baseline-window", "", "fault-free stretch `START:END` of this record (seconds or durations, e.g. 0:60 or 10s:1m) whose windows form the baseline band")
	cmd.Flags().StringVar(&judge, "judge", "", "how a window is held against the band: `throughput` (ok/s; closed-loop users, and every summary before schema 3) or goodput (ok/offered × the baseline's offered rate); default goodput for open-loop workloads")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print summary.json to stdout (sweep.json for a sweep directory)")
	knob.add(cmd)
	return cmd
}

// parseSpan reads START:END, each a number of seconds or a Go duration.
func parseSpan(s string) (analysis.Span, error) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return analysis.Span{}, fmt.Errorf("%q: want START:END, e.g. 0:60 or 10s:1m", s)
	}
	secs := func(v string) (float64, error) {
		v = strings.TrimSpace(v)
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, fmt.Errorf("%q in %q is neither seconds nor a duration such as 90s", v, s)
		}
		return d.Seconds(), nil
	}
	var span analysis.Span
	var err error
	if span.StartS, err = secs(a); err != nil {
		return span, err
	}
	if span.EndS, err = secs(b); err != nil {
		return span, err
	}
	return span, span.Validate()
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
	printGeneratorTable(w, s)
	if b := s.Baseline; b != nil {
		judged := ""
		if b.Judge == analysis.JudgeGoodput {
			judged = fmt.Sprintf(" (goodput × %.1f offered/s)", float64(b.OfferedPerS))
		}
		fmt.Fprintf(w, "baseline (%s, %d windows): %.1f ± %.1f ok/s%s, band [%.1f, %.1f]; %d deviation(s)\n",
			b.Source, b.Windows, b.Mean, b.Stddev, judged, b.Low, b.High, len(s.Deviations))
	} else {
		fmt.Fprintln(w, "baseline: none (fewer than two fault-free windows): no band, deviations or classes")
	}
	for _, f := range s.Faults {
		fmt.Fprintf(w, "fault %s on node %d at %.1fs: fault %s, failure %s, class %s\n", f.Type, f.Node, f.InjectS,
			fmtSeconds(float64(f.FaultDurationS)), fmtSeconds(float64(f.FailureDurationS)), f.Class)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if p := s.Provenance; p != nil {
		commit := p.Commit
		if commit == "" {
			commit = "commit unknown"
		}
		fmt.Fprintf(w, "made by faultbench %s (%s), schema %d, run %s, started %s on %s\n",
			p.FaultbenchVersion, commit, p.SchemaVersion, p.RunID, p.StartedUTC, p.Host)
	} else {
		fmt.Fprintln(w, "provenance: none recorded (results of schema 1, or from another tool)")
	}
	for _, t := range s.Thresholds {
		status := "ok"
		if !t.Passed {
			status = "MISSED"
		}
		fmt.Fprintf(w, "threshold %-24s %s (value %s)\n", t.Expr, status, fmtFloat(float64(t.Value), "%.4g"))
	}
}
