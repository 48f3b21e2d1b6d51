package docker

import (
	"context"
	"fmt"
	"time"
)

// change is what the engine did to an attached container that the run
// did not do, found by comparing the engine's state with the run's.
type change int

const (
	unchanged           change = iota
	exitedOnItsOwn             // it ran; now it does not, and the run did not end it
	restartedByEngine          // the restart count went up and it runs: the restart policy
	crashedAndRestarted        // both between two looks: it ran, the count went up
	startedElsewhere           // it was down; someone else started it (docker start)
)

// observe compares the engine's state of a container with what the run
// believes: running (the run started it or found it so, and did not end
// it since) and restarts (the engine's restart count when the run last
// looked or acted). It is a pure function, so the cases are unit tests.
func observe(running bool, restarts int, info ContainerInfo) change {
	up := info.Up()
	switch {
	case info.RestartCount > restarts && up && running:
		return crashedAndRestarted
	case info.RestartCount > restarts && up:
		return restartedByEngine
	case running && !up:
		return exitedOnItsOwn
	case !running && up && info.RestartCount == restarts:
		return startedElsewhere
	}
	return unchanged
}

// watchEvery is how often the watch loop looks at the attached
// containers: an engine restart is stamped within this of when it was
// seen (its own timing, from the engine's clock, is in the event).
var watchEvery = 100 * time.Millisecond

// watch looks at every attached container every watchEvery until Stop and
// records what the engine did by itself.
func (a *Attached) watch() {
	defer close(a.watchDone)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-a.stopWatch; cancel() }()
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-a.stopWatch:
			return
		case <-t.C:
		}
		for _, n := range a.nodes {
			n.look(ctx)
		}
	}
}

// look records one change of node n, if any: an exit nobody in the run
// caused is an unplanned fault (the ExitObserver's), a restart by the
// engine is the recovery of the crash before it (system.docker.restart,
// then the RestartObserver clears the faults it healed), and the node is
// up once it answers.
//
// It holds the node's lock across the inspect, so that a lever acting
// meanwhile (a kill, a start) is never compared with a state from before
// it.
func (n *attNode) look(ctx context.Context) {
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		return
	}
	info, err := n.c.eng.ContainerInspect(ctx, n.ID)
	if IsNotFound(err) {
		info, err = ContainerInfo{Status: "removed"}, nil
	}
	if err != nil {
		n.mu.Unlock()
		return // the engine is slow or the run stops: look again later
	}
	who := ""
	switch observe(n.running, n.restarts, info) {
	case exitedOnItsOwn:
		n.exitedLocked(info)
	case crashedAndRestarted:
		n.exitedLocked(info)
		who = n.restartedLocked(info)
	case restartedByEngine:
		who = n.restartedLocked(info)
	case startedElsewhere:
		n.running, n.hostDown, n.restarts = true, false, info.RestartCount
		n.gen++
		n.event("system.docker.start", fmt.Sprintf("container %s started by someone outside the run", n.Name))
		go n.awaitUp("started outside the run")
	}
	n.mu.Unlock()
	if who == "" {
		return
	}
	if obs := n.c.restartObserver(); obs != nil {
		obs.Restarted(n.id, who)
	}
}

func (n *attNode) exitedLocked(info ContainerInfo) {
	n.running = false
	cause := fmt.Sprintf("container %s %s with code %d", n.Name, info.Status, info.ExitCode)
	if info.OOMKilled {
		cause += ", killed by the kernel for lack of memory"
	}
	if info.Status == "removed" {
		cause = fmt.Sprintf("container %s removed", n.Name)
	}
	n.setReachableLocked(false, cause)
	if obs := n.c.exitObserver(); obs != nil {
		obs.Exited(n.id, cause)
	}
}

// restartedLocked records the engine's restart and returns who made it.
func (n *attNode) restartedLocked(info ContainerInfo) string {
	after := ""
	if !info.FinishedAt.IsZero() && info.StartedAt.After(info.FinishedAt) {
		after = fmt.Sprintf(" %s after it exited", ms(info.StartedAt.Sub(info.FinishedAt)))
	}
	n.running, n.hostDown, n.restarts = true, false, info.RestartCount
	n.gen++
	n.event("system.docker.restart", fmt.Sprintf("the engine restarted container %s%s (restart policy %s, restart count %d): the engine's repair, not the operator's",
		n.Name, after, n.Restart, info.RestartCount))
	go n.awaitUp(fmt.Sprintf("restarted by the engine (restart policy %s)", n.Restart))
	return fmt.Sprintf("the engine (restart policy %s)", n.Restart)
}
