package node

import (
	"bufio"
	"context"
	"io"
	"os"
	"strconv"
	"syscall"
)

// ReaperKind is the internal node kind the testbed starts once per cluster
// to guarantee no orphans: it reads "+PGID" and "-PGID" lines on stdin and,
// when stdin reaches EOF (the controller exited or was SIGKILLed), kills
// every process group still listed and exits. Pdeathsig alone only reaches
// the testbed's direct children; the reaper also reaches their children
// (e.g. the processes a user's `command` forks) through the process group.
const ReaperKind = "reaper"

func init() {
	Register(ReaperKind, func(ctx context.Context, cfg Config) error {
		return Reap(ctx, stdin)
	})
}

// stdin is a variable so the reaper can be tested in-process.
var stdin io.Reader = os.Stdin

// Reap runs the reaper protocol on r until EOF or ctx ends, then SIGKILLs
// every listed process group. It never returns an error for a bad line: a
// reaper that dies early would leave orphans.
func Reap(ctx context.Context, r io.Reader) error {
	groups := map[int]bool{}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	defer func() {
		for pgid := range groups {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case line, ok := <-lines:
			if !ok {
				return nil
			}
			if len(line) < 2 {
				continue
			}
			pgid, err := strconv.Atoi(line[1:])
			if err != nil || pgid <= 1 {
				continue
			}
			switch line[0] {
			case '+':
				groups[pgid] = true
			case '-':
				delete(groups, pgid)
			}
		}
	}
}
