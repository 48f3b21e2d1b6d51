// Command faultbench measures what the users of a clustered online service
// feel while parts of it fail. See README.md and docs/.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/faultbench/faultbench/internal/cli"
)

// stopSignals end a command the way Ctrl-C does: a run reverts its faults,
// stops its nodes and keeps its record. SIGTERM is what kill, systemd and
// container runtimes send; SIGHUP is what a closed terminal or a dropped
// ssh session sends.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

func main() {
	// A reader of our output that went away (a pipe to a closed terminal's
	// tee) must not kill a run midway: with SIGPIPE notified, writes fail
	// with EPIPE instead. (Notify, not Ignore: an ignored signal stays
	// ignored in the node processes we exec, a handled one does not.)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	err := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.ExitCode(err))
}
