package kernelfault

import (
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The engine applies one typed kernel fault (Fault) to a target given as
// namespaces and a cgroup, and proves it. It is what both the warden (the
// controller's faults through its socket) and a backend acting directly
// call; nothing here knows about runs, nodes or the warden. A target is a
// network namespace (a name under /run/netns, or a path such as
// /proc/PID/ns/net for a container) plus cgroup directories, so a
// container backend serves the same faults.

// Target is where a kernel fault acts.
type Target struct {
	Netns  string   `json:"netns,omitempty"`  // a name under /run/netns, or /proc/PID/ns/net
	Iface  string   `json:"iface,omitempty"`  // the interface (default eth0)
	Cgroup []string `json:"cgroup,omitempty"` // cgroup dirs: the v1 freezer or the v2 dir first
}

// Rule is a netfilter fault: an nft table in the target's namespace
// dropping (rejecting, or losing with probability Loss) the traffic to
// and from Addrs, or every packet on the interface (All).
type Rule struct {
	Table  string   `json:"table"`
	Addrs  []string `json:"addrs,omitempty"`
	All    bool     `json:"all,omitempty"`
	Reject bool     `json:"reject,omitempty"`
	Loss   float64  `json:"loss,omitempty"` // in (0, 1); 0 drops all
	Probe  []string `json:"probe"`          // addresses the proof's datagrams go to
}

// Shaping caps the target's outgoing traffic to Addrs (or All) at Rate
// bytes a second: htb with a tbf class and u32 filters.
type Shaping struct {
	Addrs []string `json:"addrs,omitempty"`
	All   bool     `json:"all,omitempty"`
	Rate  int64    `json:"rate"`
	Probe []string `json:"probe"`
}

// Fault is one typed kernel fault: exactly one of Rule, Shape, Freeze,
// Queue, Proc. Queue and Proc keep something running in the process that
// applies them (a delayer, a helper process) until the revert.
type Fault struct {
	ID     string    `json:"id"` // the caller's name for it, unique in a run
	Target Target    `json:"target"`
	Rule   *Rule     `json:"rule,omitempty"`
	Shape  *Shaping  `json:"shape,omitempty"`
	Freeze bool      `json:"freeze,omitempty"` // freeze the target's cgroup
	Queue  *Queueing `json:"queue,omitempty"`
	Proc   *Helper   `json:"proc,omitempty"`
}

var (
	faultIDRE = regexp.MustCompile(`^[a-z0-9][a-z0-9#._-]{0,47}$`)
	nsNameRE  = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$`)
	nsPathRE  = regexp.MustCompile(`^/proc/[0-9]{1,10}/ns/net$`)
	ifaceRE   = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}$`)
	tableRE   = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)
)

// maxAddrs bounds the addresses of one rule.
const maxAddrs = 256

// Check refuses a fault that is malformed: no or several mechanisms, a
// name or path that is not one, an address that is not IPv4, a loss,
// rate, delay or size out of range, an unknown helper.
func (f Fault) Check() error {
	if !faultIDRE.MatchString(f.ID) {
		return fmt.Errorf("fault id %q: want [a-z0-9#._-], up to 48", f.ID)
	}
	n := 0
	for _, set := range []bool{f.Rule != nil, f.Shape != nil, f.Freeze, f.Queue != nil, f.Proc != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("fault %s: want exactly one of rule, shape, freeze, queue, proc (got %d)", f.ID, n)
	}
	switch {
	case f.Freeze:
		return checkCgroup(f.Target.Cgroup)
	case f.Queue != nil:
		if err := f.Target.checkNet(); err != nil {
			return fmt.Errorf("fault %s: %w", f.ID, err)
		}
		return f.Queue.check(f.ID, f.Target)
	case f.Proc != nil:
		return f.Proc.check(f.ID, f.Target)
	}
	if err := f.Target.checkNet(); err != nil {
		return fmt.Errorf("fault %s: %w", f.ID, err)
	}
	if r := f.Rule; r != nil {
		if !tableRE.MatchString(r.Table) {
			return fmt.Errorf("fault %s: table %q: want [a-z][a-z0-9_]", f.ID, r.Table)
		}
		if !(r.Loss >= 0 && r.Loss < 1) {
			return fmt.Errorf("fault %s: loss %v: want [0, 1)", f.ID, r.Loss)
		}
		return checkPeers(f.ID, r.Addrs, r.All, r.Probe)
	}
	s := f.Shape
	if s.Rate < 1 || s.Rate > 1<<40 {
		return fmt.Errorf("fault %s: rate %d bytes/s: want 1..2^40", f.ID, s.Rate)
	}
	return checkPeers(f.ID, s.Addrs, s.All, s.Probe)
}

func (t Target) checkNet() error {
	if !nsNameRE.MatchString(t.Netns) && !nsPathRE.MatchString(t.Netns) {
		return fmt.Errorf("netns %q: want a name under /run/netns or /proc/PID/ns/net", t.Netns)
	}
	if t.Iface != "" && !ifaceRE.MatchString(t.Iface) {
		return fmt.Errorf("iface %q: not an interface name", t.Iface)
	}
	return nil
}

func checkCgroup(dirs []string) error {
	if len(dirs) == 0 || len(dirs) > 8 {
		return fmt.Errorf("cgroup: want 1..8 directories, got %d", len(dirs))
	}
	for _, d := range dirs {
		if !strings.HasPrefix(d, "/sys/fs/cgroup/") || strings.Contains(d, "..") || filepath.Clean(d) != d {
			return fmt.Errorf("cgroup %q: want a clean path under /sys/fs/cgroup", d)
		}
	}
	return nil
}

func checkPeers(id string, addrs []string, all bool, probe []string) error {
	if all == (len(addrs) > 0) {
		return fmt.Errorf("fault %s: want addrs or all, not both or neither", id)
	}
	if len(addrs) > maxAddrs || len(probe) == 0 || len(probe) > maxAddrs {
		return fmt.Errorf("fault %s: %d addrs, %d probe targets: want 1..%d probes and at most %d addrs", id, len(addrs), len(probe), maxAddrs, maxAddrs)
	}
	for _, a := range append(append([]string(nil), addrs...), probe...) {
		if ip := net.ParseIP(a); ip == nil || ip.To4() == nil {
			return fmt.Errorf("fault %s: address %q: want IPv4", id, a)
		}
	}
	return nil
}

// Apply installs f and proves it took effect; it returns the evidence.
// On a failed proof it reverts what it installed.
func Apply(f Fault) (string, error) {
	if err := f.Check(); err != nil {
		return "", err
	}
	switch {
	case f.Rule != nil:
		return applyRule(f.Target, f.Rule)
	case f.Shape != nil:
		return applyShape(f.Target, f.Shape)
	case f.Queue != nil:
		return applyQueue(f.ID, f.Target, f.Queue)
	case f.Proc != nil:
		return applyProc(f.ID, f.Target, f.Proc)
	}
	return freeze(f.Target.Cgroup, true)
}

// Revert removes f and proves it is gone; a target whose namespace or
// cgroup went (the node was removed) has nothing left to revert. A queue
// or helper that another process applied (it died) is removed by name.
func Revert(f Fault) (string, error) {
	if err := f.Check(); err != nil {
		return "", err
	}
	switch {
	case f.Rule != nil:
		return revertRule(f.Target, f.Rule.Table)
	case f.Shape != nil:
		return revertShape(f.Target)
	case f.Queue != nil:
		return revertQueue(f.ID, f.Target, f.Queue)
	case f.Proc != nil:
		return revertProc(f.ID, f.Target, f.Proc)
	}
	return freeze(f.Target.Cgroup, false)
}

func (t Target) path() string {
	if strings.HasPrefix(t.Netns, "/") {
		return t.Netns
	}
	return "/run/netns/" + t.Netns
}

func (t Target) iface() string {
	if t.Iface == "" {
		return "eth0"
	}
	return t.Iface
}

func (t Target) gone() bool { _, err := os.Stat(t.path()); return err != nil }

// in runs bin in the target's network namespace and returns its output.
func (t Target) in(stdin, bin string, args ...string) (string, error) {
	cmd := exec.Command("nsenter", append([]string{"--net=" + t.path(), "--", bin}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s in %s: %v: %s", bin, strings.Join(args, " "), t.Netns, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

func applyRule(t Target, r *Rule) (string, error) {
	out, in := `oifname "`+t.iface()+`"`, `iifname "`+t.iface()+`"`
	if !r.All {
		set := "{ " + strings.Join(r.Addrs, ", ") + " }"
		out, in = "ip daddr "+set, "ip saddr "+set
	}
	verdict := "drop"
	if r.Reject {
		verdict = "reject with icmpx type port-unreachable"
	}
	pre := ""
	if r.Loss > 0 {
		pre = fmt.Sprintf("numgen random mod 10000 < %d ", int(math.Round(r.Loss*10000)))
	}
	script := fmt.Sprintf(`table inet %s {
	chain out { type filter hook output priority 0; policy accept; %s %scounter %s; }
	chain in { type filter hook input priority 0; policy accept; %s %scounter %s; }
}
`, r.Table, out, pre, verdict, in, pre, verdict)
	if _, err := t.in(script, "nft", "-f", "-"); err != nil {
		return "", err
	}
	undo := func() error { _, err := revertRule(t, r.Table); return err }
	// Enough probes that a rule losing a fraction Loss misses all of
	// them with probability below 1e-9.
	probes := 20
	if r.Loss > 0 {
		probes = min(int(math.Ceil(21/r.Loss)), 20000)
	}
	if err := InNetns(t.path(), func() error { return SendProbes(r.Probe, probes) }); err != nil {
		return "", withUndo(fmt.Errorf("probe: %w", err), undo)
	}
	pkts, err := outCounter(t, r.Table)
	if err != nil || pkts == 0 {
		return "", withUndo(fmt.Errorf("the rule did not take effect: %d of %d probe packets matched (%v)", pkts, probes*len(r.Probe), err), undo)
	}
	what := "dropping"
	if r.Reject {
		what = "rejecting"
	}
	if r.Loss > 0 {
		what = fmt.Sprintf("losing %.4g of", r.Loss)
	}
	return fmt.Sprintf("nft table inet %s in %s %s packets to/from %s: probe %d packets, rule counter %d",
		r.Table, t.Netns, what, strings.Join(r.Probe, ","), probes*len(r.Probe), pkts), nil
}

func revertRule(t Target, table string) (string, error) {
	if _, err := t.in("delete table inet "+table+"\n", "nft", "-f", "-"); err != nil {
		if t.gone() {
			return "namespace " + t.Netns + " gone, its rules with it", nil
		}
		if tables, lerr := t.in("", "nft", "list", "tables"); lerr == nil && !strings.Contains(tables+"\n", " "+table+"\n") {
			return "nft table inet " + table + " already gone from " + t.Netns, nil // a lapsed lease reverted it
		}
		return "", err
	}
	tables, err := t.in("", "nft", "list", "tables")
	if err != nil || strings.Contains(tables+"\n", " "+table+"\n") {
		return "", fmt.Errorf("table %s still listed in %s (%v)", table, t.Netns, err)
	}
	return fmt.Sprintf("nft table inet %s deleted from %s; tables left: %d", table, t.Netns, strings.Count(tables, "table ")), nil
}

var counterRE = regexp.MustCompile(`counter packets (\d+)`)

// outCounter is the packet counter of table's output rule.
func outCounter(t Target, table string) (int, error) {
	out, err := t.in("", "nft", "list", "chain", "inet", table, "out")
	if err != nil {
		return 0, err
	}
	m := counterRE.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no counter in %q", out)
	}
	return strconv.Atoi(m[1])
}

// SendProbes sends n UDP datagrams to the discard port of each target.
func SendProbes(targets []string, n int) error {
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

// ShapeRoot is the handle of the root qdisc a bandwidth fault adds: a
// root htb of this handle is faultbench's, so a cleanup may delete it from
// a namespace that is not the run's own (an attached container's).
const ShapeRoot = "fb:"

func applyShape(t Target, s *Shaping) (string, error) {
	dev := t.iface()
	dsts := s.Addrs
	if s.All {
		dsts = []string{"0.0.0.0/0"}
	}
	burst := strconv.FormatInt(max(s.Rate/50, 16<<10), 10)
	rate := fmt.Sprintf("%dbps", s.Rate)
	cmds := [][]string{
		// Unclassified traffic leaves through htb directly, unshaped.
		{"qdisc", "add", "dev", dev, "root", "handle", ShapeRoot, "htb"},
		{"class", "add", "dev", dev, "parent", ShapeRoot, "classid", ShapeRoot + "3", "htb", "rate", rate, "ceil", rate, "burst", burst},
		{"qdisc", "add", "dev", dev, "parent", ShapeRoot + "3", "handle", "30:", "tbf", "rate", rate, "burst", burst, "latency", "200ms"},
	}
	for _, d := range dsts {
		if !strings.Contains(d, "/") {
			d += "/32"
		}
		cmds = append(cmds, []string{"filter", "add", "dev", dev, "parent", ShapeRoot, "protocol", "ip", "prio", "1", "u32", "match", "ip", "dst", d, "flowid", ShapeRoot + "3"})
	}
	undo := func() error { _, err := revertShape(t); return err }
	for i, args := range cmds {
		if _, err := t.in("", "tc", args...); err != nil {
			if i == 0 {
				return "", err // nothing installed (a qdisc is already there)
			}
			return "", withUndo(err, undo)
		}
	}
	if err := InNetns(t.path(), func() error { return SendProbes(s.Probe, 20) }); err != nil {
		return "", withUndo(fmt.Errorf("probe: %w", err), undo)
	}
	sent, got, err := tbfStats(t)
	if err != nil || sent == 0 {
		return "", withUndo(fmt.Errorf("the tbf did not take effect: it passed %d bytes of the probe (%v)", sent, err), undo)
	}
	return fmt.Sprintf("tbf qdisc 30: on %s in %s, rate %s, to %s: probe passed it (%d bytes sent through the bucket)",
		dev, t.Netns, got, strings.Join(dsts, ","), sent), nil
}

func revertShape(t Target) (string, error) {
	if _, err := t.in("", "tc", "qdisc", "del", "dev", t.iface(), "root"); err != nil {
		if t.gone() {
			return "namespace " + t.Netns + " gone, its qdiscs with it", nil
		}
		if out, lerr := t.in("", "tc", "qdisc", "show", "dev", t.iface()); lerr == nil && !strings.Contains(out, "tbf") {
			return "no tbf left on " + t.iface() + " in " + t.Netns, nil // a lapsed lease reverted it
		}
		return "", err
	}
	out, err := t.in("", "tc", "qdisc", "show", "dev", t.iface())
	if err != nil || strings.Contains(out, "tbf") {
		return "", fmt.Errorf("tbf still on %s in %s (%v): %s", t.iface(), t.Netns, err, out)
	}
	return fmt.Sprintf("qdiscs removed from %s in %s; now: %s", t.iface(), t.Netns, strings.TrimSpace(out)), nil
}

var tbfSentRE = regexp.MustCompile(`(?s)qdisc tbf 30:.*?rate (\S+).*?Sent (\d+) bytes`)

// tbfStats reads the bytes sent through tbf 30: and its rate.
func tbfStats(t Target) (int64, string, error) {
	out, err := t.in("", "tc", "-s", "qdisc", "show", "dev", t.iface())
	if err != nil {
		return 0, "", err
	}
	m := tbfSentRE.FindStringSubmatch(out)
	if m == nil {
		return 0, "", fmt.Errorf("no tbf 30: in %q", out)
	}
	sent, _ := strconv.ParseInt(m[2], 10, 64)
	return sent, m[1], nil
}

// freeze freezes (or thaws) the cgroup whose freezer is dirs[0] (v2:
// cgroup.freeze; v1: freezer.state) and waits, bounded, until the kernel
// reports the state reached.
func freeze(dirs []string, on bool) (string, error) {
	dir := dirs[0]
	if _, err := os.Stat(dir); err != nil && !on {
		return "cgroup " + dir + " gone", nil
	}
	v2 := true
	file, want, state := filepath.Join(dir, "cgroup.freeze"), "0", "frozen 0"
	if _, err := os.Stat(file); err != nil {
		v2, file, want, state = false, filepath.Join(dir, "freezer.state"), "THAWED", "THAWED"
	}
	if on {
		want, state = map[bool]string{true: "1", false: "FROZEN"}[v2], map[bool]string{true: "frozen 1", false: "FROZEN"}[v2]
	}
	if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
		return "", fmt.Errorf("write %s to %s: %w", want, file, err)
	}
	read := filepath.Join(dir, "cgroup.events")
	if !v2 {
		read = file
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		b, err := os.ReadFile(read)
		if err == nil && strings.Contains(string(b), state) {
			return fmt.Sprintf("%s reads %q", read, state), nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s does not read %q 2s after writing %s to %s (%v)", read, state, want, file, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func withUndo(err error, undo func() error) error {
	if uerr := undo(); uerr != nil {
		return fmt.Errorf("%w; and its revert failed: %v", err, uerr)
	}
	return err
}
