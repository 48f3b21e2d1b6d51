package docker

import (
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/faultbench/faultbench/internal/kernelfault"
	"github.com/faultbench/faultbench/internal/record"
)

// The kernel levers act in a node's network namespace, which its holder
// container owns: entered as /proc/PID/ns/net of the holder's process,
// with nsenter for nft and tc, with setns for the probes. The rules outlive
// an app-crash (the holder stays) and go with a node-crash (the namespace
// goes), as on a real host.

var seq atomic.Int64

// kernelSite is where the kernel levers act: the network namespaces of a
// cluster's nodes (an owned node's holder container, an attached
// container itself) and the addresses of their peers.
type kernelSite interface {
	// nsOf is node id's namespace (/proc/PID/ns/net) and the short id of
	// the container that holds it, for events; an error when it is down.
	nsOf(id int) (ns, holder string, err error)
	// peerAddrs are the addresses of node id's peers p; the users' side
	// (the host's gateway, an entry point) when p.Client or p.All.
	peerAddrs(id int, p kernelfault.Peers) []string
	// tableName names a new nft table.
	tableName() string
	// device is node id's interface toward its peers in namespace ns.
	device(id int, ns string) (string, error)
	kevent(l kernelfault.Label, node int, kind, detail string)
}

func (c *Containers) kevent(l kernelfault.Label, node int, kind, detail string) {
	c.emit(record.Event{TS: c.now(), Kind: kind, Node: node, Fault: l.Fault, ID: l.ID, Detail: detail})
}

// nsOf is node id's namespace path, from its holder's pid.
func (c *Containers) nsOf(id int) (string, string, error) {
	if id < 1 || id > len(c.nodes) {
		return "", "", fmt.Errorf("no node %d (cluster has %d)", id, len(c.nodes))
	}
	n := c.nodes[id-1]
	info, err := c.inspect(n.holder)
	if err != nil {
		return "", "", err
	}
	if !info.Running || info.Pid <= 0 {
		return "", "", fmt.Errorf("node %d is down (holder %s)", id, info.Status)
	}
	return fmt.Sprintf("/proc/%d/ns/net", info.Pid), shortID(n.holder), nil
}

func (c *Containers) tableName() string {
	return fmt.Sprintf("%s%d", runTable(c.spec.RunID), seq.Add(1))
}

func (c *Containers) device(int, string) (string, error) { return "eth0", nil }

// peerAddrs are the addresses probes go to for peers p of node id: the
// run network's gateway (the controller's side) for the users and for
// every packet.
func (c *Containers) peerAddrs(id int, p kernelfault.Peers) []string {
	if p.Client || p.All {
		return []string{c.subnet.Addr().Next().String()}
	}
	var out []string
	for _, m := range p.Nodes {
		if m != id && m >= 1 && m <= len(c.nodes) {
			out = append(out, c.Host(m))
		}
	}
	return out
}

// inNS runs a tool in namespace ns, with stdin.
func inNS(ns, stdin, bin string, args ...string) (string, error) {
	cmd := exec.Command("nsenter", append([]string{"--net=" + ns, "--", bin}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s in %s: %v: %s", bin, strings.Join(args, " "), ns, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Filter installs an nft table in node id's namespace that drops (rejects,
// or loses a fraction of) the traffic to and from the peers, and proves it
// by probe datagrams counted by the rule.
func (c *Containers) Filter(l kernelfault.Label, id int, b kernelfault.Block) (kernelfault.Undo, error) {
	return filter(c, l, id, b)
}

// Shape caps node id's outgoing traffic to the peers with a tbf under an
// htb class, and proves the probes passed through it.
func (c *Containers) Shape(l kernelfault.Label, id int, p kernelfault.Peers, bytesPerSec int64) (kernelfault.Undo, error) {
	return shape(c, l, id, p, bytesPerSec)
}

// nsWait bounds how long a kernel fault waits for a node's namespace: a
// container the engine (restart policy) or the operator is restarting has
// none, or gets a new one between the lookup and nsenter.
const nsWait = 10 * time.Second

// freshNS applies a kernel fault with apply, which reports the namespace
// it used. When that failed because the node was down or its namespace
// changed under it (a restart), it waits up to nsWait for the node to be
// up and applies it again in the new namespace, at most three times; an
// error that is not about the namespace is returned at once.
func freshNS(s kernelSite, id int, apply func() (string, kernelfault.Undo, error)) (kernelfault.Undo, error) {
	var err error
	for try := 1; try <= 3; try++ {
		var used string
		var undo kernelfault.Undo
		used, undo, err = apply()
		if err == nil {
			return undo, nil
		}
		if !nsChanged(s, id, used) {
			return nil, err
		}
	}
	return nil, err
}

// nsChanged waits (bounded by nsWait) for node id to have a namespace and
// reports whether it differs from used ("" when there was none).
func nsChanged(s kernelSite, id int, used string) bool {
	deadline := time.Now().Add(nsWait)
	for {
		ns, _, err := s.nsOf(id)
		if err == nil {
			return ns != used
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func filter(s kernelSite, l kernelfault.Label, id int, b kernelfault.Block) (kernelfault.Undo, error) {
	return freshNS(s, id, func() (string, kernelfault.Undo, error) { return filterOnce(s, l, id, b) })
}

func filterOnce(s kernelSite, l kernelfault.Label, id int, b kernelfault.Block) (string, kernelfault.Undo, error) {
	ns, holder, err := s.nsOf(id)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", l.Fault, err)
	}
	ts := s.peerAddrs(id, b.Peers)
	out, in := `oifname != "lo"`, `iifname != "lo"`
	if !b.Peers.All {
		if len(ts) == 0 {
			return ns, nil, fmt.Errorf("%s: no peer of node %d to block", l.Fault, id)
		}
		set := "{ " + strings.Join(ts, ", ") + " }"
		out, in = "ip daddr "+set, "ip saddr "+set
	}
	verdict, pre := "drop", ""
	if b.Reject {
		verdict = "reject with icmpx type port-unreachable"
	}
	if b.Loss > 0 {
		pre = fmt.Sprintf("numgen random mod 10000 < %d ", int(math.Round(b.Loss*10000)))
	}
	table := s.tableName()
	script := fmt.Sprintf("table inet %s {\n\tchain out { type filter hook output priority 0; policy accept; %s %scounter %s; }\n\tchain in { type filter hook input priority 0; policy accept; %s %scounter %s; }\n}\n",
		table, out, pre, verdict, in, pre, verdict)
	t0 := time.Now()
	if _, err := inNS(ns, script, "nft", "-f", "-"); err != nil {
		return ns, nil, fmt.Errorf("%s on node %d: %w", l.Fault, id, err)
	}
	undo := onceUndo(func() error { return unfilter(s, l, id, table) })
	probes := 20
	if b.Loss > 0 {
		probes = min(int(math.Ceil(21/b.Loss)), 20000)
	}
	if err := inNetns(ns, func() error { return sendProbes(ts, probes) }); err != nil {
		return ns, nil, joinUndo(fmt.Errorf("%s on node %d: probe: %w", l.Fault, id, err), undo)
	}
	pkts, err := outCounter(ns, table)
	if err != nil || pkts == 0 {
		return ns, nil, joinUndo(fmt.Errorf("%s on node %d: the rule did not take effect: %d probe packets matched (%v)", l.Fault, id, pkts, err), undo)
	}
	what := verdict + " all"
	if b.Loss > 0 {
		what = fmt.Sprintf("lose %.4g of the", b.Loss)
	}
	whom := "to/from " + strings.Join(ts, ",")
	if b.Peers.All {
		whom = "on every interface but lo (probed to " + strings.Join(ts, ",") + ")"
	}
	s.kevent(l, id, "fault.effective", fmt.Sprintf("mechanism nft: table inet %s in container %s's namespace: %s packets %s after %s: rule counted %d of %d probes",
		table, holder, what, whom, ms(time.Since(t0)), pkts, probes*len(ts)))
	return ns, undo, nil
}

// unfilter deletes the table and checks it is gone; a table that went
// with its namespace (the node is down, or came back in a new one) is
// reverted already.
func unfilter(s kernelSite, l kernelfault.Label, id int, table string) error {
	ns, _, err := s.nsOf(id)
	if err != nil {
		return nil // the namespace went with the node, the rule with it
	}
	t0 := time.Now()
	_, delErr := inNS(ns, "", "nft", "delete", "table", "inet", table)
	tables, err := inNS(ns, "", "nft", "list", "tables")
	if err != nil || strings.Contains(tables+"\n", " "+table+"\n") {
		return fmt.Errorf("revert %s on node %d: table %s still listed (%v; %v)", l.Fault, id, table, delErr, err)
	}
	detail := fmt.Sprintf("mechanism nft: table inet %s deleted after %s", table, ms(time.Since(t0)))
	if delErr != nil {
		detail = fmt.Sprintf("mechanism nft: table inet %s gone with the namespace it was in", table)
	}
	s.kevent(l, id, "fault.reverted", detail)
	return nil
}

var counterRE = regexp.MustCompile(`counter packets (\d+)`)

func outCounter(ns, table string) (int, error) {
	out, err := inNS(ns, "", "nft", "list", "chain", "inet", table, "out")
	if err != nil {
		return 0, err
	}
	m := counterRE.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no counter in %q", out)
	}
	return strconv.Atoi(m[1])
}

func sendProbes(targets []string, n int) error {
	for _, t := range targets {
		conn, err := net.Dial("udp", net.JoinHostPort(t, "9"))
		if err != nil {
			return err
		}
		for range n {
			_, _ = conn.Write([]byte("faultbench probe"))
		}
		_ = conn.Close()
	}
	return nil
}

// inNetns runs f on an OS thread inside namespace path ns; the thread
// returns to this process's namespace after, or dies with its goroutine.
func inNetns(ns string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- err
			return
		}
		defer self.Close()
		target, err := os.Open(ns)
		if err != nil {
			errc <- err
			runtime.UnlockOSThread()
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			runtime.UnlockOSThread()
			return
		}
		err = f()
		if unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

func joinUndo(err error, undo kernelfault.Undo) error {
	if uerr := undo(); uerr != nil {
		return fmt.Errorf("%w; and its revert failed: %v", err, uerr)
	}
	return err
}

func onceUndo(f func() error) kernelfault.Undo {
	var once sync.Once
	var err error
	return func() error { once.Do(func() { err = f() }); return err }
}

// shapeRoot is the handle of the root qdisc a bandwidth fault adds: a
// root qdisc of this handle is faultbench's, so the warden may delete it.
const shapeRoot = "fb:"

func shape(s kernelSite, l kernelfault.Label, id int, p kernelfault.Peers, bytesPerSec int64) (kernelfault.Undo, error) {
	return freshNS(s, id, func() (string, kernelfault.Undo, error) { return shapeOnce(s, l, id, p, bytesPerSec) })
}

func shapeOnce(s kernelSite, l kernelfault.Label, id int, p kernelfault.Peers, bytesPerSec int64) (string, kernelfault.Undo, error) {
	ns, holder, err := s.nsOf(id)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", l.Fault, err)
	}
	dev, err := s.device(id, ns)
	if err != nil {
		return ns, nil, fmt.Errorf("%s on node %d: %w", l.Fault, id, err)
	}
	probeTo := s.peerAddrs(id, p)
	dsts := probeTo
	if p.All {
		dsts = []string{"0.0.0.0/0"}
	}
	if len(dsts) == 0 {
		return ns, nil, fmt.Errorf("%s on node %d: no peer to shape", l.Fault, id)
	}
	burst := strconv.FormatInt(max(bytesPerSec/50, 16<<10), 10)
	rate := fmt.Sprintf("%dbps", bytesPerSec)
	cmds := [][]string{
		{"qdisc", "add", "dev", dev, "root", "handle", shapeRoot, "htb"},
		{"class", "add", "dev", dev, "parent", shapeRoot, "classid", shapeRoot + "3", "htb", "rate", rate, "ceil", rate, "burst", burst},
		{"qdisc", "add", "dev", dev, "parent", shapeRoot + "3", "handle", "30:", "tbf", "rate", rate, "burst", burst, "latency", "200ms"},
	}
	for _, d := range dsts {
		if !strings.Contains(d, "/") {
			d += "/32"
		}
		cmds = append(cmds, []string{"filter", "add", "dev", dev, "parent", shapeRoot, "protocol", "ip", "prio", "1", "u32", "match", "ip", "dst", d, "flowid", shapeRoot + "3"})
	}
	t0 := time.Now()
	undo := onceUndo(func() error { return unshape(s, l, id, dev) })
	for i, args := range cmds {
		if _, err := inNS(ns, "", "tc", args...); err != nil {
			err = fmt.Errorf("%s on node %d: %w", l.Fault, id, err)
			if i == 0 {
				return ns, nil, err
			}
			return ns, nil, joinUndo(err, undo)
		}
	}
	if err := inNetns(ns, func() error { return sendProbes(probeTo, 20) }); err != nil {
		return ns, nil, joinUndo(fmt.Errorf("%s on node %d: probe: %w", l.Fault, id, err), undo)
	}
	out, err := inNS(ns, "", "tc", "-s", "qdisc", "show", "dev", dev)
	m := tbfSentRE.FindStringSubmatch(out)
	if err != nil || m == nil || m[1] == "0" {
		return ns, nil, joinUndo(fmt.Errorf("%s on node %d: the tbf did not take effect (%v): %s", l.Fault, id, err, out), undo)
	}
	s.kevent(l, id, "fault.effective", fmt.Sprintf("mechanism tc: tbf rate %s on %s of container %s's namespace to %s after %s: %s bytes of probe through it",
		rate, dev, holder, strings.Join(dsts, ","), ms(time.Since(t0)), m[1]))
	return ns, undo, nil
}

var tbfSentRE = regexp.MustCompile(`(?s)qdisc tbf 30:.*?Sent (\d+) bytes`)

func unshape(s kernelSite, l kernelfault.Label, id int, dev string) error {
	ns, _, err := s.nsOf(id)
	if err != nil {
		return nil
	}
	t0 := time.Now()
	if _, err := inNS(ns, "", "tc", "qdisc", "del", "dev", dev, "root"); err != nil {
		return fmt.Errorf("revert %s on node %d: %w", l.Fault, id, err)
	}
	out, err := inNS(ns, "", "tc", "qdisc", "show", "dev", dev)
	if err != nil || strings.Contains(out, "tbf") {
		return fmt.Errorf("revert %s on node %d: tbf still on %s (%v): %s", l.Fault, id, dev, err, out)
	}
	s.kevent(l, id, "fault.reverted", fmt.Sprintf("mechanism tc: qdiscs removed from %s after %s", dev, ms(time.Since(t0))))
	return nil
}
