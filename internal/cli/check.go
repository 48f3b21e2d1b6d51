package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/operator"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/testbed"
	"github.com/faultbench/faultbench/internal/workload"
)

// checkScenario runs the validation that needs other packages' knowledge:
// the backend, the system and the faults' levers (testbed.Check),
// thresholds that analysis can evaluate, fault targets and timing. Errors name the file, line and key.
// Notes are the backend's lines for the user (an attached container's
// restart policy).
func checkScenario(sc *scenario.Scenario) (notes []string, err error) {
	var errs []error
	// The backend and the system exist, the system's own check, and every
	// fault's levers: the registries' answers.
	if notes, err = testbed.CheckNotes(sc); err != nil {
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
				fes = append(fes, sc.Errorf(fe.Path(), "%v", fe.Err))
				continue
			}
			fes = append(fes, e)
		}
		errs = append(errs, fes...)
	}
	for i, f := range sc.Faults {
		if f.Type != "load-spike" {
			continue
		}
		if key, err := workload.CheckSpike(sc.Workload.Model, sc.Workload.Arrivals, f.Params); err != nil {
			errs = append(errs, sc.Errorf([]any{"faults", i, "params", key}, "%v", err))
		}
	}
	if err := runner.CheckRequests(sc); err != nil {
		errs = append(errs, err)
	}
	if err := runner.CheckPlacement(sc); err != nil {
		errs = append(errs, err)
	}
	if _, err := operator.FromScenario(sc.Operator, sc.Cluster.Boot.Duration); err != nil {
		errs = append(errs, sc.Errorf([]any{"operator"}, "%v", err))
	}
	return notes, errors.Join(errs...)
}

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
