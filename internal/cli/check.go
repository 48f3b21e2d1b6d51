package cli

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/operator"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/testbed"
)

// checkScenario runs the validation that needs other packages' knowledge:
// thresholds that analysis can evaluate, and (once wired) faults the system
// and backend can inject. Errors name the file, line and key.
func checkScenario(sc *scenario.Scenario) error {
	var errs []error
	if sc.Cluster.Backend != "local" {
		errs = append(errs, sc.Errorf([]any{"cluster", "backend"}, "backend %s is not available yet: use local (every node a process on its own 127.0.0.x address)", sc.Cluster.Backend))
	}
	if !runnableSystems[sc.Cluster.System] {
		errs = append(errs, sc.Errorf([]any{"cluster", "system"}, "system %s cannot be run by `faultbench run` yet (runnable: %s); its nodes can be started alone with `faultbench node`", sc.Cluster.System, strings.Join(slices.Sorted(maps.Keys(runnableSystems)), ", ")))
	}
	if err := testbed.CheckSystem(sc); err != nil {
		errs = append(errs, err)
	}
	for i, t := range sc.Thresholds {
		if _, err := analysis.ParseThreshold(t); err != nil {
			errs = append(errs, sc.Errorf([]any{"thresholds", i}, "%v", err))
		}
	}
	if err := fault.Validate(sc); err != nil {
		var fes []error
		for _, e := range unjoin(err) {
			var fe *fault.FieldError
			if errors.As(e, &fe) {
				path := []any{"faults", fe.Index}
				if fe.Key != "" {
					path = append(path, fe.Key)
				}
				fes = append(fes, sc.Errorf(path, "%v", fe.Err))
				continue
			}
			fes = append(fes, e)
		}
		errs = append(errs, fes...)
	}
	if _, err := operator.FromScenario(sc.Operator, sc.Cluster.Boot.Duration); err != nil {
		errs = append(errs, sc.Errorf([]any{"operator"}, "%v", err))
	}
	return errors.Join(errs...)
}

// runnableSystems are the cluster.system values the runner can carry out.
var runnableSystems = map[string]bool{"static": true, "command": true, "press": true, "ssm": true, "raid": true}

// unjoin splits an errors.Join result into its parts.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// thresholdsExit prints the thresholds a run missed and returns the
// threshold exit status when there are any.
func thresholdsExit(results []analysis.ThresholdResult, w io.Writer) error {
	missed := 0
	for _, t := range results {
		if !t.Passed {
			missed++
			fmt.Fprintf(w, "threshold missed: %s (value %s)\n", t.Expr, fmtFloat(float64(t.Value), "%.4g"))
		}
	}
	if missed == 0 {
		return nil
	}
	return &ExitError{Code: ExitThreshold, Err: fmt.Errorf("%d of %d threshold(s) missed: %w", missed, len(results), ErrReported)}
}
