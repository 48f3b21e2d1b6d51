package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultbench/faultbench/internal/progress"
	"github.com/faultbench/faultbench/internal/runner"
)

func init() { register(newRunCmd) }

type runFlags struct {
	out         string
	timeScale   float64
	seed        int64
	quiet       bool
	allowRemote bool
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run SCENARIO.yaml [-o DIR] [--time-scale F] [--seed N] [--quiet]",
		Short: "Run an experiment: start the cluster, drive it, inject faults, record, analyse and report",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runScenario(cmd.Context(), cmd, args[0], f)
		},
	}
	cmd.Flags().StringVarP(&f.out, "output", "o", "", "results directory (default results/<name>-<UTC timestamp>)")
	cmd.Flags().Float64Var(&f.timeScale, "time-scale", 1, "multiply every duration of the scenario by F (0.1 turns 5 minutes into 30 s)")
	cmd.Flags().Int64Var(&f.seed, "seed", 0, "override the scenario's seed")
	cmd.Flags().BoolVar(&f.quiet, "quiet", false, "no progress display and no messages")
	cmd.Flags().BoolVar(&f.allowRemote, "allow-remote", false, "let the load generator send to addresses outside loopback and the run's own hosts")
	return cmd
}

func runScenario(ctx context.Context, cmd *cobra.Command, path string, f runFlags) error {
	if f.timeScale <= 0 || f.timeScale > 1000 {
		return BadInput(fmt.Errorf("--time-scale %v: want a factor above 0 (at most 1000)", f.timeScale))
	}
	sc, err := loadScenario(path)
	if err != nil {
		return err
	}
	if cmd.Flags().Changed("seed") {
		sc.Seed = f.seed
	}
	sc = sc.Scaled(f.timeScale)
	out := f.out
	if out == "" {
		out = filepath.Join("results", sc.Name+"-"+time.Now().UTC().Format("20060102T150405Z"))
	}
	stderr := cmd.ErrOrStderr()
	opt := runner.Options{Scenario: sc, OutDir: out, AllowRemote: f.allowRemote}
	if !f.quiet && progress.IsTerminal(stderr) {
		opt.Progress = stderr
		opt.Log = stderr
	}
	res, err := runner.Run(ctx, opt)
	if err != nil && (res == nil || !res.Interrupted) {
		return Failed(err)
	}
	stdout := cmd.OutOrStdout()
	if res.Interrupted {
		return Failed(fmt.Errorf("interrupted: faults reverted, nodes stopped; partial results kept in %s", res.Dir))
	}
	if !f.quiet {
		printRunSummary(stdout, res)
	}
	return thresholdsExit(res.Summary.Thresholds, stderr)
}

func printRunSummary(w io.Writer, res *runner.Result) {
	s := res.Summary
	o := s.Overall
	if res.Knee != "" {
		fmt.Fprintf(w, "%s\n", res.Knee)
	}
	fmt.Fprintf(w, "%s: %d attempts, goodput %s, mean latency %s, p99 %s\n", s.Run.Name, o.Attempts,
		fmtFloat(float64(o.Goodput), "%.3f"), fmtSeconds(float64(o.LatencyMeanS)), fmtSeconds(float64(o.LatencyP99S)))
	for _, fr := range s.Faults {
		fmt.Fprintf(w, "  %s on node %d at %.1fs: fault %s, failure %s, class %s\n", fr.Type, fr.Node, fr.InjectS,
			fmtSeconds(float64(fr.FaultDurationS)), fmtSeconds(float64(fr.FailureDurationS)), fr.Class)
	}
	fmt.Fprintf(w, "results: %s\nreport:  %s\n", res.Dir, filepath.Join(res.Dir, "report.html"))
}

func fmtFloat(v float64, format string) string {
	if v != v {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

func fmtSeconds(v float64) string {
	if v != v {
		return "–"
	}
	return time.Duration(v * float64(time.Second)).Round(100 * time.Microsecond).String()
}
