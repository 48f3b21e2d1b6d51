package local

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"syscall"
	"testing"
	"time"
)

// exitLog records what an ExitObserver hears.
type exitLog struct {
	mu  sync.Mutex
	got []string
}

func (l *exitLog) Exited(node int, cause string) { l.add(fmt.Sprintf("exited %d: %s", node, cause)) }
func (l *exitLog) Ready(node int)                { l.add(fmt.Sprintf("ready %d", node)) }
func (l *exitLog) add(s string)                  { l.mu.Lock(); l.got = append(l.got, s); l.mu.Unlock() }

// await waits (bounded) until the log holds n entries and returns them.
func (l *exitLog) await(t *testing.T, n int) []string {
	t.Helper()
	for range 500 {
		l.mu.Lock()
		got := append([]string(nil), l.got...)
		l.mu.Unlock()
		if len(got) >= n {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("observer heard %d things, want %d", len(l.got), n)
	return nil
}

// TestExitObserverHearsOnlyUnplannedExits: a SIGKILL from outside is an
// unplanned exit (also one that happened before anyone watched, if the
// node is still down), a kill by the cluster's own lever is not, and a
// start, by whoever, is heard as ready.
func TestExitObserverHearsOnlyUnplannedExits(t *testing.T) {
	var ev events
	c, err := Start(context.Background(), testSpec(t.TempDir()), ev.emit)
	must(t, err)
	defer c.Stop()
	pids := c.Pids()

	// Node 1 dies before anyone watches; node 2 dies and comes back.
	mark := ev.len()
	must(t, syscall.Kill(pids[0], syscall.SIGKILL))
	mark = ev.waitFor(t, mark, "node.down", 1)
	must(t, syscall.Kill(pids[1], syscall.SIGKILL))
	mark = ev.waitFor(t, mark, "node.down", 2)
	must(t, c.StartApp(2))
	mark = ev.waitFor(t, mark, "node.up", 2)

	var log exitLog
	c.WatchExits(&log)
	if got := log.await(t, 1); !reflect.DeepEqual(got, []string{"exited 1: signal: killed"}) {
		t.Fatalf("before watching: heard %q, want node 1's exit only", got)
	}
	must(t, c.StartApp(1))
	ev.waitFor(t, mark, "node.up", 1)
	must(t, c.KillApp(2)) // the cluster's own lever: planned
	must(t, syscall.Kill(c.Pids()[0], syscall.SIGKILL))
	want := []string{"exited 1: signal: killed", "ready 1", "exited 1: signal: killed"}
	if got := log.await(t, 3); !reflect.DeepEqual(got, want) {
		t.Errorf("heard %q, want %q", got, want)
	}
	must(t, c.Stop()) // the run's stop: planned
	if got := log.await(t, 3); len(got) != 3 {
		t.Errorf("heard %q after Stop", got[3:])
	}
}
