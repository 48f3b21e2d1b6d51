package docker

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/faultbench/faultbench/internal/kernelfault"
)

// cpu-hog and mem-pressure of a container: the kernel fault engine's
// helper processes (kernelfault.Helper: a burner of busy threads, a
// balloon of resident memory), which the run's warden starts from its own
// binary on the host, moves into the container's cgroups before they run,
// and holds until the revert or the lease's end. Nothing runs inside the
// container's filesystem, so any image takes them: faultbench's own, a
// user's (system: container) and an attached one.

// Burn runs a burner of cpus busy threads in node id's application
// container's cgroups; its CPU time proves it.
func (c *Containers) Burn(l kernelfault.Label, id int, cpus int) (kernelfault.Undo, error) {
	return helper(c, c.guard, l, id, &kernelfault.Helper{Kind: kernelfault.HelperBurner, CPUs: cpus})
}

// Balloon runs a balloon holding bytes of resident memory in node id's
// application container's cgroups; its resident set proves it.
func (c *Containers) Balloon(l kernelfault.Label, id int, bytes int64) (kernelfault.Undo, error) {
	return helper(c, c.guard, l, id, &kernelfault.Helper{Kind: kernelfault.HelperBalloon, Bytes: bytes})
}

// Burn is Containers.Burn for an attached container.
func (a *Attached) Burn(l kernelfault.Label, id int, cpus int) (kernelfault.Undo, error) {
	return helper(a, a.guard, l, id, &kernelfault.Helper{Kind: kernelfault.HelperBurner, CPUs: cpus})
}

// Balloon is Containers.Balloon for an attached container.
func (a *Attached) Balloon(l kernelfault.Label, id int, bytes int64) (kernelfault.Undo, error) {
	return helper(a, a.guard, l, id, &kernelfault.Helper{Kind: kernelfault.HelperBalloon, Bytes: bytes})
}

// appPid is the pid of node id's application container (an owned node's
// app container, an attached container itself) and its short id.
func (c *Containers) appPid(id int) (int, string, error) {
	if id < 1 || id > len(c.nodes) {
		return 0, "", fmt.Errorf("no node %d (cluster has %d)", id, len(c.nodes))
	}
	n := c.nodes[id-1]
	info, err := c.inspect(n.app)
	if err != nil {
		return 0, "", err
	}
	if !info.Running || info.Pid <= 0 {
		return 0, "", fmt.Errorf("node %d's application is down (container %s %s)", id, shortID(n.app), info.Status)
	}
	return info.Pid, shortID(n.app), nil
}

// helperSite is where a helper runs: a cluster whose nodes' application
// containers it can find.
type helperSite interface {
	appPid(id int) (pid int, short string, err error)
	kevent(l kernelfault.Label, node int, kind, detail string)
}

func helper(s helperSite, g *guard, l kernelfault.Label, id int, h *kernelfault.Helper) (kernelfault.Undo, error) {
	pid, short, err := s.appPid(id)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.Fault, err)
	}
	dirs, err := containerCgroups(pid)
	if err != nil {
		return nil, fmt.Errorf("%s on node %d: container %s: %w", l.Fault, id, short, err)
	}
	f := kernelfault.Fault{ID: fmt.Sprintf("%s#%d.n%d.%d", l.Fault, l.ID, id, seq.Add(1)),
		Target: kernelfault.Target{Netns: fmt.Sprintf("/proc/%d/ns/net", pid), Cgroup: dirs}, Proc: h}
	return viaWarden(s, g, l, id, "cgroup", "container "+short+"'s cgroups", f)
}

// cgroupRoot is where the cgroup hierarchies are mounted; tests move it.
var cgroupRoot = "/sys/fs/cgroup"

// accounted are the cgroup v1 controllers a helper joins: those that
// count its CPU, memory and processes against the container (not the
// freezer: a helper must not freeze with a paused container).
var accounted = []string{"memory", "cpu", "cpuacct", "pids"}

// containerCgroups are the cgroup directories of process pid (a
// container's) that a helper joins: on cgroup v1 those of the accounted
// controllers, the memory one first; on v2 the one unified directory.
func containerCgroups(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return nil, err
	}
	return parseCgroups(string(b), func(dir string) bool { _, err := os.Stat(dir); return err == nil })
}

// parseCgroups reads /proc/PID/cgroup's lines (ID:CONTROLLERS:PATH); a v1
// hierarchy of several controllers is mounted under their joined name or
// under each (with symlinks), whichever exists.
func parseCgroups(text string, exists func(string) bool) ([]string, error) {
	type hierarchy struct{ ctrls, path string }
	var hs []hierarchy
	unified := ""
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		parts := strings.SplitN(line, ":", 3)
		switch {
		case len(parts) != 3:
		case parts[1] == "":
			unified = filepath.Join(cgroupRoot, parts[2])
		default:
			hs = append(hs, hierarchy{parts[1], parts[2]})
		}
	}
	var dirs []string
	for _, want := range accounted {
		for _, h := range hs {
			if !slices.Contains(strings.Split(h.ctrls, ","), want) {
				continue
			}
			for _, mount := range []string{h.ctrls, want} {
				if dir := filepath.Join(cgroupRoot, mount, h.path); exists(dir) {
					if !slices.Contains(dirs, dir) {
						dirs = append(dirs, dir)
					}
					break
				}
			}
		}
	}
	switch {
	case len(dirs) > 0:
		return dirs, nil
	case unified != "" && exists(unified):
		return []string{unified}, nil
	}
	return nil, fmt.Errorf("no cgroup of its found under %s (%q)", cgroupRoot, strings.TrimSpace(text))
}
