package cli

import (
	"errors"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/faultbench/faultbench/internal/record"
)

func init() { register(newExportCmd) }

func newExportCmd() *cobra.Command {
	var asCSV bool
	var out string
	cmd := &cobra.Command{
		Use:   "export DIR --csv [-o FILE]",
		Short: "Write a run's per-request records as CSV (header row)",
		Long: `export writes every request of DIR as CSV: from requests.parquet, or from
the segments requests/part-*.parquet of a run that was killed (every
request up to the last sealed segment), or from requests.csv.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !asCSV {
				return BadInput(errors.New("export needs a format: --csv"))
			}
			var w io.Writer = cmd.OutOrStdout()
			if out != "" && out != "-" {
				f, err := os.Create(out)
				if err != nil {
					return Failed(err)
				}
				defer f.Close()
				w = f
			}
			cw, err := record.NewCSVWriter(w)
			if err != nil {
				return Failed(err)
			}
			if err := record.ReadRequests(args[0], cw.Write); err != nil {
				return BadInput(err)
			}
			return Failed(cw.Flush())
		},
	}
	cmd.Flags().BoolVar(&asCSV, "csv", false, "write CSV")
	cmd.Flags().StringVarP(&out, "output", "o", "", "output file (default: standard output)")
	return cmd
}
