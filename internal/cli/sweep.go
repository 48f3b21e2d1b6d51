package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultbench/faultbench/internal/sweep"
)

func init() { register(newSweepCmd) }

type sweepFlags struct {
	out       string
	resume    bool
	yes       bool
	timeScale float64
	quiet     bool
	live      liveFlags
}

// newSweepCmd is `faultbench sweep SWEEP.yaml [-o DIR] [--resume] [--yes]`
// with its plan and collect subcommands.
func newSweepCmd() *cobra.Command {
	var f sweepFlags
	cmd := &cobra.Command{
		Use:   "sweep SWEEP.yaml [-o DIR] [--resume] [--yes] [--metrics ADDR] [--ui ADDR] [--live FILE|-]",
		Short: "Run every configuration of a grid, repeated, and analyse them together (Dumitras and Narasimhan 2005)",
		Long: `sweep runs a base scenario once for every combination of the grid's values
(scenario key path -> list of values, minus the exclude rules), each
repetitions times, into DIR/cfg-NNNN-rR/ (ordinary results directories),
one line per run on stderr (i of n, parameters, ETA). A run that fails is
recorded as failed with its reason and the sweep goes on. At the end it
writes DIR/sweep.csv and DIR/sweep.parquet (one row per run: identity,
status, the grid's values, then summary.json's overall metric set) and
DIR/sweep.json (the outlier, haircut and per-parameter analysis); then
'faultbench report DIR' draws it.

The sweep file is checked whole before anything runs. An interrupted sweep
keeps its finished runs: the same command with --resume skips complete runs
and redoes the others.

--metrics and --ui serve one address for the whole sweep: the page follows
the run under way ("configuration i of n"); every faultbench_ series
carries the labels config and run, and a run's counters stay on the
endpoint after it ends, until the sweep does. --live writes every run's
windows, each line naming its run directory and place in the sweep. See
docs/sweep.md.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSweep(cmd.Context(), cmd, args[0], f)
		},
	}
	cmd.Flags().StringVarP(&f.out, "output", "o", "", "sweep directory (default results/<sweep name>)")
	cmd.Flags().BoolVar(&f.resume, "resume", false, "continue a sweep in DIR: skip complete runs, redo the others")
	cmd.Flags().BoolVar(&f.yes, "yes", false, "run the sweep even when it holds more runs than its max_runs")
	cmd.Flags().Float64Var(&f.timeScale, "time-scale", 1, "multiply every duration of every run by F")
	cmd.Flags().BoolVar(&f.quiet, "quiet", false, "no progress lines")
	f.live.register(cmd)
	cmd.AddCommand(newSweepPlanCmd(), newSweepCollectCmd())
	return cmd
}

func runSweep(ctx context.Context, cmd *cobra.Command, path string, f sweepFlags) error {
	if f.timeScale <= 0 || f.timeScale > 1000 {
		return BadInput(fmt.Errorf("--time-scale %v: want a factor above 0 (at most 1000)", f.timeScale))
	}
	s, err := sweep.Load(path, sweep.LoadOptions{Yes: f.yes})
	if err != nil {
		return BadInput(err)
	}
	out := f.out
	if out == "" {
		out = filepath.Join("results", s.Name)
	}
	opt := sweep.Options{OutDir: out, Resume: f.resume, TimeScale: f.timeScale}
	if !f.quiet {
		opt.Progress = cmd.ErrOrStderr()
	}
	liveOpt, endLive, err := f.live.openSweep(s.Name, cmd.OutOrStdout())
	if err != nil {
		return err
	}
	opt.Live = liveOpt
	t, err := sweep.Execute(ctx, s, opt)
	endLive(ctx)
	if err := f.live.lineErr(); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: --live: %v\n", err)
	}
	if err != nil {
		if errors.Is(err, sweep.ErrExists) {
			return BadInput(err)
		}
		return Failed(err)
	}
	return printSweep(cmd, t, out)
}

func printSweep(cmd *cobra.Command, t *sweep.Table, out string) error {
	failed := 0
	for _, r := range t.Rows {
		if r.Status != sweep.StatusComplete {
			failed++
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s: %s\n", r.Run, r.Status, r.Reason)
		}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%d runs (%d not complete); table %s, analysis %s\nreport: faultbench report %s\n",
		len(t.Rows), failed, filepath.Join(out, sweep.CSVFile), filepath.Join(out, sweep.AnalysisFile), out)
	return nil
}

func newSweepPlanCmd() *cobra.Command {
	var out string
	var yes bool
	cmd := &cobra.Command{
		Use:   "plan SWEEP.yaml -o DIR",
		Short: "Write every configuration x repetition of a sweep as a standalone scenario, for any batch engine",
		Long: `plan writes DIR/cfg-NNNN-rR.yaml for every run of the sweep: a complete
scenario (named, seeded, its grid values in its sweep key) that
'faultbench run FILE -o RUNDIR' runs anywhere — a batch scheduler,
Kubernetes Jobs, GNU parallel. 'faultbench sweep collect RUNDIR... -o DIR'
then builds the same sweep.csv and analysis as 'faultbench sweep'.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return BadInput(errors.New("sweep plan needs -o DIR"))
			}
			s, err := sweep.Load(args[0], sweep.LoadOptions{Yes: yes})
			if err != nil {
				return BadInput(err)
			}
			files, err := sweep.Plan(s, out)
			if err != nil {
				return Failed(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d scenarios in %s (%d configurations x %d repetitions)\n", len(files), out, len(s.Configs), s.Repetitions)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "directory for the scenario files")
	cmd.Flags().BoolVar(&yes, "yes", false, "plan the sweep even when it holds more runs than its max_runs")
	return cmd
}

func newSweepCollectCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "collect RUNDIR... -o DIR",
		Short: "Build sweep.csv, sweep.parquet and sweep.json from run directories produced anywhere",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			if out == "" {
				return BadInput(errors.New("sweep collect needs -o DIR"))
			}
			t, err := sweep.Collect(dirs, out)
			if err != nil {
				return Failed(err)
			}
			return printSweep(cmd, t, out)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "directory for sweep.csv, sweep.parquet and sweep.json")
	return cmd
}

// knobFlags choose the knob view of a sweep's analysis.
type knobFlags struct {
	p99Goal time.Duration
	cost    []string
}

func (k *knobFlags) add(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&k.p99Goal, "p99-goal", 0, "sweep directories: list the configurations whose p99 latency is at most this, cheapest first")
	cmd.Flags().StringSliceVar(&k.cost, "cost", nil, "sweep directories: grid keys that make a configuration dearer, in order (e.g. cluster.options.w)")
}

func (k knobFlags) options() sweep.AnalyzeOptions {
	return sweep.AnalyzeOptions{P99Goal: k.p99Goal, CostKeys: k.cost}
}

// analyzeSweep is `faultbench analyze SWEEPDIR`: it recomputes sweep.csv,
// sweep.parquet and sweep.json and prints the analysis.
func analyzeSweep(cmd *cobra.Command, dir string, asJSON bool, k knobFlags) error {
	_, a, err := sweep.Reanalyze(dir, k.options())
	if err != nil {
		return Failed(err)
	}
	if asJSON {
		b, err := json.MarshalIndent(a, "", "  ")
		if err != nil {
			return Failed(err)
		}
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b)
		return err
	}
	return sweep.WriteText(cmd.OutOrStdout(), a)
}

// reportSweep is `faultbench report SWEEPDIR`: the tables on stdout and a
// self-contained HTML report (default SWEEPDIR/report.html).
func reportSweep(cmd *cobra.Command, dir, out string, k knobFlags) error {
	_, a, err := sweep.Reanalyze(dir, k.options())
	if err != nil {
		return Failed(err)
	}
	if out == "" {
		out = filepath.Join(dir, "report.html")
	}
	if err := sweep.WriteText(cmd.OutOrStdout(), a); err != nil {
		return err
	}
	if err := sweep.WriteHTML(out, a); err != nil {
		return Failed(err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "\nreport: %s\n", out)
	return nil
}
