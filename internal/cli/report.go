package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/faultbench/faultbench/internal/report"
	"github.com/faultbench/faultbench/internal/sweep"
)

func init() { register(newReportCmd) }

// newReportCmd is `faultbench report DIR [DIR ...] [-o FILE.html]`.
func newReportCmd() *cobra.Command {
	var out string
	var allowMixed bool
	var knob knobFlags
	cmd := &cobra.Command{
		Use:   "report DIR [DIR ...]",
		Short: "Write a self-contained HTML report of one run, or of several side by side",
		Long: `Write a self-contained HTML report (inline SVG figures, no external assets)
of one results directory, or of several compared side by side, and every
figure as PNG and SVG beside it.

Without -o the report is DIR/report.html for one directory and ./report.html
for several. Figures go to "figures/" next to a file named report.html, else
to "<name>-figures/" next to FILE.html.

Over many runs it also prints, and renders, the tables of Brown and Patterson (2000): the
behaviour class of each single-fault run by fault and policy (Table 1; when
the runs vary in both), and reconstruction time against the worst
performance drop of each multi-fault run (§4.2). Otherwise it prints nothing.

Runs set side by side must mean the same by the same numbers: runs analysed
under different schema versions are refused (exit 2; re-analyse the older
ones, or pass --allow-mixed-schemas), and every other difference in what the
metrics depend on (window, timeouts, demerit weights, baseline, record
schema) is printed as a warning and shown in the report.

On a sweep directory (faultbench sweep) it prints and renders the sweep's
analysis instead: Table 1, Fig. 2(a)/(b) and the haircut of Fig. 3, and with
--p99-goal the configurations that meet it, cheapest first by --cost.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			if len(dirs) == 1 && sweep.IsSweepDir(dirs[0]) {
				return reportSweep(cmd, dirs[0], out, knob)
			}
			err := report.WriteWith(dirs, out, report.Options{Text: cmd.OutOrStdout(), Warn: cmd.ErrOrStderr(), AllowMixedSchemas: allowMixed})
			if errors.Is(err, report.ErrMixedSchemas) {
				return BadInput(err)
			}
			if err != nil {
				return Failed(err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&allowMixed, "allow-mixed-schemas", false, "compare runs analysed under different schema versions instead of refusing")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the report to `FILE.html` (default DIR/report.html, or ./report.html for several DIRs)")
	knob.add(cmd)
	return cmd
}
