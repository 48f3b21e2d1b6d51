package scenario

import (
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// containerNameRE is what the engine accepts as a container name (or a
// prefix of an id); compose's service names are a subset.
var containerNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// validateAttach checks cluster.attach on its own: what it names is looked
// up in the engine later (the docker backend's check).
func (sc *Scenario) validateAttach(bad func(path []any, format string, args ...any)) {
	c := sc.Cluster
	a := c.Attach
	at := func(key string) []any { return []any{"cluster", "attach", key} }
	if c.Backend != "docker" {
		bad(at("project"), "attach targets running containers of the local Docker engine: it needs backend: docker (this is backend: %s)", c.Backend)
	}
	switch {
	case a.Project == "" && len(a.Containers) == 0:
		bad([]any{"cluster", "attach"}, "attach needs project: NAME (a compose project) or containers: [NAME, ...]")
	case a.Project != "" && len(a.Containers) > 0:
		bad(at("containers"), "give project or containers, not both: containers of a project are chosen with services: [..]")
	}
	if a.Project != "" && !containerNameRE.MatchString(a.Project) {
		bad(at("project"), "%q is not a compose project name (letters, digits, '_', '.', '-')", a.Project)
	}
	if len(a.Services) > 0 && a.Project == "" {
		bad(at("services"), "services choose among a project's containers: add project: NAME, or list containers instead")
	}
	seen := map[string]bool{}
	for i, s := range append(append([]string{}, a.Services...), a.Containers...) {
		key := "services"
		if i >= len(a.Services) {
			key = "containers"
		}
		if !containerNameRE.MatchString(s) {
			bad(at(key), "%q is not a container or service name", s)
		}
		if seen[s] {
			bad(at(key), "%s is named twice", s)
		}
		seen[s] = true
	}
	if a.Target != "" {
		if _, err := ParseAttachTarget(a.Target); err != nil {
			bad(at("target"), "%v", err)
		}
	}
	if c.Image != "" || len(c.Command) > 0 || len(c.Env) > 0 {
		bad([]any{"cluster", "image"}, "image, command and env say how to start nodes; attached, faultbench starts nothing: leave them out")
	}
}

// AttachTarget is attach.target parsed: a service or container Name
// with a Port (0: the one port the target publishes or exposes), or an
// address Addr.
type AttachTarget struct {
	Name string
	Port int
	Addr netip.AddrPort
}

// ParseAttachTarget parses attach.target: SERVICE[:PORT],
// CONTAINER[:PORT] or IP:PORT ([IP]:PORT for IPv6).
func ParseAttachTarget(t string) (AttachTarget, error) {
	if strings.Count(t, ":") > 1 {
		ap, err := netip.ParseAddrPort(t)
		if err != nil || ap.Port() == 0 {
			return AttachTarget{}, errTarget(t)
		}
		return AttachTarget{Addr: ap}, nil
	}
	host, portStr, hasPort := strings.Cut(t, ":")
	port := 0
	if hasPort {
		p, err := strconv.Atoi(portStr)
		if err != nil || p < 1 || p > 65535 {
			return AttachTarget{}, errTarget(t)
		}
		port = p
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if port == 0 {
			return AttachTarget{}, errTarget(t)
		}
		return AttachTarget{Addr: netip.AddrPortFrom(ip, uint16(port))}, nil
	}
	if !containerNameRE.MatchString(host) {
		return AttachTarget{}, errTarget(t)
	}
	return AttachTarget{Name: host, Port: port}, nil
}

type targetError string

func (e targetError) Error() string {
	return "target " + strconv.Quote(string(e)) + ": want SERVICE[:PORT] (a service of the project, e.g. lb:80), CONTAINER[:PORT], or IP:PORT (e.g. 127.0.0.1:8080)"
}

func errTarget(t string) error { return targetError(t) }
