package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/kernelfault"
)

// The disconnect fault: `docker network disconnect` of a node's container
// from the run's network, and `docker network connect` with the same
// address at the clear. It is not a pulled cable (link-down's silent nft
// DROP): the container's interface goes, so its own sends fail at once
// with ENETUNREACH, and its address no longer answers on the network
// (clients see no answer, the ARP of a host that is gone). A service that
// reacts to an immediate local error behaves differently from one whose
// packets vanish, so the two are separate faults with their own names.

// LeverDisconnect is the lever of the disconnect fault: the engine takes
// a node's container off the run's network and puts it back.
const LeverDisconnect = "docker-network"

// DisconnectLever takes node id's container off its network; undo puts it
// back with its address.
type DisconnectLever interface {
	Disconnect(l kernelfault.Label, id int) (kernelfault.Undo, error)
}

var _ DisconnectLever = (*Containers)(nil)

func init() {
	fault.Register("disconnect", fault.InjectorFunc(injectDisconnect), fault.Support{Levers: []string{LeverDisconnect}})
}

func injectDisconnect(_ context.Context, t fault.Target, o fault.Occurrence) (fault.Revert, error) {
	l, ok := fault.As[DisconnectLever](t)
	if !ok {
		return nil, fmt.Errorf("disconnect on node %d: %w", o.Node, fault.ErrUnsupported)
	}
	undo, err := l.Disconnect(kernelfault.Label{Fault: o.Type, ID: o.ID}, o.Node)
	if err != nil {
		return nil, err
	}
	return fault.Revert(undo), nil
}

// Disconnect takes node id's holder container (which holds its namespace
// and address) off the run's network and proves it: a connection from the
// namespace to the network's gateway fails at once with ENETUNREACH.
func (c *Containers) Disconnect(l kernelfault.Label, id int) (kernelfault.Undo, error) {
	if id < 1 || id > len(c.nodes) {
		return nil, fmt.Errorf("%s: no node %d (cluster has %d)", l.Fault, id, len(c.nodes))
	}
	n := c.nodes[id-1]
	ns, holder, err := c.nsOf(id)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.Fault, err)
	}
	gw := c.subnet.Addr().Next().String()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	t0 := time.Now()
	if err := c.eng.NetworkDisconnect(ctx, c.netID, n.holder); err != nil {
		return nil, fmt.Errorf("%s on node %d: docker network disconnect %s: %w", l.Fault, id, holder, err)
	}
	took := time.Since(t0)
	undo := onceUndo(func() error { return c.reconnect(l, id, n, ns, gw) })
	proof := unreachable(ns, gw)
	if proof != nil {
		return nil, joinUndo(fmt.Errorf("%s on node %d: disconnected, but %v", l.Fault, id, proof), undo)
	}
	c.kevent(l, id, "fault.effective", fmt.Sprintf("mechanism docker-disconnect: container %s left network %s after %s; a connection from its namespace to the gateway %s failed at once: network is unreachable",
		holder, shortID(c.netID), ms(took), gw))
	return undo, nil
}

// reconnect puts node n's holder back on the network with its address and
// proves it: the gateway answers from the namespace again.
func (c *Containers) reconnect(l kernelfault.Label, id int, n *ctrNode, ns, gw string) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	t0 := time.Now()
	err := c.eng.NetworkConnect(ctx, c.netID, n.holder, n.ip)
	if IsNotFound(err) {
		return nil // the node's containers are gone (the run is ending)
	}
	if err != nil {
		return fmt.Errorf("revert %s on node %d: docker network connect %s as %s: %w", l.Fault, id, shortID(n.holder), n.ip, err)
	}
	rtt, err := kernelfault.RoundTrip(ns, gw)
	if err != nil {
		return fmt.Errorf("revert %s on node %d: reconnected as %s, but %v", l.Fault, id, n.ip, err)
	}
	c.kevent(l, id, "fault.reverted", fmt.Sprintf("mechanism docker-connect: container %s back on network %s as %s after %s; gateway %s answers in %s",
		shortID(n.holder), shortID(c.netID), n.ip, ms(time.Since(t0)), gw, ms(rtt)))
	return nil
}

// unreachable checks, from namespace ns, that a connection to gw fails at
// once with ENETUNREACH (no route: the interface is gone).
func unreachable(ns, gw string) error {
	return kernelfault.InNetns(ns, func() error {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(gw, "9"), time.Second)
		if err == nil {
			conn.Close()
			return fmt.Errorf("the gateway %s still answers from its namespace", gw)
		}
		if !errors.Is(err, syscall.ENETUNREACH) {
			return fmt.Errorf("a connection to the gateway %s failed with %v, not network unreachable", gw, err)
		}
		return nil
	})
}
