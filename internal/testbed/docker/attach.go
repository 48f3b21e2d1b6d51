package docker

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/faultbench/faultbench/internal/scenario"
)

// Labels compose (v1 and v2) puts on every container of a project.
const (
	composeProject = "com.docker.compose.project"
	composeService = "com.docker.compose.service"
	composeNumber  = "com.docker.compose.container-number"
)

// attachedNode is one running container that a run attaches to as a node.
type attachedNode struct {
	ID, Name string
	Service  string // compose service, "" outside a project
	Number   int    // compose container number, 0 outside a project
	// Addr is where the users' clients reach its service: a published
	// port on loopback, or its address on its network (reachable from the
	// host through the network's bridge).
	Addr     string
	IP       netip.Addr // its address on Network: the node's host
	Network  string
	Gateway  netip.Addr // Network's gateway: the host's side
	Restart  string     // the engine's restart policy: no, always, unless-stopped, on-failure
	ImageRef string
	ImageID  string
}

// attachment is what attach found: the nodes in node order, and where the
// clients send (nil: to every node).
type attachment struct {
	project string
	nodes   []attachedNode
	entry   []attachedNode // the target's containers (Addr is the entry address)
	entryAt string         // the target as an address, when given as one
}

// entryAddrs are the addresses the clients send to; nil means the nodes'.
func (a attachment) entryAddrs() []string {
	if a.entryAt != "" {
		return []string{a.entryAt}
	}
	var out []string
	for _, e := range a.entry {
		out = append(out, e.Addr)
	}
	return out
}

// attachError is a mistake in the cluster section that the engine
// revealed: Key is the key it belongs to, dotted, under cluster
// ("attach.services", "nodes").
type attachError struct {
	Key string
	Err error
}

func (e *attachError) Error() string { return "attach: " + e.Err.Error() }
func (e *attachError) Unwrap() error { return e.Err }

func attachErr(key, format string, args ...any) error {
	return &attachError{Key: key, Err: fmt.Errorf(format, args...)}
}

// findAttached looks up what a names in the engine and maps it to nodes:
// a project's containers of the chosen services (default every service
// but the target's), ordered by service (as listed, else by name), then
// container number, then name; or the named containers in the order
// given. Every node must be running and not paused (the run leaves it
// so). port is cluster.port (0: the one TCP port the container publishes,
// else the one it exposes). Errors are *attachError, one line each.
func findAttached(ctx context.Context, eng Engine, a *scenario.Attach, port int) (attachment, error) {
	out := attachment{project: a.Project}
	target, err := scenario.ParseAttachTarget(a.Target)
	if a.Target == "" {
		target, err = scenario.AttachTarget{}, nil
	}
	if err != nil {
		return out, attachErr("attach.target", "%v", err)
	}
	var infos []ContainerInfo
	var byService map[string][]ContainerInfo
	if a.Project != "" {
		if infos, byService, err = projectContainers(ctx, eng, a.Project); err != nil {
			return out, err
		}
		services := a.Services
		if len(services) == 0 {
			for _, s := range slices.Sorted(maps.Keys(byService)) {
				if s != target.Name {
					services = append(services, s)
				}
			}
		}
		for _, s := range services {
			cs, ok := byService[s]
			if !ok {
				return out, attachErr("attach.services", "compose project %s has no service %s (its services: %s)", a.Project, s, strings.Join(slices.Sorted(maps.Keys(byService)), ", "))
			}
			for _, c := range cs {
				n, err := asNode(c, port, "attach.services")
				if err != nil {
					return out, err
				}
				out.nodes = append(out.nodes, n)
			}
		}
		if len(out.nodes) == 0 {
			return out, attachErr("attach.services", "compose project %s has no service but the target's (%s): name the nodes' services with services: [..]", a.Project, target.Name)
		}
	} else {
		for _, name := range a.Containers {
			c, err := eng.ContainerInspect(ctx, name)
			if IsNotFound(err) {
				return out, attachErr("attach.containers", "no container %s on this engine (docker ps -a lists them)", name)
			}
			if err != nil {
				return out, fmt.Errorf("docker: inspect container %s: %w", name, err)
			}
			infos = append(infos, c)
			n, err := asNode(c, port, "attach.containers")
			if err != nil {
				return out, err
			}
			out.nodes = append(out.nodes, n)
		}
	}
	seen := map[string]bool{}
	for _, n := range out.nodes {
		if seen[n.ID] {
			return out, attachErr("attach.containers", "container %s is named twice", n.Name)
		}
		seen[n.ID] = true
	}
	switch {
	case target.Addr.IsValid():
		if err := checkTargetAddr(target.Addr, infos, out.nodes); err != nil {
			return out, err
		}
		out.entryAt = target.Addr.String()
	case target.Name != "":
		cs := byService[target.Name]
		if len(cs) == 0 {
			c, err := eng.ContainerInspect(ctx, target.Name)
			if IsNotFound(err) {
				where := "on this engine"
				if a.Project != "" {
					where = fmt.Sprintf("in compose project %s (its services: %s)", a.Project, strings.Join(slices.Sorted(maps.Keys(byService)), ", "))
				}
				return out, attachErr("attach.target", "no service or container %s %s", target.Name, where)
			}
			if err != nil {
				return out, fmt.Errorf("docker: inspect container %s: %w", target.Name, err)
			}
			cs = []ContainerInfo{c}
		}
		for _, c := range cs {
			e, err := asNode(c, target.Port, "attach.target")
			if err != nil {
				return out, err
			}
			out.entry = append(out.entry, e)
		}
	}
	return out, nil
}

// projectContainers inspects every container of compose project name,
// sorted by service, container number and name, and groups them by
// service.
func projectContainers(ctx context.Context, eng Engine, name string) ([]ContainerInfo, map[string][]ContainerInfo, error) {
	listed, err := eng.ContainerList(ctx, composeProject+"="+name)
	if err != nil {
		return nil, nil, fmt.Errorf("docker: list containers: %w", err)
	}
	if len(listed) == 0 {
		others := map[string]bool{}
		if all, err := eng.ContainerList(ctx, composeProject); err == nil {
			for _, c := range all {
				others[c.Labels[composeProject]] = true
			}
		}
		hint := "no compose project runs here"
		if len(others) > 0 {
			hint = "projects here: " + strings.Join(slices.Sorted(maps.Keys(others)), ", ")
		}
		return nil, nil, attachErr("attach.project", "no container of compose project %s on this engine (%s): bring the stack up first (docker-compose up -d, or docker compose up -d, in its directory)", name, hint)
	}
	var infos []ContainerInfo
	for _, l := range listed {
		c, err := eng.ContainerInspect(ctx, l.ID)
		if IsNotFound(err) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, nil, fmt.Errorf("docker: inspect container %s: %w", l.Name, err)
		}
		if c.Labels == nil {
			c.Labels = l.Labels
		}
		infos = append(infos, c)
	}
	slices.SortFunc(infos, func(x, y ContainerInfo) int {
		return cmp.Or(cmp.Compare(x.Labels[composeService], y.Labels[composeService]),
			cmp.Compare(number(x), number(y)), cmp.Compare(x.Name, y.Name))
	})
	by := map[string][]ContainerInfo{}
	for _, c := range infos {
		by[c.Labels[composeService]] = append(by[c.Labels[composeService]], c)
	}
	return infos, by, nil
}

func number(c ContainerInfo) int {
	n, _ := strconv.Atoi(c.Labels[composeNumber])
	return n
}

// asNode checks that c runs and finds where its clients reach it; key is
// the attach key that named it, for errors.
func asNode(c ContainerInfo, port int, key string) (attachedNode, error) {
	what := c.Name
	if s := c.Labels[composeService]; s != "" {
		what += " (service " + s + ")"
	}
	switch {
	case c.Paused:
		return attachedNode{}, attachErr(key, "container %s is paused: unpause it first (docker unpause %s); faultbench leaves every container it attaches to running and unpaused", what, c.Name)
	case c.Status == "restarting":
		return attachedNode{}, attachErr(key, "container %s is restarting (restart policy %s, %d restarts so far): wait until it runs (docker ps), or fix why it exits", what, c.RestartPolicy, c.RestartCount)
	case !c.Running:
		return attachedNode{}, attachErr(key, "container %s is %s (exit code %d), not running: start it first (docker start %s); faultbench attaches only to running containers", what, c.Status, c.ExitCode, c.Name)
	}
	n := attachedNode{ID: c.ID, Name: c.Name, Service: c.Labels[composeService], Number: number(c),
		Restart: restartPolicy(c.RestartPolicy), ImageRef: c.ImageRef, ImageID: c.ImageID}
	if port == 0 {
		published := slices.Sorted(maps.Keys(c.Published))
		switch {
		case len(published) == 1:
			port = published[0]
		case len(published) == 0 && len(c.Exposed) == 1:
			port = c.Exposed[0]
		default:
			ports := published
			if len(ports) == 0 {
				ports = c.Exposed
			}
			if len(ports) == 0 {
				return n, attachErr(key, "container %s publishes and exposes no TCP port: say which port its service listens on (cluster.port, or target: NAME:PORT)", what)
			}
			return n, attachErr(key, "container %s has ports %s: say which one its service listens on (cluster.port, or target: NAME:PORT)", what, joinInts(ports))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.IPs)) {
		if ip := c.IPs[name]; ip.IsValid() {
			n.Network, n.IP, n.Gateway = name, ip, c.Gateways[name]
			break
		}
	}
	if hostAddr, ok := loopbackBinding(c.Published[port]); ok {
		n.Addr = hostAddr.String()
	} else if n.IP.IsValid() {
		n.Addr = net.JoinHostPort(n.IP.String(), strconv.Itoa(port))
	} else if c.NetworkMode == "host" {
		n.Addr, n.IP = netip.AddrPortFrom(loopback4, uint16(port)).String(), loopback4
	} else {
		return n, attachErr(key, "container %s has no address of its own (network mode %s) and does not publish port %d: attach the container whose network it shares, or publish the port", what, c.NetworkMode, port)
	}
	return n, nil
}

// loopback4 is where this host reaches a port published on every address.
var loopback4 = netip.AddrFrom4([4]byte{127, 0, 0, 1})

// loopbackBinding is where a host reaches a published port on loopback:
// a binding to every address (0.0.0.0, ::) or to a loopback one.
func loopbackBinding(binds []netip.AddrPort) (netip.AddrPort, bool) {
	for _, b := range binds {
		switch ip := b.Addr(); {
		case ip.Is4() && (ip.IsUnspecified() || ip.IsLoopback()):
			if ip.IsUnspecified() {
				ip = loopback4
			}
			return netip.AddrPortFrom(ip, b.Port()), true
		case !ip.IsValid():
			return netip.AddrPortFrom(loopback4, b.Port()), true
		}
	}
	for _, b := range binds {
		if ip := b.Addr(); ip.Is6() && (ip.IsUnspecified() || ip.IsLoopback()) {
			return netip.AddrPortFrom(netip.IPv6Loopback(), b.Port()), true
		}
	}
	return netip.AddrPort{}, false
}

// checkTargetAddr allows a target address on loopback or of an attached
// container (or of any container of the project): the load goes nowhere
// else (docs/architecture.md, "Traffic stays home").
func checkTargetAddr(ap netip.AddrPort, infos []ContainerInfo, nodes []attachedNode) error {
	ip := ap.Addr().Unmap()
	if ip.IsLoopback() {
		return nil
	}
	for _, n := range nodes {
		if n.IP == ip {
			return nil
		}
	}
	for _, c := range infos {
		for _, a := range c.IPs {
			if a == ip {
				return nil
			}
		}
	}
	return attachErr("attach.target", "%s is neither loopback nor the address of an attached container: faultbench sends load only to this machine's own hosts; name the entry point's service or container instead (target: lb:80)", ap)
}

func restartPolicy(p string) string {
	if p == "" {
		return "no"
	}
	return p
}

// restarts reports whether the engine restarts a container of policy p
// that was killed (exit 137), as a crash would.
func restarts(p string) bool {
	return p == "always" || p == "unless-stopped" || p == "on-failure"
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

// notes are the lines validate and run print before the run: which
// container is which node, its restart policy and what it means, and
// where the clients send.
func (a attachment) notes() []string {
	var out []string
	for i, n := range a.nodes {
		what := n.Name
		if n.Service != "" {
			what += " (service " + n.Service + ")"
		}
		line := fmt.Sprintf("attach: node %d is container %s at %s, restart policy %s", i+1, what, n.Addr, n.Restart)
		if restarts(n.Restart) {
			line += ": the engine restarts it after a crash (app-crash), and the record says so (system.docker.restart; fault.clear \"repaired by the engine\"), not the operator"
		} else {
			line += ": a crashed container stays down until the operator or the fault's end starts it"
		}
		out = append(out, line)
	}
	switch addrs := a.entryAddrs(); {
	case len(addrs) == 0:
		out = append(out, "attach: the clients send to every node at its address")
	case len(a.entry) > 0:
		var names []string
		for _, e := range a.entry {
			names = append(names, e.Name+" at "+e.Addr)
		}
		out = append(out, "attach: the clients send to the entry point "+strings.Join(names, ", "))
	default:
		out = append(out, "attach: the clients send to the entry point "+a.entryAt)
	}
	return out
}
