package workload

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// timerfdSleeper waits on a Linux timerfd through the runtime's poller, with
// a read deadline at the same instant. The timerfd wakes an idle process
// within microseconds (the poller's own timeout has millisecond steps); the
// deadline, a runtime timer, is checked at every scheduling point, so it is
// the one that fires first when the process is busy. Either way the wait
// parks only the goroutine, not a thread.
type timerfdSleeper struct {
	f    *os.File
	raw  syscall.RawConn
	buf  [8]byte
	stop func() bool
	// wait is s.readExpiry, bound once; first and readErr are its state.
	wait    func(fd uintptr) bool
	first   bool
	readErr error
}

func newSleeper(ctx context.Context) sleeper {
	const tfdNonblock, tfdCloexec = syscall.O_NONBLOCK, syscall.O_CLOEXEC
	fd, _, errno := syscall.Syscall(syscall.SYS_TIMERFD_CREATE, uintptr(1) /* CLOCK_MONOTONIC */, tfdNonblock|tfdCloexec, 0)
	if errno != 0 {
		return newTimerSleeper()
	}
	s := &timerfdSleeper{f: os.NewFile(fd, "timerfd")}
	raw, err := s.f.SyscallConn()
	if err != nil {
		s.f.Close()
		return newTimerSleeper()
	}
	s.raw = raw
	s.wait = s.readExpiry
	// Wake a blocked wait when the run is stopped.
	s.stop = context.AfterFunc(ctx, func() { s.f.SetReadDeadline(aLongTimeAgo) })
	return s
}

type itimerspec struct{ interval, value syscall.Timespec }

func (s *timerfdSleeper) until(ctx context.Context, when time.Time) bool {
	wait := time.Until(when)
	if wait <= 0 {
		return ctx.Err() == nil
	}
	spec := itimerspec{value: syscall.NsecToTimespec(int64(wait))}
	if err := s.arm(&spec); err != nil {
		return newTimerSleeperOnce(ctx, when)
	}
	s.f.SetReadDeadline(when)
	if ctx.Err() != nil { // stopped before the deadline above replaced the stop's own
		return false
	}
	// Skip the first read only when the timer is comfortably far off: the
	// poller's readiness is reset when the read begins, so an expiry in
	// between would be noticed only by the deadline.
	s.first, s.readErr = wait > skipReadAfter, nil
	err := s.raw.Read(s.wait)
	if err == nil {
		err = s.readErr
	}
	if ctx.Err() != nil {
		return false
	}
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		return newTimerSleeperOnce(ctx, when)
	}
	return true
}

// skipReadAfter is the shortest wait for which readExpiry goes to the
// poller before reading.
const skipReadAfter = 50 * time.Microsecond

// readExpiry is the timerfd's read, through the poller. A timer just armed
// for the future has not expired (arming resets its count), so when first
// is set the first call does not try: it waits for the poller, saving the
// read that would only find nothing (EAGAIN), a system call per arrival.
func (s *timerfdSleeper) readExpiry(fd uintptr) bool {
	if s.first {
		s.first = false
		return false
	}
	for {
		_, err := syscall.Read(int(fd), s.buf[:])
		switch err {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		s.readErr = err
		return true
	}
}

func (s *timerfdSleeper) arm(spec *itimerspec) error {
	raw, err := s.f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	err = raw.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall6(syscall.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(spec)), 0, 0, 0)
	})
	if err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

func (s *timerfdSleeper) close() {
	s.stop()
	s.f.Close()
}

// newTimerSleeperOnce is the fallback when the timerfd misbehaves.
func newTimerSleeperOnce(ctx context.Context, when time.Time) bool {
	t := newTimerSleeper()
	defer t.close()
	return t.until(ctx, when)
}
