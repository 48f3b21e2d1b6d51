package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultbench/faultbench/internal/model"
)

// timeUnits are the time units a generated chain's rates can be in.
var timeUnits = map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}

// kofnTable prints a k-of-n result with its time unit.
type kofnTable struct {
	*model.KofNResult
	unit string
}

func (k kofnTable) WriteTable(w io.Writer) error { return k.KofNResult.WriteTable(w, k.unit) }

func newModelKofNCmd() *cobra.Command {
	var n, k int
	var mttf, mttr time.Duration
	var shared, asJSON bool
	var unit, emitPath string
	var unitReward float64
	var recoveryFrom []string
	var mttfGrid []time.Duration
	cmd := &cobra.Command{
		Use:   "kofn --n N --k K --mttf D --mttr D [--shared-repair] | kofn --mttf D --recovery-from RUNDIR...",
		Short: "MTTF and availability of n units of which k must be up (Dumitras and Narasimhan's (2005) replicas, RAID)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			u, ok := timeUnits[unit]
			if !ok {
				return BadInput(fmt.Errorf("--unit must be s, m or h, got %q", unit))
			}
			if len(recoveryFrom) > 0 {
				if cmd.Flags().Changed("mttr") || cmd.Flags().Changed("n") || cmd.Flags().Changed("k") || shared {
					return BadInput(fmt.Errorf("--recovery-from measures the MTTR of 3 replicas (k=1, one restart per replica): drop --mttr, --n, --k and --shared-repair"))
				}
				mttfs := []float64{float64(mttf) / float64(u)}
				for _, d := range mttfGrid {
					if d <= 0 {
						return BadInput(fmt.Errorf("--mttf-grid: %v is not a positive duration", d))
					}
					mttfs = append(mttfs, float64(d)/float64(u))
				}
				st, err := studyRecovery(recoveryFrom, mttfs, unit, float64(u)/float64(time.Second))
				if err != nil {
					return err
				}
				return emit(cmd.OutOrStdout(), asJSON, st)
			}
			m := model.KofN{N: n, K: k, MTTF: float64(mttf) / float64(u), MTTR: float64(mttr) / float64(u),
				SharedRepair: shared, UnitReward: unitReward}
			return runKofN(cmd, m, unit, emitPath, asJSON)
		},
	}
	cmd.Flags().IntVar(&n, "n", 3, "units")
	cmd.Flags().IntVar(&k, "k", 1, "units that must be up")
	cmd.Flags().DurationVar(&mttf, "mttf", 0, "each unit's mean time to failure (Go duration)")
	cmd.Flags().DurationVar(&mttr, "mttr", 0, "each unit's mean time to repair (0: no repair)")
	cmd.Flags().BoolVar(&shared, "shared-repair", false, "one repair at a time instead of one per failed unit")
	cmd.Flags().Float64Var(&unitReward, "unit-reward", 1, "reward of each up unit (e.g. its throughput)")
	cmd.Flags().StringVar(&unit, "unit", "h", "time unit of the chain's rates and of the printed MTTF: s, m or h")
	cmd.Flags().StringVar(&emitPath, "emit", "", "also write the generated chain (repairable form) as MODEL.yaml to this file")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringSliceVar(&recoveryFrom, "recovery-from", nil, "run directories with replica restarts: measure the recovery time (restart → first request served) per client count and use its mean as the MTTR of 3 restarted replicas (Dumitras and Narasimhan 2005, Fig. 4)")
	cmd.Flags().DurationSliceVar(&mttfGrid, "mttf-grid", nil, "with --recovery-from, more per-replica MTTFs to tabulate beside --mttf (Fig. 4(b) over fault rates)")
	_ = cmd.MarkFlagRequired("mttf")
	return cmd
}

func newModelRAID5Cmd() *cobra.Command {
	var disks int
	var mttf, mttr time.Duration
	var normal, degraded float64
	var asJSON bool
	var unit, emitPath string
	cmd := &cobra.Command{
		Use:   "raid5 --disks N --mttf D --mttr D [--normal IOPS --degraded IOPS]",
		Short: "Broadwell (2004) Fig. 2: RAID-5 Markov reward model (mean time to data loss, performability)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			u, ok := timeUnits[unit]
			if !ok {
				return BadInput(fmt.Errorf("--unit must be s, m or h, got %q", unit))
			}
			r := model.RAID5{Disks: disks, MTTF: float64(mttf) / float64(u), MTTR: float64(mttr) / float64(u), Normal: normal, Degraded: degraded}
			return runKofN(cmd, r.KofN(), unit, emitPath, asJSON)
		},
	}
	cmd.Flags().IntVar(&disks, "disks", 5, "disks in the array")
	cmd.Flags().DurationVar(&mttf, "mttf", 0, "each disk's mean time to failure")
	cmd.Flags().DurationVar(&mttr, "mttr", 0, "mean time to replace and reconstruct a disk (in the availability model, data loss is left the same way, one disk at a time)")
	cmd.Flags().Float64Var(&normal, "normal", 1, "reward (I/O rate) with every disk up")
	cmd.Flags().Float64Var(&degraded, "degraded", 1, "reward (I/O rate) with one disk down")
	cmd.Flags().StringVar(&unit, "unit", "h", "time unit: s, m or h")
	cmd.Flags().StringVar(&emitPath, "emit", "", "also write the chain as MODEL.yaml to this file")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	_ = cmd.MarkFlagRequired("mttf")
	_ = cmd.MarkFlagRequired("mttr")
	return cmd
}

func runKofN(cmd *cobra.Command, m model.KofN, unit, emitPath string, asJSON bool) error {
	res, err := m.Evaluate()
	if err != nil {
		return modelErr(err)
	}
	if emitPath != "" {
		c, err := m.Chain(m.MTTR == 0)
		if err != nil {
			return modelErr(err)
		}
		if err := writeChain(emitPath, c); err != nil {
			return err
		}
	}
	if asJSON {
		return emit(cmd.OutOrStdout(), true, kofnTable{res, unit})
	}
	return emit(cmd.OutOrStdout(), false, kofnTable{res, unit})
}
