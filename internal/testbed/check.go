package testbed

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/placement"
	"github.com/faultbench/faultbench/internal/scenario"
)

// Check validates sc against the registries before anything runs: its
// backend and system exist in this build, the backend's own scenario
// check (ScenarioChecker) passes, the system's own Check passes with the
// addresses the backend plans, and every fault the system takes can be
// served by the levers the backend and the system offer. Every error
// names file:line and the key; the result may join several. Fault types
// unknown to the system are fault.Validate's to report.
//
// A backend that finds its nodes (docker's attach) fills in
// cluster.nodes when the scenario left it out.
func Check(sc *scenario.Scenario) error {
	_, err := CheckNotes(sc)
	return err
}

// CheckNotes is Check, also returning the backend's notes for the user
// (ScenarioChecker), one line each.
func CheckNotes(sc *scenario.Scenario) (notes []string, err error) {
	c := sc.Cluster
	var errs []error
	backend, err := LookupBackend(c.Backend)
	if err != nil {
		errs = append(errs, sc.Errorf([]any{"cluster", "backend"}, "%v", err))
	}
	sys, err := LookupSystem(c.System)
	if err != nil {
		errs = append(errs, sc.Errorf([]any{"cluster", "system"}, "%v", err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if bc, ok := backend.(ScenarioChecker); ok {
		if notes, err = bc.CheckScenario(sc); err != nil {
			return notes, err
		}
	}
	if c.CPUs != "" {
		if _, ok := backend.(CPUPinner); !ok {
			errs = append(errs, sc.Errorf([]any{"cluster", "cpus"}, "backend %s cannot pin nodes to CPUs (backend local can): leave cluster.cpus out", backendName(c.Backend)))
		} else if _, err := placement.ParseCPUList(c.CPUs); err != nil {
			errs = append(errs, sc.Errorf([]any{"cluster", "cpus"}, "%v: give CPUs of this machine as a list like \"1\" or \"2-3\"", err))
		}
		if len(errs) > 0 {
			return notes, errors.Join(errs...)
		}
	}
	c.System = sys.Name // "" is DefaultSystem, for a scenario not yet resolved
	errs = append(errs, checkTakes(sc, sys)...)
	plan, err := backend.Plan(FromScenario(c, ""))
	if err != nil {
		// The backend refuses the cluster. If the system's own check
		// explains why (a command system without its command), its
		// errors name the key and the remedy; else the backend's stands.
		if sys.Check != nil {
			if serr := sys.Check(sc, Plan{}); serr != nil {
				return notes, errors.Join(append(errs, serr)...)
			}
		}
		return notes, errors.Join(append(errs, sc.Errorf([]any{"cluster"}, "backend %s: %v", backendName(c.Backend), err))...)
	}
	if c.Nodes == 0 {
		sc.Cluster.Nodes = len(plan.Hosts)
		c = sc.Cluster
	}
	if d := sc.Workload.Driver; len(sys.Drivers) > 0 && !slices.Contains(sys.Drivers, d) {
		hint := sys.DriverHint
		if hint == "" {
			hint = fmt.Sprintf("system %s takes driver %s", sys.Name, strings.Join(sys.Drivers, ", "))
		}
		errs = append(errs, sc.Errorf([]any{"workload", "driver"}, "driver %s: %s", d, hint))
	}
	if sys.Check != nil {
		if err := sys.Check(sc, plan); err != nil {
			errs = append(errs, err)
		}
	}
	offer := OfferOf(backendName(c.Backend), backend, sys)
	for i, f := range sc.Faults {
		if fault.Supported(f.Type, c.Backend, c.System) != nil {
			continue // reported by fault.Validate
		}
		if err := offer.Check(f.Type); err != nil {
			errs = append(errs, sc.Errorf([]any{"faults", i, "type"}, "%v", err))
		}
	}
	return notes, errors.Join(errs...)
}

// checkTakes refuses the cluster keys of the user's own program (command,
// image, env) on a system whose descriptor does not take them.
func checkTakes(sc *scenario.Scenario, sys System) []error {
	c := sc.Cluster
	var errs []error
	for _, k := range []struct {
		key string
		set bool
	}{{TakesCommand, len(c.Command) > 0}, {TakesImage, c.Image != ""}, {TakesEnv, len(c.Env) > 0}} {
		if k.set && !slices.Contains(sys.Takes, k.key) {
			errs = append(errs, sc.Errorf([]any{"cluster", k.key}, "%s is only for %s (this is system: %s): remove it, or choose such a system", k.key, systemsTaking(k.key), sys.Name))
		}
	}
	return errs
}

// OfferOf is what backend b (registered as name) and system s give the
// injectors.
func OfferOf(name string, b Backend, s System) fault.Offer {
	return fault.Offer{Backend: name, BackendLevers: b.Levers(), System: s.Name, SystemLevers: s.Levers}
}

func backendName(name string) string {
	if name == "" {
		return DefaultBackend
	}
	return name
}
