package workload

import (
	"context"
	"time"
)

// A sleeper waits until an instant on behalf of one client's scheduling
// goroutine. Go's timers wake late by up to a millisecond when the process
// is otherwise idle (the runtime parks in epoll with a timeout in whole
// milliseconds), which would make the emulator's sends lag their schedule
// at low rates; sleeper_linux.go does better where it can.
type sleeper interface {
	// until blocks until when or until ctx is done, and reports which:
	// false means ctx ended the wait.
	until(ctx context.Context, when time.Time) bool
	close()
}

// timerSleeper uses a Go timer: precise when the process is busy, up to a
// millisecond late when it is idle.
type timerSleeper struct{ t *time.Timer }

func newTimerSleeper() *timerSleeper {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &timerSleeper{t: t}
}

func (s *timerSleeper) until(ctx context.Context, when time.Time) bool {
	s.t.Reset(time.Until(when))
	select {
	case <-s.t.C:
		return true
	case <-ctx.Done():
		s.t.Stop()
		return false
	}
}

func (s *timerSleeper) close() { s.t.Stop() }
