package workload

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"
)

// ErrRemote is returned by New when a target resolves outside loopback and
// the run's own hosts and Config.AllowRemote is not set (docs/architecture.md).
var ErrRemote = errors.New("refusing to send load outside loopback and the run's own hosts")

// resolveTimeout bounds the name lookups New does before a run.
const resolveTimeout = 5 * time.Second

func splitHostPort(addr string) (host string, port int, err error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("address %q: want host:port: %w", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return "", 0, fmt.Errorf("address %q: port %q is not a number in 1..65535", addr, p)
	}
	if h == "" {
		return "", 0, fmt.Errorf("address %q: empty host", addr)
	}
	return h, n, nil
}

// resolvedTarget is a Target with the address requests are actually sent
// to, fixed before the run.
type resolvedTarget struct {
	Target
	dial string // ip:port
	host string // Host header: the address as the user wrote it
}

// resolveTargets looks every target up and checks it against the safety
// rule before any request is sent. Every address a name resolves to must be
// allowed, not just the first, so that the check cannot be sidestepped by
// round-robin DNS.
func resolveTargets(ctx context.Context, cfg Config) ([]resolvedTarget, error) {
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	out := make([]resolvedTarget, 0, len(cfg.Targets))
	var errs []error
	for _, t := range cfg.Targets {
		host, port, err := splitHostPort(t.Addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", t.Node, err))
			continue
		}
		var addrs []netip.Addr
		if ip, err := netip.ParseAddr(host); err == nil {
			addrs = []netip.Addr{ip}
		} else {
			ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			if err != nil {
				errs = append(errs, fmt.Errorf("node %d: resolving %q: %w", t.Node, t.Addr, err))
				continue
			}
			addrs = ips
		}
		if len(addrs) == 0 {
			errs = append(errs, fmt.Errorf("node %d: %q resolves to no address", t.Node, t.Addr))
			continue
		}
		if !cfg.AllowRemote {
			for _, a := range addrs {
				if !allowed(a, cfg.OwnHosts) {
					errs = append(errs, fmt.Errorf("%w: node %d address %q resolves to %s; pass --allow-remote (Config.AllowRemote) if you mean it",
						ErrRemote, t.Node, t.Addr, a))
				}
			}
		}
		out = append(out, resolvedTarget{
			Target: t,
			dial:   netip.AddrPortFrom(addrs[0].Unmap(), uint16(port)).String(),
			host:   t.Addr,
		})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

func allowed(a netip.Addr, own []netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || slices.ContainsFunc(own, func(o netip.Addr) bool { return o.Unmap() == a })
}
