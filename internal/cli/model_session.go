package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/faultbench/faultbench/internal/model"
)

func newModelSessionLossCmd() *cobra.Command {
	var wq int
	var rho, nines float64
	var asJSON bool
	var out string
	cmd := &cobra.Command{
		Use:   "session-loss --wq N (--rho X | --nines K)",
		Short: "Ling, Kiciman and Fox (2004) §3.7: probability that a session-state object loses all WQ copies before its next write",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rhoSet, ninesSet := cmd.Flags().Changed("rho"), cmd.Flags().Changed("nines")
			if rhoSet == ninesSet {
				return BadInput(fmt.Errorf("give exactly one of --rho (brick MTTF / mean time between writes) and --nines"))
			}
			var res *model.SessionLoss
			var err error
			if rhoSet {
				res, err = model.EvaluateSessionLoss(wq, rho)
			} else {
				res, err = model.RhoForNines(wq, nines)
			}
			if err != nil {
				return modelErr(err)
			}
			if out != "" {
				figRho := 10.0 // Ling, Kiciman and Fox (2004) Fig. 5's ratio, unless --rho says otherwise
				if rhoSet {
					figRho = rho
				}
				files, err := model.WriteSessionLossFigure(wq, figRho, out)
				if err != nil {
					return Failed(err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", strings.Join(files, ", "))
			}
			return emit(cmd.OutOrStdout(), asJSON, res)
		},
	}
	cmd.Flags().IntVar(&wq, "wq", 2, "copies a write waits for (WQ)")
	cmd.Flags().Float64Var(&rho, "rho", 0, "brick MTTF divided by the mean time between writes of an object")
	cmd.Flags().Float64Var(&nines, "nines", 0, "find the smallest rho whose p_noloss has this many nines")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write Ling, Kiciman and Fox (2004) Fig. 4 and 5 for this WQ (and ρ, default 10) to FILE.svg and FILE.png")
	return cmd
}
