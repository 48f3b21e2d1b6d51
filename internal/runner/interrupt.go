package runner

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// awaitLoad waits for the load generator, which reports on done when every
// arrival up to the end is recorded. When ctx ends first (the user's
// interrupt) the order matters for the record: the faults are
// reverted first, so that a hung or stopped node answers the attempts
// waiting on it; then those attempts are awaited, bounded by their own
// deadlines; a second interrupt (SIGINT or SIGTERM) ends the wait at once,
// and abandon records whatever is still unfinished as cut short. It
// returns the generator's error and when the run was cut (the clock at the
// interrupt), or cutS < 0 when ctx did not end the run.
func awaitLoad(ctx context.Context, done <-chan error, revertFaults, abandon func(), now func() time.Duration, logf func(string, ...any)) (genErr error, cutS float64) {
	select {
	case err := <-done:
		return err, -1
	case <-ctx.Done():
	}
	cutS = now().Seconds()
	revertFaults()
	second := make(chan os.Signal, 1)
	defer notifyAgain(second)()
	logf("interrupted: faults reverted; waiting for the requests in flight (interrupt again to stop waiting)")
	select {
	case err := <-done:
		return err, cutS
	case <-second:
		logf("interrupted again: requests still in flight are recorded as cut short")
		abandon()
		return <-done, cutS
	}
}

// notifyAgain relays the next SIGINT, SIGTERM or SIGHUP (the signals that
// stop a run, cmd/faultbench) to ch until the returned function is called;
// a variable so tests can send the second interrupt.
var notifyAgain = func(ch chan<- os.Signal) (stop func()) {
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	return func() { signal.Stop(ch) }
}
