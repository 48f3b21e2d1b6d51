package runner

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"
)

// steps records the order of what awaitLoad did.
type steps struct {
	mu  sync.Mutex
	log []string
}

func (s *steps) add(step string) {
	s.mu.Lock()
	s.log = append(s.log, step)
	s.mu.Unlock()
}

func (s *steps) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := ""
	for _, l := range s.log {
		out += l + ";"
	}
	return out
}

func noLog(string, ...any) {}

func at(d time.Duration) func() time.Duration { return func() time.Duration { return d } }

// A run that ends by itself: nothing is reverted early, nothing abandoned.
func TestAwaitLoadCompleteRun(t *testing.T) {
	var s steps
	done := make(chan error, 1)
	done <- nil
	err, cut := awaitLoad(context.Background(), done, func() { s.add("revert") }, func() { s.add("abandon") }, at(time.Second), noLog)
	if err != nil || cut >= 0 || s.String() != "" {
		t.Fatalf("err %v, cut %v, steps %q; want nil, < 0, none", err, cut, s.String())
	}
}

// Interrupted: the faults are reverted before the wait for the attempts in
// flight (the generator finishes only after the revert, as attempts on a
// hung node do), and the cut is where the interrupt came.
func TestAwaitLoadRevertsBeforeWaiting(t *testing.T) {
	var s steps
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	revert := func() {
		s.add("revert")
		s.add("attempts answered")
		done <- context.Canceled
	}
	err, cut := awaitLoad(ctx, done, revert, func() { s.add("abandon") }, at(2500*time.Millisecond), noLog)
	if !errors.Is(err, context.Canceled) || cut != 2.5 || s.String() != "revert;attempts answered;" {
		t.Fatalf("err %v, cut %v, steps %q; want the revert first, no abandon, cut 2.5", err, cut, s.String())
	}
}

// A second interrupt while attempts are still awaited cuts them short.
func TestAwaitLoadSecondInterruptAbandons(t *testing.T) {
	relay := make(chan chan<- os.Signal, 1)
	old := notifyAgain
	notifyAgain = func(ch chan<- os.Signal) func() { relay <- ch; return func() {} }
	defer func() { notifyAgain = old }()

	var s steps
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	go func() { (<-relay) <- os.Interrupt }()
	abandon := func() {
		s.add("abandon")
		done <- context.Canceled
	}
	err, _ := awaitLoad(ctx, done, func() { s.add("revert") }, abandon, at(time.Second), noLog)
	if !errors.Is(err, context.Canceled) || s.String() != "revert;abandon;" {
		t.Fatalf("err %v, steps %q; want revert then abandon", err, s.String())
	}
}
