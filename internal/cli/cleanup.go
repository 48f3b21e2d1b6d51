package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/faultbench/faultbench/internal/testbed/docker"
	"github.com/faultbench/faultbench/internal/warden"
)

func init() { register(newCleanupCmd) }

// newCleanupCmd is `faultbench cleanup`: remove what dead netns runs left.
func newCleanupCmd() *cobra.Command {
	var run string
	cmd := &cobra.Command{
		Use:   "cleanup [--run RUN_ID]",
		Short: "Remove what netns runs whose controller is gone left behind, and say what",
		Long: `Replay the journal of every netns run (/run/faultbench/*.journal) whose
controller is no longer running and remove what it lists: the faults the
warden held (rules, NFQUEUE chains, qdiscs, black holes, frozen cgroups,
burners and balloons), cgroups (killing their processes), network
namespaces (and with them every rule and qdisc inside), the host-side
veth. Prints one line per removed object. Runs still in progress are left
alone. Needs root. On a Docker engine it also removes the containers and
networks labelled with the id of a run that is no longer running, and
faultbench-node images no container uses. With --run, only that run's
journal is replayed (its id is run_id in the results' provenance.json),
and the engine is left alone.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("run") {
				if err := warden.CheckRunID(run); err != nil {
					return BadInput(fmt.Errorf("cleanup --run: %w", err))
				}
				removed, err := warden.CleanupRun(run)
				return reportRemoved(cmd, removed, err)
			}
			removed, err := warden.Cleanup()
			// Then what docker runs left on the engine (containers and
			// networks of dead runs, unused faultbench images).
			dockerRemoved, dockerErr := docker.Cleanup(cmd.Context())
			return reportRemoved(cmd, append(removed, dockerRemoved...), errors.Join(err, dockerErr))
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "replay only this run's journal")
	return cmd
}

// reportRemoved prints one line per removed object (or that there was
// nothing to remove) and fails with err.
func reportRemoved(cmd *cobra.Command, removed []string, err error) error {
	for _, r := range removed {
		fmt.Fprintln(cmd.OutOrStdout(), "removed", r)
	}
	if len(removed) == 0 && err == nil {
		fmt.Fprintln(cmd.OutOrStdout(), "nothing to remove")
	}
	if err != nil {
		return Failed(fmt.Errorf("cleanup: %w", err))
	}
	return nil
}
