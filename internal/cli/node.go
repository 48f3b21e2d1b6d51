package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/faultbench/faultbench/internal/node"
	// Each import registers its node kinds.
	_ "github.com/faultbench/faultbench/internal/node/lb"       // lb
	_ "github.com/faultbench/faultbench/internal/node/static"   // static
	_ "github.com/faultbench/faultbench/internal/systems/press" // press
	_ "github.com/faultbench/faultbench/internal/systems/raid"  // raid
	_ "github.com/faultbench/faultbench/internal/systems/ssm"   // ssm-brick, ssm-app
)

func init() { register(newNodeCmd) }

// newNodeCmd is `faultbench node KIND [flags]`: run one node program. The
// testbed starts these as child processes; users rarely run them by hand.
func newNodeCmd() *cobra.Command {
	var cfg node.Config
	cmd := &cobra.Command{
		Use:   "node KIND [flags]",
		Short: "Run one reference node (" + strings.Join(node.Kinds(), ", ") + ")",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(node.Kinds(), args[0]) {
				return BadInput(fmt.Errorf("unknown node kind %q (known: %s)", args[0], strings.Join(node.Kinds(), ", ")))
			}
			cfg.Alone = true
			if err := node.Run(cmd.Context(), args[0], cfg); err != nil {
				if errors.Is(err, node.ErrConfig) {
					return BadInput(fmt.Errorf("node %s: %w", args[0], err))
				}
				return Failed(fmt.Errorf("node %s: %w", args[0], err))
			}
			return nil
		},
	}
	node.BindFlags(cmd.Flags(), &cfg)
	return cmd
}
