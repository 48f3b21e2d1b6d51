package press

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/faultbench/faultbench/internal/fault"
	nodeprog "github.com/faultbench/faultbench/internal/node"
	"github.com/faultbench/faultbench/internal/testbed"
	"github.com/faultbench/faultbench/internal/testbed/local"
)

// Prepare gives each node its intra, control and peer.J (proxy) addresses
// at the default ports, hands the token through the environment only, and
// Close closes every proxy.
func TestRigPrepareAndClose(t *testing.T) {
	spec := testbed.Spec{System: Kind, Nodes: 3, FirstHost: 41, Options: map[string]string{"heartbeat": "1s"}}
	plan, err := local.Backend{}.Plan(spec)
	if err != nil {
		t.Fatal(err)
	}
	r, err := system{}.Prepare(&spec, plan, 7)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if spec.Port != DefaultPort {
		t.Errorf("port %d, want the default %d", spec.Port, DefaultPort)
	}
	opts := spec.NodeOptions(2)
	if opts["intra"] != "127.0.0.42:9080" || opts["control"] != "127.0.0.42:10080" || opts["token"] != "" {
		t.Errorf("node 2 options %v: want intra 127.0.0.42:9080, control 127.0.0.42:10080 and no token in argv", opts)
	}
	if opts["seed"] == spec.NodeOptions(3)["seed"] {
		t.Error("nodes 2 and 3 share a comm-fault seed")
	}
	var tokenEnv string
	for _, e := range spec.Env {
		if v, ok := strings.CutPrefix(e, TokenEnv+"="); ok {
			tokenEnv = v
		}
	}
	if len(tokenEnv) != 32 {
		t.Fatalf("token in env %q: want 32 hex digits", tokenEnv)
	}
	peers := []string{opts["peer.1"], opts["peer.3"]}
	for _, p := range peers {
		if err := refused(p); err != nil {
			t.Fatalf("proxy %s not listening: %v", p, err)
		}
	}
	tgt := r.Target(&local.Processes{})
	if _, ok := fault.As[NetLever](tgt); !ok {
		t.Error("target lacks NetLever")
	}
	if _, ok := fault.As[fault.AppLever](tgt); !ok {
		t.Error("target lost the cluster's AppLever")
	}
	r.Close()
	for _, p := range peers {
		if err := refused(p); err == nil {
			t.Errorf("proxy %s still listening after Close", p)
		}
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// refused dials addr and returns the error only when nothing listens there.
// A listening proxy may accept and then reset the connection at once (its
// upstream node does not run in this test), and a slow dialer can see that
// reset as the connect's own error, so a reset counts as listening.
func refused(addr string) error {
	c, err := net.Dial("tcp", addr)
	if err == nil {
		c.Close()
		return nil
	}
	if errors.Is(err, syscall.ECONNRESET) {
		return nil
	}
	return err
}

// The node takes its token from the environment when no option gives one.
func TestWithEnvToken(t *testing.T) {
	nc := nodeprog.Config{Options: map[string]string{"heartbeat": "1s"}}
	if got := withEnvToken(nc, "s3cret").Options["token"]; got != "s3cret" {
		t.Errorf("token %q, want the environment's", got)
	}
	if _, ok := nc.Options["token"]; ok {
		t.Error("the caller's options map was modified")
	}
	nc.Options["token"] = "given"
	if got := withEnvToken(nc, "s3cret").Options["token"]; got != "given" {
		t.Errorf("token %q: an explicit option must win", got)
	}
}

// On kernel links (plan.KernelLinks, as the netns backend plans) there is
// no proxy: node i's peer.J is node J's own intra-cluster address, the
// target has no faultnet, and Close has nothing to close.
func TestRigOnKernelLinksDialsPeersDirectly(t *testing.T) {
	spec := testbed.Spec{System: Kind, Nodes: 3}
	plan := testbed.Plan{Hosts: []string{"10.213.5.11", "10.213.5.12", "10.213.5.13"}, Proxy: "10.213.5.1:0", KernelLinks: true}
	r, err := system{}.Prepare(&spec, plan, 7)
	if err != nil {
		t.Fatal(err)
	}
	opts := spec.NodeOptions(2)
	if opts["peer.1"] != "10.213.5.11:9080" || opts["peer.3"] != "10.213.5.13:9080" || opts["peer.2"] != "" {
		t.Errorf("node 2 peers %v: want node 1's and node 3's intra addresses", opts)
	}
	if nl, ok := fault.As[NetLever](r.Target(&local.Processes{})); ok && nl.FaultNet() != nil {
		t.Error("a faultnet on kernel links")
	}
	if err := r.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}
