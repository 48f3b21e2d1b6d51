package testbed

import (
	"errors"

	"github.com/faultbench/faultbench/internal/scenario"
)

// The two systems that need no package of their own: the static page
// server every node kind of this binary can stand in for, and the user's
// own command (only black-box faults apply: those of the backend's levers).
func init() {
	RegisterSystem(System{Name: DefaultSystem, NodeKinds: []string{"static"}, PageSet: true})
	RegisterSystem(System{Name: CommandSystem, Takes: []string{TakesCommand}, Check: checkCommand})
}

// checkCommand: the user's own command needs the program to start and the
// port its nodes listen on.
func checkCommand(sc *scenario.Scenario, _ Plan) error {
	c := sc.Cluster
	var errs []error
	if len(c.Command) == 0 {
		errs = append(errs, sc.Errorf([]any{"cluster"}, "system: command needs command: [program, args...] ({addr} {port} {node} {dir} are substituted per node; docs/scenario.md)"))
	}
	if c.Port <= 0 {
		errs = append(errs, sc.Errorf([]any{"cluster", "port"}, "system: command needs the port its nodes listen on (1-65535)"))
	}
	return errors.Join(errs...)
}
