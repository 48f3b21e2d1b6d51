package docker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/testbed"
)

// do runs op on node id under its lock with a bounded context, refusing
// after Stop.
func (c *Containers) do(id int, op func(ctx context.Context, n *ctrNode) error) error {
	if id < 1 || id > len(c.nodes) {
		return fmt.Errorf("no node %d (cluster has %d)", id, len(c.nodes))
	}
	n := c.nodes[id-1]
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return testbed.ErrStopped
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := op(ctx, n); err != nil {
		return fmt.Errorf("node %d: %w", id, err)
	}
	return nil
}

func (n *ctrNode) event(kind, detail string) {
	n.c.emit(record.Event{TS: n.c.now(), Kind: kind, Node: n.id, Detail: detail})
}

// waitState polls the container until want holds (bounded: 10 s).
func (c *Containers) waitState(ctx context.Context, id string, want func(ContainerInfo) bool) (ContainerInfo, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := c.eng.ContainerInspect(ctx, id)
		if err != nil {
			return info, err
		}
		if want(info) {
			return info, nil
		}
		if time.Now().After(deadline) {
			return info, fmt.Errorf("container %s still %s after 10s", shortID(id), info.Status)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func notRunning(i ContainerInfo) bool { return !i.Running }

// KillApp kills node id's application container with SIGKILL through the
// engine; the holder keeps the address, so clients are refused at once,
// as by a host whose server died.
func (c *Containers) KillApp(id int) error {
	return c.do(id, func(ctx context.Context, n *ctrNode) error {
		if !n.appUp {
			return nil
		}
		t0 := time.Now()
		n.unpauseLocked(ctx)
		if err := c.eng.ContainerKill(ctx, n.app, "SIGKILL"); err != nil {
			return fmt.Errorf("app-crash: docker kill: %w", err)
		}
		info, err := c.waitState(ctx, n.app, notRunning)
		if err != nil {
			return fmt.Errorf("app-crash: %w", err)
		}
		n.appUp, n.paused = false, false
		n.event("fault.effective", fmt.Sprintf("mechanism docker-kill: engine SIGKILL, container %s %s (exit %d) after %s; holder %s keeps %s",
			shortID(n.app), info.Status, info.ExitCode, ms(time.Since(t0)), shortID(n.holder), n.ip))
		n.setReachableLocked(false, "application container killed")
		return nil
	})
}

// StartApp starts node id's application container, booting a downed host
// (its holder, and with it the address) first.
func (c *Containers) StartApp(id int) error {
	return c.do(id, func(ctx context.Context, n *ctrNode) error {
		if n.appUp {
			return nil
		}
		detail := "application container started"
		if !n.hostUp {
			t0 := time.Now()
			if err := c.eng.ContainerStart(ctx, n.holder); err != nil {
				return fmt.Errorf("boot: start holder: %w", err)
			}
			n.hostUp = true
			detail = "booted"
			n.event("fault.reverted", fmt.Sprintf("mechanism docker-start: holder %s started after %s, address %s back; application starting",
				shortID(n.holder), ms(time.Since(t0)), n.ip))
		}
		t0 := time.Now()
		if err := n.startAndWatch(ctx, detail); err != nil {
			return err
		}
		n.event("fault.reverted", fmt.Sprintf("mechanism docker-start: app container %s started after %s; serving once ready (node.up)", shortID(n.app), ms(time.Since(t0))))
		return nil
	})
}

// startAndWatch starts the app (lock held) and waits for readiness in the
// background, recording a failure as node.down.
func (n *ctrNode) startAndWatch(ctx context.Context, detail string) error {
	n.mu.Unlock()
	err := n.startApp(ctx)
	n.mu.Lock()
	if err != nil {
		return err
	}
	go func() {
		if err := n.awaitReady(context.Background(), detail); err != nil {
			n.mu.Lock()
			if !n.stopped {
				n.event("node.down", err.Error())
			}
			n.mu.Unlock()
		}
	}()
	return nil
}

// RestartApp restarts node id's application container through the engine
// (SIGTERM, SIGKILL after StopGrace, start).
func (c *Containers) RestartApp(id int) error {
	return c.do(id, func(ctx context.Context, n *ctrNode) error {
		if !n.hostUp {
			if err := c.eng.ContainerStart(ctx, n.holder); err != nil {
				return fmt.Errorf("restart: start holder: %w", err)
			}
			n.hostUp = true
		}
		t0 := time.Now()
		n.setReachableLocked(false, "restarting")
		if err := c.eng.ContainerStop(ctx, n.app, c.spec.StopGrace); err != nil && !IsNotFound(err) {
			return fmt.Errorf("restart: docker stop: %w", err)
		}
		n.appUp, n.paused = false, false
		n.event("fault.effective", fmt.Sprintf("mechanism docker-restart: container %s stopped after %s; starting", shortID(n.app), ms(time.Since(t0))))
		return n.startAndWatch(ctx, "restarted")
	})
}

// Pause freezes node id's application container (docker pause: the cgroup
// freezer) and proves it from the engine's state.
func (c *Containers) Pause(id int) error {
	return c.do(id, func(ctx context.Context, n *ctrNode) error {
		if n.paused || !n.appUp {
			return nil
		}
		t0 := time.Now()
		if err := pauseRetrying(ctx, c.eng, n.app); err != nil {
			return fmt.Errorf("node-freeze: docker pause: %w", err)
		}
		info, err := c.waitState(ctx, n.app, func(i ContainerInfo) bool { return i.Paused })
		if err != nil {
			return fmt.Errorf("node-freeze: %w", err)
		}
		n.paused = true
		n.event("fault.effective", fmt.Sprintf("mechanism docker-pause: container %s %s after %s (cgroup freezer)", shortID(n.app), info.Status, ms(time.Since(t0))))
		n.setReachableLocked(false, "container paused")
		return nil
	})
}

// Resume unpauses node id's application container.
func (c *Containers) Resume(id int) error {
	return c.do(id, func(ctx context.Context, n *ctrNode) error {
		if !n.paused {
			return nil
		}
		t0 := time.Now()
		if err := c.eng.ContainerUnpause(ctx, n.app); err != nil {
			return fmt.Errorf("unpause: %w", err)
		}
		info, err := c.waitState(ctx, n.app, func(i ContainerInfo) bool { return !i.Paused })
		if err != nil {
			return fmt.Errorf("unpause: %w", err)
		}
		n.paused = false
		n.event("fault.reverted", fmt.Sprintf("mechanism docker-unpause: container %s %s after %s", shortID(n.app), info.Status, ms(time.Since(t0))))
		if n.appUp {
			n.setReachableLocked(true, "container unpaused")
		}
		return nil
	})
}

// HostDown kills (or, graceful, stops) node id's application and holder
// containers: the namespace goes, and with it the address, which stays
// silent until StartApp boots the node.
func (c *Containers) HostDown(id int, graceful bool) error {
	return c.do(id, func(ctx context.Context, n *ctrNode) error {
		if !n.hostUp {
			return nil
		}
		t0 := time.Now()
		n.unpauseLocked(ctx)
		mech := "docker-kill"
		for _, ctr := range []string{n.app, n.holder} {
			var err error
			if graceful {
				mech = "docker-stop"
				err = c.eng.ContainerStop(ctx, ctr, c.spec.StopGrace)
			} else {
				err = c.eng.ContainerKill(ctx, ctr, "SIGKILL")
			}
			if err != nil && !isNotRunning(err) {
				return fmt.Errorf("host down: %s %s: %w", mech, shortID(ctr), err)
			}
			if _, err := c.waitState(ctx, ctr, notRunning); err != nil {
				return fmt.Errorf("host down: %w", err)
			}
		}
		n.appUp, n.hostUp, n.paused = false, false, false
		n.setReachableLocked(false, "host down")
		n.event("fault.effective", fmt.Sprintf("mechanism %s: containers %s and holder %s down after %s; address %s has no host",
			mech, shortID(n.app), shortID(n.holder), ms(time.Since(t0)), n.ip))
		return nil
	})
}

// isNotRunning reports the engine's refusal to kill a stopped container.
func isNotRunning(err error) bool {
	return err != nil && (IsNotFound(err) || strings.Contains(err.Error(), "is not running"))
}

// unpauseLocked unpauses a paused application container: the engine
// refuses to kill or stop a paused one.
func (n *ctrNode) unpauseLocked(ctx context.Context) {
	if n.paused {
		_ = n.c.eng.ContainerUnpause(ctx, n.app)
		n.paused = false
	}
}
