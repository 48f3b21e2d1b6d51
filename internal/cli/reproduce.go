package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/faultbench/faultbench/internal/reproduce"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/sweep"
)

func init() { register(newReproduceCmd) }

type reproduceFlags struct {
	out       string
	only      []string
	timeScale float64
	reps      int
	resume    bool
	dryRun    bool
	tableOnly bool
	quiet     bool
	root      string
}

func newReproduceCmd() *cobra.Command {
	var f reproduceFlags
	papers, err := reproduce.Papers()
	var list strings.Builder
	for _, p := range papers {
		fmt.Fprintf(&list, "  %-12s %s, %q\n", p.Key, p.Cite, p.Title)
	}
	if err != nil {
		fmt.Fprintf(&list, "  (the registry does not load: %v)\n", err)
	}
	cmd := &cobra.Command{
		Use:   "reproduce PAPER|all [--only ID,...] [-o DIR] [--time-scale F] [--reps N] [--resume] [--dry-run] [--table-only]",
		Short: "Rerun a paper's experiments and set every published value beside the measured one",
		Long: `reproduce runs a paper's experiments — its examples, sweeps and model
commands, each repeated — with progress over the whole set (i of n, ETA),
then judges every published table cell, figure reading or stated number of
the paper against what was measured: agrees, close, differs (with the
docs' reason), not measured, by construction (behaviour built to match the
paper, never counted as agreement) or failed (the run failed, with why).
It writes DIR/reproduce.json and a self-contained DIR/reproduce.html, each
run in DIR/PAPER/EXPERIMENT/RUN/rN/.

Papers (docs/papers.md cites them):
` + list.String() + `
Each experiment runs at the time scale its documented results were
measured at; --time-scale F runs every example and sweep at F instead.
The estimated time is printed before anything starts; --dry-run prints
the plan (experiments, runs, estimate) after checking every scenario,
sweep and model input, and runs nothing. A failed run is marked failed
with its reason and the rest go on; the same command with --resume skips
complete runs and redoes the others. --table-only runs nothing: it judges
every claim from what DIR already holds (runs made by earlier commands,
in one sitting or several) and rewrites the tables. Exit status 1 when a
run failed or the command was interrupted (the tables are written either
way). See docs/papers.md.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err != nil {
				return Failed(fmt.Errorf("the reproduce registry: %w", err))
			}
			return runReproduce(cmd.Context(), cmd, papers, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.out, "output", "o", "", "results directory (default results/reproduce-PAPER)")
	fl.StringSliceVar(&f.only, "only", nil, "run only these experiments (ids, or paper/id), comma-separated")
	fl.Float64Var(&f.timeScale, "time-scale", 0, "run every example and sweep at this time scale instead of each experiment's own")
	fl.IntVar(&f.reps, "reps", 0, "repetitions of every example and sweep instead of each experiment's own")
	fl.BoolVar(&f.resume, "resume", false, "continue in DIR: skip complete runs, redo the others")
	fl.BoolVar(&f.dryRun, "dry-run", false, "check everything and print the experiments, runs and estimated time; run nothing")
	fl.BoolVar(&f.tableOnly, "table-only", false, "run nothing: judge the claims from the runs DIR holds and rewrite its tables")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress lines")
	fl.StringVar(&f.root, "root", ".", "the repository root, where examples/ is")
	return cmd
}

func runReproduce(ctx context.Context, cmd *cobra.Command, papers []*reproduce.Paper, paper string, f reproduceFlags) error {
	if cmd.Flags().Changed("time-scale") && (f.timeScale <= 0 || f.timeScale > 1000) {
		return BadInput(fmt.Errorf("--time-scale %v: want a factor above 0 (at most 1000)", f.timeScale))
	}
	if f.reps < 0 || f.reps > 100 {
		return BadInput(fmt.Errorf("--reps %d: want 1 to 100", f.reps))
	}
	out := f.out
	if out == "" {
		out = filepath.Join("results", "reproduce-"+resultsName(paper))
	}
	stderr := cmd.ErrOrStderr()
	opt := reproduce.Options{
		Root: f.root, Out: out, TimeScale: f.timeScale, Reps: f.reps,
		Command: commandLine(cmd, paper),
		Load: func(path string, scale float64) (*scenario.Scenario, error) {
			return prepareScenario(path, scale, io.Discard)
		},
		Model: func(ctx context.Context, args []string, stdout io.Writer) error {
			var errBuf bytes.Buffer
			root := newRoot(stdout, &errBuf)
			root.SetArgs(append([]string{"model"}, args...))
			if err := root.ExecuteContext(ctx); err != nil {
				return err
			}
			return nil
		},
	}
	plan, err := reproduce.NewPlan(papers, reproduce.Selection{Paper: paper, Only: f.only}, opt)
	if err != nil {
		return BadInput(err)
	}
	if f.dryRun {
		plan.Summary(cmd.OutOrStdout())
		return nil
	}
	if f.tableOnly {
		return writeReproduceTable(cmd, plan, out)
	}
	var progress io.Writer
	if !f.quiet {
		progress = stderr
		fmt.Fprintf(stderr, "reproduce %s: %d experiments, %d runs, estimated %s; results in %s\n",
			paper, len(plan.Experiments), len(plan.Jobs), plan.Estimate.Round(time.Second), out)
	}
	rep, res, err := plan.Execute(ctx, sweep.BatchOptions{Resume: f.resume, Progress: progress})
	if errors.Is(err, sweep.ErrExists) {
		return BadInput(err)
	}
	if rep != nil {
		if werr := printReproduceTable(cmd, rep, out); werr != nil {
			return werr
		}
	}
	if err != nil {
		return Failed(err)
	}
	if res.Failed > 0 {
		return Failed(fmt.Errorf("%d of %d runs failed: their claims are marked failed in the table; the same command with --resume redoes them", res.Failed, res.Ran))
	}
	return nil
}

// writeReproduceTable judges the plan's papers from the runs out holds and
// rewrites its tables, running nothing: for a directory filled by several
// commands (--only, --resume, sittings on different days) or claims edited
// since the runs.
func writeReproduceTable(cmd *cobra.Command, plan *reproduce.Plan, out string) error {
	if fi, err := os.Stat(out); err != nil || !fi.IsDir() {
		return BadInput(fmt.Errorf("--table-only: %s is not a results directory of reproduce (-o DIR names one)", out))
	}
	rep, err := plan.Table()
	if err != nil {
		return Failed(err)
	}
	return printReproduceTable(cmd, rep, out)
}

// printReproduceTable prints the verdict counts and where the table is.
func printReproduceTable(cmd *cobra.Command, rep *reproduce.Report, out string) error {
	if err := rep.WriteText(cmd.OutOrStdout()); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "table: %s\n", filepath.Join(out, reproduce.HTMLFile))
	return nil
}

// commandLine is the command as given: its path, argument and the flags set.
func commandLine(cmd *cobra.Command, arg string) string {
	parts := []string{cmd.CommandPath(), arg}
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if fl.Value.Type() == "bool" {
			parts = append(parts, "--"+fl.Name)
			return
		}
		v := fl.Value.String()
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",")
		}
		parts = append(parts, "--"+fl.Name, v)
	})
	return strings.Join(parts, " ")
}
