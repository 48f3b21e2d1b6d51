package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/faultbench/faultbench/internal/scenario"
)

func init() { register(newValidateCmd) }

func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate SCENARIO.yaml",
		Short: "Check a scenario and print it with every default filled in",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := loadScenario(args[0])
			if err != nil {
				return err
			}
			body, err := sc.Marshal()
			if err != nil {
				return Failed(err)
			}
			_, err = cmd.OutOrStdout().Write(body)
			return err
		},
	}
}

// loadScenario loads and fully validates a scenario: its schema, then the
// checks of the packages that will carry it out. Every error is bad input.
func loadScenario(path string) (*scenario.Scenario, error) {
	sc, err := scenario.Load(path)
	if err != nil {
		return nil, BadInput(fmt.Errorf("%w", err))
	}
	if err := checkScenario(sc); err != nil {
		return nil, BadInput(err)
	}
	return sc, nil
}
