package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/record"
)

type state uint8

const (
	appRunning state = iota // the application process exists (maybe stopped, maybe not yet ready)
	appDown                 // host up, no application: connection refused
	hostDown                // host down: connects time out
	stopped                 // the cluster was stopped
)

// nodeProc is one node's processes and state; mu guards everything below it.
type nodeProc struct {
	c    *Processes
	id   int
	addr string
	dir  string
	log  string

	mu         sync.Mutex
	state      state
	proc       *proc // non-nil iff state == appRunning
	paused     bool  // the process group is SIGSTOPped
	ready      bool  // the current process passed its readiness check
	reachable  bool  // last state reported by node.up / node.down
	blackholes []int // listening fds held while the host is down
}

// setReachable emits node.up or node.down when reachability changes.
func (n *nodeProc) setReachableLocked(up bool, detail string) {
	if up == n.reachable {
		return
	}
	n.reachable = up
	kind := "node.down"
	if up {
		kind = "node.up"
	}
	n.c.emit(record.Event{TS: n.c.spec.Clock.Now().Seconds(), Kind: kind, Node: n.id, Detail: detail})
}

// spawnLocked starts the node's process; the host must be up.
func (n *nodeProc) spawnLocked() (*proc, error) {
	if n.state == stopped {
		return nil, ErrStopped
	}
	logf, err := os.OpenFile(n.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child holds its own copy
	// stdout passes through the controller, which forwards system.* event
	// lines to the timeline; stderr goes straight to the log.
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	fwdLog, err := os.OpenFile(n.log, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := n.c.command(n)
	cmd.Stdout, cmd.Stderr = outW, logf
	err = n.c.spawner.start(cmd, n.c.contain.launcher(n.id, cmd), n.c.nodeCPUs)
	outW.Close() // the child holds its own copy
	if err != nil {
		outR.Close()
		fwdLog.Close()
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	go n.c.forwardOutput(n.id, outR, fwdLog)
	p := &proc{cmd: cmd, pgid: cmd.Process.Pid, done: make(chan struct{})}
	n.c.reaper.send('+', p.pgid)
	n.proc, n.state, n.paused, n.ready = p, appRunning, false, false
	go n.watch(p)
	return p, nil
}

// watch reaps p and records an exit nobody asked for as the node going down.
func (n *nodeProc) watch(p *proc) {
	p.err = p.cmd.Wait()
	close(p.done)
	n.c.reaper.send('-', p.pgid)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == p && !p.expected {
		p.signal(syscall.SIGKILL) // whatever the leader left in its group
		n.c.contain.killNode(n.id)
		n.proc, n.state, n.paused = nil, appDown, false
		n.setReachableLocked(false, fmt.Sprintf("exited: %v", p.err))
		n.unplannedExit(fmt.Sprint(p.err))
	}
}

// awaitReady polls the readiness check until it passes (node.up), the
// process exits, ReadyTimeout passes, or ctx ends.
func (n *nodeProc) awaitReady(ctx context.Context, p *proc, detail string) error {
	deadline := time.Now().Add(n.c.spec.ReadyTimeout)
	var last error
	for try := 0; ; try++ {
		select {
		case <-p.done:
			msg := fmt.Sprintf("node %d: %s exited before it was ready (%v)", n.id, p.cmd.Path, p.err)
			if line := lastLine(n.log); line != "" {
				msg += ": " + line
			}
			return errors.New(msg)
		case <-ctx.Done():
			return fmt.Errorf("node %d: %w", n.id, ctx.Err())
		default:
		}
		if last = n.c.ready(n.addr); last == nil {
			break
		}
		if time.Now().After(deadline) {
			return n.c.notReady(n.id, n.addr, n.c.spec.ReadyTimeout, last)
		}
		time.Sleep(min(25*time.Millisecond*time.Duration(try+1), 200*time.Millisecond))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == p {
		n.ready = true
		n.setReachableLocked(!n.paused, detail)
		n.readyAgain()
	}
	return nil
}

// endLocked ends the running process, if any; the host stays up.
func (n *nodeProc) endLocked(grace time.Duration) error {
	if n.proc == nil {
		return nil
	}
	if n.paused {
		// A frozen cgroup holds SIGTERM until thawed: continue the node
		// first so that a graceful stop is one (and its next start is not
		// born frozen).
		_ = n.c.contain.freezeNode(n.id, false)
	}
	err := n.proc.end(grace)
	n.c.contain.killNode(n.id) // daemons that left the process group
	n.proc, n.paused, n.ready = nil, false, false
	if n.state == appRunning {
		n.state = appDown
	}
	return err
}

// startLocked brings the host up if it is down and starts the application;
// node.up follows from a goroutine once it is ready.
func (n *nodeProc) startLocked(detail string) error {
	n.releaseLocked()
	p, err := n.spawnLocked()
	if err != nil {
		return err
	}
	go func() {
		if err := n.awaitReady(context.Background(), p, detail); err != nil {
			// The node stays down; say why, since no transition will —
			// unless we ended the process ourselves (a kill, Stop).
			n.mu.Lock()
			if !p.expected && n.state != stopped {
				n.c.emit(record.Event{TS: n.c.spec.Clock.Now().Seconds(), Kind: "node.down", Node: n.id, Detail: err.Error()})
			}
			n.mu.Unlock()
		}
	}()
	return nil
}

func (n *nodeProc) stop() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	err := n.endLocked(n.c.spec.StopGrace)
	n.releaseLocked()
	n.state = stopped
	return err
}

// do runs op on node id under its lock, refusing after Stop.
func (c *Processes) do(id int, op func(n *nodeProc) error) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.state == stopped {
		return ErrStopped
	}
	if err := op(n); err != nil {
		return fmt.Errorf("node %d: %w", id, err)
	}
	return nil
}

// KillApp kills node id's application (its whole process group) with
// SIGKILL; the host stays up, so clients are refused. No-op when the
// application is not running.
func (c *Processes) KillApp(id int) error {
	return c.do(id, func(n *nodeProc) error {
		if n.state != appRunning {
			return nil
		}
		err := n.endLocked(0)
		n.setReachableLocked(false, "application killed")
		return err
	})
}

// StartApp starts node id's application, first bringing its host up if it
// is down. No-op when the application already runs (stopped or not).
func (c *Processes) StartApp(id int) error {
	return c.do(id, func(n *nodeProc) error {
		if n.state == appRunning {
			return nil
		}
		detail := "application started"
		if n.state == hostDown {
			detail = "booted"
		}
		return n.startLocked(detail)
	})
}

// RestartApp ends node id's application gracefully (SIGTERM, SIGKILL after
// StopGrace, SIGCONT first if it was stopped) and starts it again; a downed
// host is brought up.
func (c *Processes) RestartApp(id int) error {
	return c.do(id, func(n *nodeProc) error {
		err := n.endLocked(n.c.spec.StopGrace)
		n.setReachableLocked(false, "restarting")
		return errors.Join(err, n.startLocked("restarted"))
	})
}

// Pause stops every process of node id: SIGSTOP to its process group, and
// the daemons that left it too (its cgroup frozen, or SIGSTOP to every
// process with its tag; containment.freezeNode). No-op when nothing runs or
// it is already stopped.
func (c *Processes) Pause(id int) error {
	return c.do(id, func(n *nodeProc) error {
		if n.proc == nil || n.paused {
			return nil
		}
		n.proc.signal(syscall.SIGSTOP)
		n.paused = true
		waitStopped(n.proc.pgid)
		err := n.c.contain.freezeNode(n.id, true)
		n.setReachableLocked(false, "processes stopped (SIGSTOP)")
		return err
	})
}

// Resume continues node id's processes (thaws its cgroup, SIGCONT). No-op
// when not stopped.
func (c *Processes) Resume(id int) error {
	return c.do(id, func(n *nodeProc) error {
		if n.proc == nil || !n.paused {
			return nil
		}
		err := n.c.contain.freezeNode(n.id, false)
		n.proc.signal(syscall.SIGCONT)
		n.paused = false
		if n.ready {
			n.setReachableLocked(true, "processes continued (SIGCONT)")
		}
		return err
	})
}

// HostDown takes node id's host down: its processes end (gracefully, as in a
// reboot, or at once with SIGKILL, as in a crash or power loss) and its
// address stops answering until StartApp or RestartApp boots it. No-op when
// the host is already down.
func (c *Processes) HostDown(id int, graceful bool) error {
	return c.do(id, func(n *nodeProc) error {
		if n.state == hostDown {
			return nil
		}
		grace := time.Duration(0)
		if graceful {
			grace = n.c.spec.StopGrace
		}
		// Every port listening on the node's own address is the node's
		// (press listens on a second, intra-cluster port): all of them
		// must stop answering, not only the service port.
		addrs := []string{n.addr}
		if n.proc != nil {
			addrs = listeningOn(n.addr, n.proc.pgid)
		}
		err := n.endLocked(grace)
		n.state = hostDown
		n.setReachableLocked(false, "host down")
		var failed []string
		for _, a := range addrs {
			fd, bhErr := blackhole(a)
			if bhErr != nil {
				failed = append(failed, bhErr.Error())
				continue
			}
			n.blackholes = append(n.blackholes, fd)
		}
		if len(failed) > 0 {
			// Clients will be refused rather than time out; say so, but the
			// node is down either way.
			n.c.emit(record.Event{TS: n.c.spec.Clock.Now().Seconds(), Kind: "node.down", Node: n.id,
				Detail: "host down, but some ports answer with refusals: " + strings.Join(failed, "; ")})
		}
		return err
	})
}

// Reboot takes node id's host down gracefully (as HostDown) and boots it
// boot later, when its services start again (node.up follows once ready).
// It returns once the host is down; after Stop the boot does nothing. The
// fault scheduler and operator do not use it: they time the boot on their
// own clock so that simulated-time tests see it.
func (c *Processes) Reboot(id int, boot time.Duration) error {
	if err := c.HostDown(id, true); err != nil {
		return err
	}
	time.AfterFunc(boot, func() { _ = c.StartApp(id) })
	return nil
}

// releaseLocked closes the listeners that made a downed host unreachable.
func (n *nodeProc) releaseLocked() {
	for _, fd := range n.blackholes {
		_ = syscall.Close(fd)
	}
	n.blackholes = nil
}

// Pids lists the process group of every node that has a process, for tests
// and diagnostics.
func (c *Processes) Pids() []int {
	var out []int
	for _, n := range c.nodes {
		n.mu.Lock()
		if n.proc != nil {
			out = append(out, n.proc.pgid)
		}
		n.mu.Unlock()
	}
	return out
}

// ReaperPid is the reaper's pid, for tests.
func (c *Processes) ReaperPid() int { return c.reaper.cmd.Process.Pid }

// waitStopped waits (at most a second) until the kernel reports pid stopped,
// so that a caller sees the fault in effect when Pause returns.
func waitStopped(pid int) {
	for range 100 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'T' {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
