package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	_ "github.com/faultbench/faultbench/internal/kernelfault" // kernel faults (netns)
	"github.com/faultbench/faultbench/internal/progress"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/runner"
	_ "github.com/faultbench/faultbench/internal/testbed/docker" // backend docker
	_ "github.com/faultbench/faultbench/internal/testbed/local"  // backend local
	_ "github.com/faultbench/faultbench/internal/testbed/netns"  // backend netns
)

func init() { register(newRunCmd) }

type runFlags struct {
	out         string
	timeScale   float64
	seed        int64
	quiet       bool
	allowRemote bool
	live        liveFlags
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
	f.live.register(cmd)
	return cmd
}

func runScenario(ctx context.Context, cmd *cobra.Command, path string, f runFlags) error {
	sc, err := prepareScenario(path, f.timeScale, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	if cmd.Flags().Changed("seed") {
		sc.Seed = f.seed
	}
	out := f.out
	if out == "" {
		out = filepath.Join("results", resultsName(sc.Name)+"-"+time.Now().UTC().Format("20060102T150405Z"))
	}
	if st, err := os.Stat(out); err == nil && !st.IsDir() {
		return BadInput(fmt.Errorf("-o %s is a file, not a directory: choose a new directory", out))
	}
	if file, ok := holdsRun(out); ok {
		return BadInput(fmt.Errorf("-o %s already holds a run (%s): choose a new directory, or remove that one", out, file))
	}
	stderr := cmd.ErrOrStderr()
	opt := runner.Options{Scenario: sc, OutDir: out, AllowRemote: f.allowRemote}
	liveOpt, closeLive, err := f.live.open(sc, f.allowRemote, cmd.OutOrStdout())
	if err != nil {
		return err
	}
	defer closeLive()
	opt.Live = liveOpt
	if !f.quiet && progress.IsTerminal(stderr) {
		opt.Progress = stderr
		opt.Log = stderr
	}
	res, err := runner.Run(ctx, opt)
	if err != nil && res == nil && ctx.Err() != nil {
		// Ctrl-C before the load started: whatever the start-up was doing
		// failed because of it, and saying that failure would mislead.
		return Failed(fmt.Errorf("interrupted during start-up, before any request was sent: nodes stopped, nothing measured (%s holds the scenario and the start-up events)", out))
	}
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
	if err := f.live.lineErr(); err != nil {
		fmt.Fprintf(stderr, "warning: --live: %v\n", err)
	}
	if res.Aborted != nil {
		return abortedExit(res, stderr)
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
	fmt.Fprintf(w, "  %s\n", generatorLine(&o))
	if warn := invalidWarning(&o); warn != "" {
		fmt.Fprintf(w, "  %s\n", warn)
	}
	for _, fr := range s.Faults {
		what := fr.Type
		if fr.Unplanned() {
			what += " (not injected: the application exited on its own)"
		}
		fmt.Fprintf(w, "  %s on node %d at %.1fs: fault %s, failure %s, class %s\n", what, fr.Node, fr.InjectS,
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

// resultsName makes a scenario name safe as one path element inside
// results/: every character but letters, digits, '.', '_' and '-' becomes
// '-', leading dots and dashes go (no "..", no hidden directory), and the
// length is bounded. "../../../tmp/evil" becomes "tmp-evil".
func resultsName(name string) string {
	b := []byte(name)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			b[i] = '-'
		}
	}
	s := strings.TrimLeft(string(b), ".-")
	for strings.Contains(s, "..") {
		s = strings.ReplaceAll(s, "..", ".")
	}
	for strings.Contains(s, "--") {
		s = strings.ReplaceAll(s, "--", "-")
	}
	if len(s) > 100 {
		s = s[:100]
	}
	if s = strings.TrimRight(s, ".-"); s == "" {
		s = "run"
	}
	return s
}

// holdsRun reports whether dir already holds (part of) a run: a file that
// every run writes before anything else, so a run killed early counts too.
func holdsRun(dir string) (file string, ok bool) {
	for _, f := range []string{record.ScenarioFile, record.EventsFile, record.RequestsFile, record.SummaryFile} {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			return f, true
		}
	}
	return "", false
}
