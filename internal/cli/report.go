package cli

import (
	"github.com/spf13/cobra"

	"github.com/faultbench/faultbench/internal/report"
)

func init() { register(newReportCmd) }

// newReportCmd is `faultbench report DIR [DIR ...] [-o FILE.html]`.
func newReportCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "report DIR [DIR ...]",
		Short: "Write a self-contained HTML report of one run, or of several side by side",
		Long: `Write a self-contained HTML report (inline SVG figures, no external assets)
of one results directory, or of several compared side by side, and every
figure as PNG and SVG beside it.

Without -o the report is DIR/report.html for one directory and ./report.html
for several. Figures go to "figures/" next to a file named report.html, else
to "<name>-figures/" next to FILE.html.

Over many runs it also prints, and renders, the tables of seed 003: the
behaviour class of each single-fault run by fault and policy (Table 1; when
the runs vary in both), and reconstruction time against the worst
performance drop of each multi-fault run (§4.2). Otherwise it prints nothing.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			if err := report.WriteText(dirs, out, cmd.OutOrStdout()); err != nil {
				return Failed(err)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the report to `FILE.html` (default DIR/report.html, or ./report.html for several DIRs)")
	return cmd
}
