package netns

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"os/exec"
	"strings"

	"github.com/faultbench/faultbench/internal/warden"
)

// The run's subnet is one /24 of subnetBlock (10.213.0.0/16): the bridge's
// gateway (the controller's side) is .1, node i is .(firstHost+i-1). Only
// this package holds these literals.
const (
	subnetA, subnetB = 10, 213
	firstHost        = 11
)

// network is the run's private topology: a bridge in its own namespace,
// one veth from the host (the controller's side, holding the gateway
// address) and one per node, whose other end is eth0 in the node's
// namespace.
type network struct {
	run    string // 8 hex digits of the run id: names stay under 15 bytes
	third  int    // the /24's third octet
	nodes  int
	hostIf string
	brNS   string
	nodeNS []string
}

// pickSubnet finds a /24 in 10.213.0.0/16 that no interface address and no
// route of the host overlaps, starting at a place that depends on the run
// id so concurrent runs try different ones.
func pickSubnet(runID string) (int, error) {
	used, err := usedNets()
	if err != nil {
		return 0, err
	}
	h := fnv.New32a()
	h.Write([]byte(runID))
	start := int(h.Sum32() % 254)
	for k := range 254 {
		third := 1 + (start+k)%254
		if free(used, third) {
			return third, nil
		}
	}
	return 0, fmt.Errorf("no free /24 in %d.%d.0.0/16: every one overlaps an address or route of this host", subnetA, subnetB)
}

// free reports whether the /24 with this third octet overlaps none of used.
func free(used []*net.IPNet, third int) bool {
	_, cand, _ := net.ParseCIDR(fmt.Sprintf("%d.%d.%d.0/24", subnetA, subnetB, third))
	for _, u := range used {
		if u.Contains(cand.IP) || cand.Contains(u.IP) {
			return false
		}
	}
	return true
}

// usedNets lists the networks of the host's interface addresses and of its
// IPv4 routes (default route excepted).
func usedNets() ([]*net.IPNet, error) {
	var out []*net.IPNet
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			out = append(out, &net.IPNet{IP: n.IP.Mask(n.Mask), Mask: n.Mask})
		}
	}
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return out, nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 8 {
			continue
		}
		dst, mask := hexIP(fs[1]), hexIP(fs[7])
		if dst == nil || mask == nil {
			continue
		}
		m := net.IPMask(mask)
		if ones, _ := m.Size(); ones == 0 {
			continue
		}
		out = append(out, &net.IPNet{IP: dst, Mask: m})
	}
	return out, nil
}

// hexIP parses /proc/net/route's little-endian hex address.
func hexIP(s string) net.IP {
	var v uint32
	if _, err := fmt.Sscanf(s, "%08X", &v); err != nil {
		return nil
	}
	return net.IPv4(byte(v), byte(v>>8), byte(v>>16), byte(v>>24)).To4()
}

func newNetwork(runID string, third, nodes int) *network {
	short := runID
	if len(short) > 8 {
		short = short[:8]
	}
	n := &network{run: short, third: third, nodes: nodes,
		hostIf: "fb" + short, brNS: "fb-" + runID + "-br"}
	for i := 1; i <= nodes; i++ {
		n.nodeNS = append(n.nodeNS, fmt.Sprintf("fb-%s-n%d", runID, i))
	}
	return n
}

func (n *network) gateway() string { return fmt.Sprintf("%d.%d.%d.1", subnetA, subnetB, n.third) }

func (n *network) host(i int) string {
	return fmt.Sprintf("%d.%d.%d.%d", subnetA, subnetB, n.third, firstHost+i-1)
}

func (n *network) ns(i int) string { return n.nodeNS[i-1] }

// create builds the topology, journalling each object before it exists;
// on error the caller removes what the journal lists.
func (n *network) create(j interface{ Add(kind, name string) error }) error {
	// Planned a moment ago; a run started since may have taken it.
	if used, err := usedNets(); err == nil && !free(used, n.third) {
		return fmt.Errorf("subnet %d.%d.%d.0/24 is now in use on this host (another run started meanwhile?): run again", subnetA, subnetB, n.third)
	}
	steps := []struct {
		kind, name string
		cmds       [][]string
	}{
		{warden.KindNetns, n.brNS, [][]string{
			{"netns", "add", n.brNS},
			{"-n", n.brNS, "link", "set", "lo", "up"},
			{"-n", n.brNS, "link", "add", "br0", "type", "bridge"},
			{"-n", n.brNS, "link", "set", "br0", "up"},
		}},
		{warden.KindLink, n.hostIf, [][]string{
			{"link", "add", n.hostIf, "type", "veth", "peer", "name", "uplink", "netns", n.brNS},
			{"addr", "add", n.gateway() + "/24", "dev", n.hostIf},
			{"link", "set", n.hostIf, "up"},
			{"-n", n.brNS, "link", "set", "dev", "uplink", "master", "br0", "up"},
		}},
	}
	for i := 1; i <= n.nodes; i++ {
		ns, br := n.ns(i), fmt.Sprintf("n%d", i)
		steps = append(steps, struct {
			kind, name string
			cmds       [][]string
		}{warden.KindNetns, ns, [][]string{
			{"netns", "add", ns},
			{"-n", ns, "link", "set", "lo", "up"},
			{"-n", n.brNS, "link", "add", br, "type", "veth", "peer", "name", "eth0", "netns", ns},
			{"-n", n.brNS, "link", "set", br, "master", "br0", "up"},
			{"-n", ns, "addr", "add", n.host(i) + "/24", "dev", "eth0"},
			{"-n", ns, "link", "set", "eth0", "up"},
		}})
	}
	for _, s := range steps {
		if err := j.Add(s.kind, s.name); err != nil {
			return err
		}
		for _, c := range s.cmds {
			if err := ip(c...); err != nil {
				return err
			}
		}
	}
	return nil
}

// ip runs ip(8); the error carries its output.
func ip(args ...string) error { return run("ip", args...) }

// run runs a binary; the error names it, its arguments and its output.
func run(bin string, args ...string) error {
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// inNS runs bin in namespace ns (ip netns exec) and returns its output.
func inNS(ns, bin string, args ...string) (string, error) {
	argv := append([]string{"netns", "exec", ns, bin}, args...)
	out, err := exec.Command("ip", argv...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s in %s: %v: %s", bin, strings.Join(args, " "), ns, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
