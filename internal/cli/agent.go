package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultbench/faultbench/internal/warden"
)

func init() { register(newAgentCmd) }

// newAgentCmd is `faultbench agent`: the warden of one netns run, run by
// hand. The netns backend starts the same warden itself (as the node kind
// warden) for every run; this command serves debugging and recovery.
func newAgentCmd() *cobra.Command {
	var run string
	var lease time.Duration
	cmd := &cobra.Command{
		Use:   "agent --run RUN_ID",
		Short: "Guard a netns run: remove everything it created when stdin closes or no line arrives within the lease",
		Long: `Read lease renewals (one line each) on stdin for the netns run RUN_ID.
When stdin closes or no renewal arrives within --lease, remove everything
the run's journal (/run/faultbench/RUN_ID.journal) lists — namespaces,
veths, cgroups and with them every rule, qdisc, balloon and burner — and
print what was removed. Needs root.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if run == "" {
				return BadInput(fmt.Errorf("agent: --run RUN_ID is required"))
			}
			if lease <= 0 {
				return BadInput(fmt.Errorf("agent: --lease %v: want a positive duration", lease))
			}
			_ = os.WriteFile("/proc/self/oom_score_adj", []byte("-1000"), 0o644)
			why := warden.Guard(cmd.Context(), os.Stdin, lease)
			removed, err := warden.RemoveRun(run)
			for _, r := range removed {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: removed %s\n", why, r)
			}
			if err != nil {
				return Failed(fmt.Errorf("agent: run %s: %w", run, err))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "the run id whose journal to guard")
	cmd.Flags().DurationVar(&lease, "lease", warden.DefaultLease, "revert everything when no renewal arrives for this long")
	return cmd
}
