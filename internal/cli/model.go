package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/faultbench/faultbench/internal/model"
)

func init() { register(newModelCmd) }

// newModelCmd is `faultbench model`: phase-2 performability and Markov
// reward models (docs/models.md).
func newModelCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Model what a year of faults costs: performability, sweeps, cross-overs, Markov chains",
	}
	cmd.AddCommand(newModelPerformabilityCmd(), newModelCTMCCmd(), newModelSweepCmd(), newModelCrossoverCmd(),
		newModelKofNCmd(), newModelRAID5Cmd(), newModelSessionLossCmd(), newModelFromRunsCmd(), newModelValidateCmd())
	return cmd
}

func newModelPerformabilityCmd() *cobra.Command {
	var asJSON bool
	var emitChain string
	cmd := &cobra.Command{
		Use:   "performability FAULTLOAD.yaml",
		Short: "Average throughput, availability and performability under a fault load (Nagaraja et al. 2002, phase 2)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fl, err := model.LoadFaultLoad(args[0])
			if err != nil {
				return modelErr(err)
			}
			if emitChain != "" {
				if err := os.WriteFile(emitChain, []byte(model.BridgeChain(fl).YAML()), 0o644); err != nil {
					return Failed(err)
				}
			}
			return emit(cmd.OutOrStdout(), asJSON, model.Evaluate(fl))
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (keys are a stable contract)")
	cmd.Flags().StringVar(&emitChain, "emit-chain", "", "also write the fault load as a Markov reward MODEL.yaml (rates per second) to this file")
	return cmd
}

func newModelCTMCCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ctmc MODEL.yaml",
		Short: "Solve a continuous-time Markov chain with rewards: steady state, mean time to absorption, transient",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := model.LoadChain(args[0])
			if err != nil {
				return modelErr(err)
			}
			res, err := model.Solve(c)
			if err != nil {
				return modelErr(err)
			}
			return emit(cmd.OutOrStdout(), asJSON, res)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (keys are a stable contract)")
	return cmd
}

// tabler is a model result with a human-readable form.
type tabler interface{ WriteTable(io.Writer) error }

// emit prints v as indented JSON or as its table.
func emit(w io.Writer, asJSON bool, v tabler) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return Failed(enc.Encode(v))
	}
	return Failed(v.WriteTable(w))
}

// modelErr maps the model package's errors to exit codes: its input
// errors are bad input (2), anything else a failure (1).
func modelErr(err error) error {
	if errors.Is(err, model.ErrBadInput) {
		return BadInput(err)
	}
	return Failed(err)
}

// writeChain writes a generated chain to path when path is set.
func writeChain(path string, c *model.Chain) error {
	if path == "" {
		return nil
	}
	if err := os.WriteFile(path, []byte(c.YAML()), 0o644); err != nil {
		return Failed(fmt.Errorf("writing the chain: %w", err))
	}
	return nil
}
