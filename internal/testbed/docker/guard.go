package docker

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/faultbench/faultbench/internal/kernelfault"
	"github.com/faultbench/faultbench/internal/testbed"
	"github.com/faultbench/faultbench/internal/warden"
)

// Journal record kinds of the objects this backend creates; the warden
// removes them through the engine (warden.RegisterRemover).
const (
	KindContainer = "docker-container" // Name: fb-RUN-nI-ROLE
	KindNetwork   = "docker-network"   // Name: fb-RUN
)

var (
	containerRE = regexp.MustCompile(`^fb-[0-9a-f]{12}-n[0-9]{1,3}-(net|app)$`)
	networkRE   = regexp.MustCompile(`^fb-[0-9a-f]{12}$`)
	attachedRE  = regexp.MustCompile(`^[0-9a-f]{12}/[0-9a-f]{64}$`)
)

func init() {
	warden.RegisterRemover(KindContainer, warden.Remover{
		Owns: func(name, run string) bool {
			return containerRE.MatchString(name) && strings.HasPrefix(name, "fb-"+run+"-")
		},
		Remove:      func(name string) (bool, error) { return removeNamed(name, true) },
		Restore:     restoreOwned,
		OwnsProcess: ownsProcess,
		OwnsCgroup:  ownsCgroup,
	})
	warden.RegisterRemover(KindAttached, warden.Remover{
		Owns:    func(name, run string) bool { return attachedRE.MatchString(name) && strings.HasPrefix(name, run+"/") },
		Remove:  restoreAttached,
		Restore: restoreAttached,
	})
	warden.RegisterRemover(KindNetwork, warden.Remover{
		Owns:   func(name, run string) bool { return networkRE.MatchString(name) && name == "fb-"+run },
		Remove: func(name string) (bool, error) { return removeNamed(name, false) },
	})
}

// removerEngine is the engine the removers use; tests give a fake.
var removerEngine = Connect

// removeNamed removes a container (force: a paused or running one is
// killed) or a network by name through a fresh engine connection.
func removeNamed(name string, isContainer bool) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	eng, err := removerEngine(ctx)
	if err != nil {
		return false, err
	}
	if isContainer {
		err = eng.ContainerRemove(ctx, name)
	} else {
		err = eng.NetworkRemove(ctx, name)
	}
	if IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("docker: remove %s: %w", name, err)
	}
	return true, nil
}

// guard is the run's warden, which removes every container and the
// network if this controller dies or its lease lapses.
type guard struct{ *warden.Client }

func startGuard(spec testbed.Spec) (*guard, error) {
	c, err := warden.StartClient(warden.ClientSpec{RunID: spec.RunID, Executable: spec.Executable, Env: spec.Env, Dir: spec.Dir})
	if err != nil {
		return nil, err
	}
	return &guard{c}, nil
}

func (g *guard) notifyLost(f func(why string)) { g.NotifyLost(f) }
func (g *guard) release() error                { return g.Release() }

// restoreAttached puts an attached container back as the run found it
// (name is RUN/CONTAINER-ID): unpaused, the run's nft tables and its
// qdisc deleted from its namespace, started if it is down. It never stops
// or removes it. It reports whether it changed anything; a container that
// is gone is nothing to restore. The run's controller calls it at the end
// of the run (through the warden's journal), the warden when the
// controller dies, and faultbench cleanup for a run whose warden died too.
func restoreAttached(name string) (bool, error) {
	run, id, _ := strings.Cut(name, "/")
	return restoreContainer(run, id, true)
}

// restoreOwned takes the faults off one of the run's own containers (name
// is fb-RUN-nI-ROLE) when the lease lapses: unpaused, the run's nft tables
// and its qdisc deleted from its namespace, a disconnected holder put back
// on the run's network with its address. It neither starts nor removes
// it: the controller, if it comes back, finds its run invalid, and the
// pipe's closing removes the container.
func restoreOwned(name string) (bool, error) {
	run := strings.TrimPrefix(name, "fb-")
	run, _, _ = strings.Cut(run, "-")
	return restoreContainer(run, name, false)
}

// reconnect puts a run's holder container (info) back on the run's network
// with the address its label records, when the disconnect fault left it
// off; other containers it leaves alone.
func reconnect(ctx context.Context, eng Engine, run string, info ContainerInfo) (bool, error) {
	netName := "fb-" + run
	if _, on := info.IPs[netName]; on || info.Labels[LabelRole] != "holder" {
		return false, nil
	}
	ip, err := netip.ParseAddr(info.Labels[LabelIP])
	if err != nil {
		return false, fmt.Errorf("reconnect: label %s=%q: %w", LabelIP, info.Labels[LabelIP], err)
	}
	if err := eng.NetworkConnect(ctx, netName, info.ID, ip); err != nil {
		return false, fmt.Errorf("reconnect to %s as %s: %w", netName, ip, err)
	}
	return true, nil
}

// restoreContainer unpauses container id (or name), deletes run's rules
// from its namespace and puts a disconnected holder of the run back on its
// network; with start, it also starts it if it is down.
func restoreContainer(run, id string, start bool) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	eng, err := removerEngine(ctx)
	if err != nil {
		return false, err
	}
	info, err := eng.ContainerInspect(ctx, id)
	if IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("docker: restore %s: %w", shortID(id), err)
	}
	var errs []error
	changed := false
	if info.Paused {
		if err := eng.ContainerUnpause(ctx, id); err != nil {
			errs = append(errs, fmt.Errorf("unpause: %w", err))
		}
		changed = true
	}
	switch {
	case info.Status == "restarting":
		// The engine is starting it by its restart policy.
	case info.Running:
		if info.Pid <= 0 {
			break
		}
		did, err := removeRules(fmt.Sprintf("/proc/%d/ns/net", info.Pid), run)
		changed = changed || did
		if err != nil {
			errs = append(errs, err)
		}
		did, err = reconnect(ctx, eng, run, info)
		changed = changed || did
		if err != nil {
			errs = append(errs, err)
		}
	case start:
		if err := eng.ContainerStart(ctx, id); err != nil {
			errs = append(errs, fmt.Errorf("start: %w", err))
		}
		changed = true
	}
	if len(errs) > 0 {
		return changed, fmt.Errorf("docker: restore container %s (%s): %w", info.Name, shortID(id), errors.Join(errs...))
	}
	return changed, nil
}

var (
	tableLineRE = regexp.MustCompile(`(?m)^table inet (\S+)$`)
	rootQdiscRE = regexp.MustCompile(`(?m)^qdisc htb ` + kernelfault.ShapeRoot + ` dev (\S+) root`)
)

// removeRules is removeRunRules; tests replace it, as they replace
// removerEngine.
var removeRules = removeRunRules

// removeRunRules deletes run's nft tables and faultbench's root qdiscs in
// namespace ns.
func removeRunRules(ns, run string) (bool, error) {
	var errs []error
	changed := false
	tables, err := inNS(ns, "", "nft", "list", "tables")
	if err != nil {
		errs = append(errs, err)
	}
	for _, m := range tableLineRE.FindAllStringSubmatch(tables, -1) {
		if !strings.HasPrefix(m[1], runTable(run)) {
			continue
		}
		if _, err := inNS(ns, "", "nft", "delete", "table", "inet", m[1]); err != nil {
			errs = append(errs, err)
			continue
		}
		changed = true
	}
	qdiscs, err := inNS(ns, "", "tc", "qdisc", "show")
	if err != nil {
		errs = append(errs, err)
	}
	for _, m := range rootQdiscRE.FindAllStringSubmatch(qdiscs, -1) {
		if _, err := inNS(ns, "", "tc", "qdisc", "del", "dev", m[1], "root"); err != nil {
			errs = append(errs, err)
			continue
		}
		changed = true
	}
	return changed, errors.Join(errs...)
}

// containerIDRE finds a container's id at the end of a cgroup path: the
// engine's cgroupfs driver names it /docker/ID, systemd's docker-ID.scope.
var containerIDRE = regexp.MustCompile(`(?:/docker/|/docker-)([0-9a-f]{64})(?:\.scope)?$`)

// containerOfPid is the id of the container process pid runs in, from its
// cgroups; "" when it runs in none.
func containerOfPid(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if m := containerIDRE.FindStringSubmatch(line[strings.LastIndexByte(line, ':')+1:]); m != nil {
			return m[1]
		}
	}
	return ""
}

// ownsProcess reports whether process pid runs in a container of run
// (ownsContainer). The warden asks it before it acts in /proc/PID/ns/net.
func ownsProcess(pid int, run string) bool { return ownsContainer(containerOfPid(pid), run) }

// ownsCgroup reports whether cgroup directory dir is a container's of run
// (ownsContainer). The warden asks it before it starts a helper there.
func ownsCgroup(dir, run string) bool {
	m := containerIDRE.FindStringSubmatch(dir)
	return m != nil && ownsContainer(m[1], run)
}

// ownsContainer reports whether container id is one of run's: one the run
// created (labelled with its id) or attached (journalled as RUN/ID).
func ownsContainer(id, run string) bool {
	if id == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if eng, err := removerEngine(ctx); err == nil {
		if info, err := eng.ContainerInspect(ctx, id); err == nil && info.Labels[LabelRun] == run {
			return true
		}
	}
	recs, _ := warden.Read(warden.Path(run))
	return slices.ContainsFunc(recs, func(r warden.Record) bool { return r.Kind == KindAttached && r.Name == run+"/"+id })
}
