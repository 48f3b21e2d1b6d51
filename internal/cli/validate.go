package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/testbed"
	"github.com/faultbench/faultbench/internal/workload"
)

func init() { register(newValidateCmd) }

func newValidateCmd() *cobra.Command {
	var timeScale float64
	cmd := &cobra.Command{
		Use:   "validate SCENARIO.yaml [--time-scale F]",
		Short: "Check a scenario as run would and print it with every default filled in",
		Long: "Check a scenario as `faultbench run` would before starting anything: the schema, what the\n" +
			"system, backend and faults can do, the trace file, and the ranges of the run at --time-scale\n" +
			"(the same flag as run's: a file validate accepts at a scale is one run can carry out).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := prepareScenario(args[0], timeScale, cmd.ErrOrStderr())
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
	cmd.Flags().Float64Var(&timeScale, "time-scale", 1, "check the run as `run --time-scale F` would carry it out")
	return cmd
}

// prepareScenario is everything run and validate check before any process
// starts: loadScenario, the trace file opened and read as the run will
// read it, then the scenario scaled by timeScale and checked against the
// ranges a run can carry out. Every error is bad input naming file:line
// and key; warnings (a clf trace's skipped lines) go to warn.
func prepareScenario(path string, timeScale float64, warn io.Writer) (*scenario.Scenario, error) {
	sc, notes, err := loadScenario(path)
	if err != nil {
		return nil, err
	}
	for _, n := range notes {
		fmt.Fprintf(warn, "note: %s: %s\n", path, n)
	}
	var errs []error
	if note, err := checkTrace(sc); err != nil {
		errs = append(errs, err)
	} else if note != "" {
		fmt.Fprintf(warn, "warning: %s: %s\n", path, note)
	}
	scaled, err := sc.ScaledChecked(timeScale)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, BadInput(err)
	}
	return scaled, nil
}

// checkTrace opens the scenario's trace file (paths:, clf:) as the run
// will and returns what it skipped, so that a missing file or a log with
// too few usable lines is bad input rather than a failure after the
// cluster started.
func checkTrace(sc *scenario.Scenario) (string, error) {
	w := sc.Workload
	spec, err := workload.ParseTraceSpec(w.Trace)
	if err != nil {
		return "", nil // loadScenario has said what is wrong with the string
	}
	spec.MinUsable = w.TraceMinUsable
	skips, err := workload.CheckTrace(spec, sc.Dir())
	if err != nil {
		return "", sc.Errorf([]any{"workload", "trace"}, "%v (see workload.trace and trace_min_usable in docs/scenario.md)", err)
	}
	if s := skips.String(); s != "" {
		return fmt.Sprintf("workload.trace %s: %s", w.Trace, s), nil
	}
	return "", nil
}

// loadScenario loads, resolves (testbed.Resolve) and fully validates a
// scenario: its schema, the system's defaults, then the checks of the packages that will carry it out. Every error is bad input.
// Notes are what the backend wants the user to know before the run.
func loadScenario(path string) (*scenario.Scenario, []string, error) {
	sc, err := scenario.Load(path)
	if err != nil {
		return nil, nil, BadInput(fmt.Errorf("%w", err))
	}
	// The system descriptor's defaults (page set, ready path, trace)
	// belong to the resolved scenario that validate prints and run runs.
	// Both reported at once: a missing trace and, say, a driver the
	// system does not take.
	resolveErr := testbed.Resolve(sc)
	notes, err := checkScenario(sc)
	if err := errors.Join(resolveErr, err); err != nil {
		return nil, notes, BadInput(err)
	}
	return sc, notes, nil
}
