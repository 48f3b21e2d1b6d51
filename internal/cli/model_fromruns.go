package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/faultbench/faultbench/internal/model"
)

// newModelFromRunsCmd is `faultbench model fromruns`: phase 1's single-fault
// runs into phase 2's input (docs/models.md, "From runs").
func newModelFromRunsCmd() *cobra.Command {
	var faultload, out string
	var timeScale float64
	cmd := &cobra.Command{
		Use:   "fromruns RUNDIR... --faultload FILE",
		Short: "Write a phase-2 fault load from single-fault runs: every stage measured, or supplied with a reason",
		Long: `fromruns reads one single-fault run per fault type of the fault load (their
summary.json and scenario.yaml), averages repetitions, and writes a fault load
that 'faultbench model performability' reads, every stage marked measured or
supplied (with the reason the fault load gives). All runs must be of one
system, mode and page set; a run without a fault, or a fault type of the load
that no run measures and whose stages are not all supplied, is an error.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if faultload == "" {
				return BadInput(fmt.Errorf("--faultload is required (the rates: mttf or group+share, mttr, supplied stages)"))
			}
			r, err := model.LoadRates(faultload)
			if err != nil {
				return modelErr(err)
			}
			if !(timeScale > 0) {
				return BadInput(fmt.Errorf("--time-scale %v: want a factor > 0", timeScale))
			}
			r.ScaleTime(timeScale)
			m, err := model.FromRuns(r, args)
			if err != nil {
				return modelErr(err)
			}
			for _, f := range m.Faults {
				if f.Note != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "fromruns: note: %s: %s\n", f.Name, f.Note)
				}
			}
			text := m.YAML()
			if out == "" {
				_, err := fmt.Fprint(cmd.OutOrStdout(), text)
				return Failed(err)
			}
			return Failed(os.WriteFile(out, []byte(text), 0o644))
		},
	}
	cmd.Flags().StringVar(&faultload, "faultload", "", "the fault load: rates, repair times and supplied stages (required)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the phase-2 input here (default: standard output)")
	cmd.Flags().Float64Var(&timeScale, "time-scale", 1, "the runs' --time-scale: the fault load's MTTFs, MTTRs and supplied durations are multiplied by it")
	return cmd
}

// newModelValidateCmd is `faultbench model validate`: phase 2's prediction
// against a multi-fault run it never saw.
func newModelValidateCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate MODEL.yaml RUNDIR...",
		Short: "Compare a fault load's predicted unavailability and throughput with a multi-fault run of the same fault load",
		Long: `validate evaluates MODEL.yaml (a fault load, e.g. from 'model fromruns' with
compressed MTTFs) and compares it with RUNDIR, a run whose scenario injects the
same faults recurring as poisson(MEAN) processes: unavailability (1 - A) and
mean throughput with their relative errors, a 95% interval from the run's fault
count, the fraction of time two or more faults overlapped (phase 2 assumes they
do not), the error without the overlapping stretches, and each fault's share.
Several RUNDIRs are repetitions of one scenario (other seeds): they are pooled,
with a second 95% interval from the spread of their unavailabilities.
A run whose fault load differs from the model's is refused, saying how.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			fl, err := model.LoadFaultLoad(args[0])
			if err != nil {
				return modelErr(err)
			}
			v, err := model.ValidateRuns(fl, args[1:]...)
			if err != nil {
				return modelErr(err)
			}
			return emit(cmd.OutOrStdout(), asJSON, v)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (keys are a stable contract)")
	return cmd
}
