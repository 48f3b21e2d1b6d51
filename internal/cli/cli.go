// Package cli is faultbench's command line (docs/cli.md): one file per
// subcommand, each turning flags into a config and calling one package.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Exit codes of docs/cli.md.
const (
	ExitOK        = 0
	ExitFailed    = 1 // the run or analysis failed
	ExitBadInput  = 2 // bad flags, bad YAML, unknown fault
	ExitThreshold = 3 // a threshold the scenario declares was missed
)

// ExitError carries an exit code with an error; the message is printed once.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// BadInput wraps err so that faultbench exits with ExitBadInput.
func BadInput(err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: ExitBadInput, Err: err}
}

// Failed wraps err so that faultbench exits with ExitFailed.
func Failed(err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: ExitFailed, Err: err}
}

// ErrReported is returned when the message was already printed (e.g. a
// threshold table); only the exit code remains to be set.
var ErrReported = errors.New("reported")

// ExitCode maps an error returned by Run to the process exit status.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitFailed
}

// Run executes faultbench with args (without the program name), writing to
// stdout and stderr. It prints a failing command's error as one line on
// stderr and returns it; ExitCode gives the status to exit with.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root := newRoot(stdout, stderr)
	profiles := addProfileFlags(root)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if perr := profiles.stop(); perr != nil {
		err = errors.Join(err, perr)
	}
	if err == nil {
		return nil
	}
	var ee *ExitError
	if !errors.As(err, &ee) {
		// cobra's own errors are flag and argument errors: bad input.
		err = BadInput(err)
	}
	if !errors.Is(err, ErrReported) {
		fmt.Fprintf(stderr, "faultbench: %v\n", err)
	}
	return err
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "faultbench",
		Short:         "Measure what users feel while parts of a clustered service fail",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	for _, add := range subcommands {
		root.AddCommand(add())
	}
	return root
}

// subcommands holds one constructor per subcommand; each subcommand's file
// registers itself in an init function, so files can be added independently.
var subcommands []func() *cobra.Command

func register(f func() *cobra.Command) { subcommands = append(subcommands, f) }
