package docker

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/kernelfault"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/testbed"
)

// The levers of an attached container. app-crash is a crash, not an
// order: SIGKILL from the host to the container's main process, so the
// engine applies the container's restart policy as it would to any crash
// (an engine kill, `docker kill`, is an order it never undoes). node-crash
// and node-reboot take the container away through the engine, which then
// leaves it down, as a host that died takes its engine with it.

// hostKill sends SIGKILL to a process of the host's pid namespace; tests
// replace it, as they replace removerEngine.
var hostKill = func(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// do runs op on node id under its lock with a bounded context, refusing
// after Stop.
func (a *Attached) do(id int, op func(ctx context.Context, n *attNode) error) error {
	if id < 1 || id > len(a.nodes) {
		return fmt.Errorf("no node %d (cluster has %d)", id, len(a.nodes))
	}
	n := a.nodes[id-1]
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return testbed.ErrStopped
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := op(ctx, n); err != nil {
		return fmt.Errorf("node %d (container %s): %w", id, n.Name, err)
	}
	return nil
}

// waitState polls the container until want holds (bounded: 10 s).
func (a *Attached) waitState(ctx context.Context, id string, want func(ContainerInfo) bool) (ContainerInfo, error) {
	c := &Containers{eng: a.eng}
	return c.waitState(ctx, id, want)
}

// unpauseLocked thaws a container the run paused: a frozen process
// cannot die, and the engine refuses to stop a paused container.
func (n *attNode) unpauseLocked(ctx context.Context) {
	if n.paused {
		_ = n.c.eng.ContainerUnpause(ctx, n.ID)
		n.paused = false
	}
}

func (n *attNode) policyClause() string {
	if restarts(n.Restart) {
		return fmt.Sprintf("restart policy %s: the engine restarts it by itself", n.Restart)
	}
	return fmt.Sprintf("restart policy %s: it stays down until started", n.Restart)
}

// KillApp crashes node id: SIGKILL from the host to the container's main
// process. The engine sees a crash and applies the restart policy; the
// watch loop records the restart as the engine's.
func (a *Attached) KillApp(id int) error {
	return a.do(id, func(ctx context.Context, n *attNode) error {
		if !n.running {
			return nil
		}
		t0 := time.Now()
		n.unpauseLocked(ctx)
		info, err := a.eng.ContainerInspect(ctx, n.ID)
		if err != nil {
			return fmt.Errorf("app-crash: %w", err)
		}
		if !info.Up() || info.Pid <= 0 {
			return fmt.Errorf("app-crash: container is %s, not running", info.Status)
		}
		pid := info.Pid
		if pid <= 1 {
			return fmt.Errorf("app-crash: the engine names pid %d as the container's main process: refusing to kill it", pid)
		}
		n.restarts = info.RestartCount
		if err := hostKill(pid); err != nil {
			return fmt.Errorf("app-crash: kill -9 %d (the container's main process): %w", pid, err)
		}
		after, err := a.waitState(ctx, n.ID, func(i ContainerInfo) bool { return !i.Up() || i.Pid != pid })
		if err != nil {
			return fmt.Errorf("app-crash: %w", err)
		}
		n.running = false
		state := fmt.Sprintf("%s (exit %d)", after.Status, after.ExitCode)
		if after.Up() {
			state = "restarted by the engine already"
		}
		n.event("fault.effective", fmt.Sprintf("mechanism host-kill: SIGKILL from the host to container %s's main process (pid %d), as a crash: %s after %s; %s",
			n.Name, pid, state, ms(time.Since(t0)), n.policyClause()))
		n.setReachableLocked(false, "container's main process killed")
		return nil
	})
}

// StartApp starts node id's container if it is down (docker start). A
// container the engine restarts (or has restarted) by its restart policy
// is waited for and recorded as the engine's restart, not as this call's:
// the operator, whose repair calls StartApp, then finds nothing left to
// repair.
func (a *Attached) StartApp(id int) error {
	who := ""
	err := a.do(id, func(ctx context.Context, n *attNode) error {
		if n.running {
			return nil
		}
		t0 := time.Now()
		info, err := a.eng.ContainerInspect(ctx, n.ID)
		if err != nil {
			return fmt.Errorf("start: %w", err)
		}
		if info.Status == "restarting" {
			if info, err = a.waitState(ctx, n.ID, func(i ContainerInfo) bool { return i.Status != "restarting" }); err != nil {
				return fmt.Errorf("start: %w", err)
			}
		}
		if info.Up() && info.RestartCount > n.restarts {
			who = n.restartedLocked(info)
			return nil
		}
		mech := "found running (started outside the run)"
		if !info.Up() {
			if err := a.eng.ContainerStart(ctx, n.ID); err != nil {
				return fmt.Errorf("start: docker start: %w", err)
			}
			if info, err = a.eng.ContainerInspect(ctx, n.ID); err != nil {
				return fmt.Errorf("start: %w", err)
			}
			mech = "started"
		}
		n.running, n.hostDown, n.restarts = true, false, info.RestartCount
		n.gen++
		n.event("fault.reverted", fmt.Sprintf("mechanism docker-start: container %s %s after %s; serving once ready (node.up)", n.Name, mech, ms(time.Since(t0))))
		go n.awaitUp("started")
		return nil
	})
	if who != "" {
		if obs := a.restartObserver(); obs != nil {
			obs.Restarted(id, who)
		}
	}
	return err
}

// awaitUp waits for a (re)started node to answer; a node that does not
// is recorded as down.
func (n *attNode) awaitUp(detail string) {
	if err := n.awaitReady(context.Background(), detail); err != nil {
		n.mu.Lock()
		if !n.stopped {
			n.event("node.down", err.Error())
		}
		n.mu.Unlock()
	}
}

// RestartApp restarts node id's container through the engine (SIGTERM,
// SIGKILL after StopGrace, start).
func (a *Attached) RestartApp(id int) error {
	return a.do(id, func(ctx context.Context, n *attNode) error {
		t0 := time.Now()
		n.unpauseLocked(ctx)
		n.setReachableLocked(false, "restarting")
		if err := a.eng.ContainerRestart(ctx, n.ID, a.spec.StopGrace); err != nil {
			return fmt.Errorf("restart: docker restart: %w", err)
		}
		info, err := a.eng.ContainerInspect(ctx, n.ID)
		if err != nil {
			return fmt.Errorf("restart: %w", err)
		}
		n.running, n.hostDown, n.restarts = info.Up(), false, info.RestartCount
		n.gen++
		n.event("fault.effective", fmt.Sprintf("mechanism docker-restart: container %s restarted after %s", n.Name, ms(time.Since(t0))))
		go n.awaitUp("restarted")
		return nil
	})
}

// Pause freezes node id's container (docker pause: the cgroup freezer).
func (a *Attached) Pause(id int) error {
	return a.do(id, func(ctx context.Context, n *attNode) error {
		if n.paused || !n.running {
			return nil
		}
		t0 := time.Now()
		if err := pauseRetrying(ctx, a.eng, n.ID); err != nil {
			return fmt.Errorf("docker pause: %w", err)
		}
		info, err := a.waitState(ctx, n.ID, func(i ContainerInfo) bool { return i.Paused })
		if err != nil {
			return fmt.Errorf("docker pause: %w", err)
		}
		n.paused = true
		n.event("fault.effective", fmt.Sprintf("mechanism docker-pause: container %s %s after %s (cgroup freezer)", n.Name, info.Status, ms(time.Since(t0))))
		n.setReachableLocked(false, "container paused")
		return nil
	})
}

// Resume unpauses node id's container.
func (a *Attached) Resume(id int) error {
	return a.do(id, func(ctx context.Context, n *attNode) error {
		if !n.paused {
			return nil
		}
		t0 := time.Now()
		if err := a.eng.ContainerUnpause(ctx, n.ID); err != nil {
			return fmt.Errorf("docker unpause: %w", err)
		}
		info, err := a.waitState(ctx, n.ID, func(i ContainerInfo) bool { return !i.Paused })
		if err != nil {
			return fmt.Errorf("docker unpause: %w", err)
		}
		n.paused = false
		n.event("fault.reverted", fmt.Sprintf("mechanism docker-unpause: container %s %s after %s", n.Name, info.Status, ms(time.Since(t0))))
		if n.running {
			n.setReachableLocked(true, "container unpaused")
		}
		return nil
	})
}

// HostDown kills (or, graceful, stops) node id's container through the
// engine, which then leaves it down whatever its restart policy, until
// StartApp.
func (a *Attached) HostDown(id int, graceful bool) error {
	return a.do(id, func(ctx context.Context, n *attNode) error {
		if !n.running {
			return nil
		}
		t0 := time.Now()
		n.unpauseLocked(ctx)
		mech := "docker-kill"
		var err error
		if graceful {
			mech = "docker-stop"
			err = a.eng.ContainerStop(ctx, n.ID, a.spec.StopGrace)
		} else {
			err = a.eng.ContainerKill(ctx, n.ID, "SIGKILL")
		}
		if err != nil && !isNotRunning(err) {
			return fmt.Errorf("host down: %s: %w", mech, err)
		}
		info, err := a.waitState(ctx, n.ID, notRunning)
		if err != nil {
			return fmt.Errorf("host down: %w", err)
		}
		n.running, n.hostDown, n.restarts = false, true, info.RestartCount
		n.setReachableLocked(false, "host down")
		n.event("fault.effective", fmt.Sprintf("mechanism %s: container %s %s after %s; the engine does not restart a container it was told to end",
			mech, n.Name, info.Status, ms(time.Since(t0))))
		return nil
	})
}

// Filter installs an nft table in node id's container's namespace (see
// the owned containers' Filter).
func (a *Attached) Filter(l kernelfault.Label, id int, b kernelfault.Block) (kernelfault.Undo, error) {
	return filter(a, a.guard, l, id, b)
}

// Shape caps node id's outgoing traffic to its peers with a tbf.
func (a *Attached) Shape(l kernelfault.Label, id int, p kernelfault.Peers, bytesPerSec int64) (kernelfault.Undo, error) {
	return shape(a, a.guard, l, id, p, bytesPerSec)
}

func (a *Attached) kevent(l kernelfault.Label, node int, kind, detail string) {
	a.emit(record.Event{TS: a.now(), Kind: kind, Node: node, Fault: l.Fault, ID: l.ID, Detail: detail})
}

func (a *Attached) nsOf(id int) (string, string, error) {
	pid, short, err := a.appPid(id)
	if err != nil {
		return "", "", err
	}
	return fmt.Sprintf("/proc/%d/ns/net", pid), short, nil
}

// appPid is the pid of node id's container and its short id; an attached
// container is its own namespace's holder and its application at once.
func (a *Attached) appPid(id int) (int, string, error) {
	if id < 1 || id > len(a.nodes) {
		return 0, "", fmt.Errorf("no node %d (cluster has %d)", id, len(a.nodes))
	}
	n := a.nodes[id-1]
	info, err := a.inspect(n.ID)
	if err != nil {
		return 0, "", err
	}
	if !info.Up() || info.Pid <= 0 {
		return 0, "", fmt.Errorf("node %d is down (container %s %s)", id, n.Name, info.Status)
	}
	return info.Pid, shortID(n.ID), nil
}

func (a *Attached) tableName() string {
	return fmt.Sprintf("%s%d", runTable(a.spec.RunID), seq.Add(1))
}

// peerAddrs: the users' side of an attached container is the host (its
// network's gateway: published ports and the controller come from there)
// and the entry point's containers (a load balancer); its peers are the
// other nodes.
func (a *Attached) peerAddrs(id int, p kernelfault.Peers) []string {
	n := a.nodes[id-1]
	var out []string
	if p.Client || p.All {
		if n.Gateway.IsValid() {
			out = append(out, n.Gateway.String())
		}
		if p.Client {
			for _, e := range a.att.entry {
				if e.IP.IsValid() && e.IP != n.IP {
					out = append(out, e.IP.String())
				}
			}
		}
		return out
	}
	for _, m := range p.Nodes {
		if m != id && m >= 1 && m <= len(a.nodes) && a.nodes[m-1].IP.IsValid() {
			out = append(out, a.nodes[m-1].IP.String())
		}
	}
	return out
}

var addrDevRE = regexp.MustCompile(`^\d+:\s+([^\s@]+)(?:@\S+)?\s+inet\s+([0-9.]+)/`)

// device is the interface that holds node id's address in namespace ns.
func (a *Attached) device(id int, ns string) (string, error) {
	out, err := inNS(ns, "", "ip", "-o", "-4", "addr", "show")
	if err != nil {
		return "", err
	}
	want := a.nodes[id-1].IP.String()
	if dev, ok := deviceOf(out, want); ok {
		return dev, nil
	}
	return "", fmt.Errorf("no interface holds %s in %s", want, ns)
}

// deviceOf finds the interface holding ip in `ip -o -4 addr show`'s output.
func deviceOf(out, ip string) (string, bool) {
	for _, line := range strings.Split(out, "\n") {
		if m := addrDevRE.FindStringSubmatch(line); m != nil && m[2] == ip {
			return m[1], true
		}
	}
	return "", false
}

// pauseRetrying pauses a container, trying again (three times in all)
// when the freezer gave up: runc thaws what it froze and answers "unable
// to freeze" when a busy container's tasks do not all stop in time, which
// a loaded machine sees.
func pauseRetrying(ctx context.Context, eng Engine, id string) error {
	var err error
	for range 3 {
		if err = eng.ContainerPause(ctx, id); err == nil || !strings.Contains(err.Error(), "unable to freeze") {
			return err
		}
	}
	return err
}
