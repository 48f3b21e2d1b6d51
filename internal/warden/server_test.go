package warden

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/kernelfault"
)

const testRun = "0123456789ab"

// serve starts a Server for testRun in a temporary Dir whose controller
// is pid, and returns a connected client.
func serve(t *testing.T, pid int) (*Server, net.Conn, *bufio.Reader) {
	t.Helper()
	old := Dir
	Dir = t.TempDir()
	t.Cleanup(func() { Dir = old })
	j, err := OpenFor(testRun, pid)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(testRun)
	if err != nil {
		t.Fatal(err)
	}
	var logged []string
	s := &Server{Run: testRun, Controller: pid, Journal: j, Renewed: make(chan struct{}, 1),
		Logf: func(f string, a ...any) { logged = append(logged, f) }}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.Serve(ctx, ln)
	conn, err := net.Dial("unix", SocketPath(testRun))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return s, conn, bufio.NewReader(conn)
}

func ask(t *testing.T, conn net.Conn, r *bufio.Reader, line string) string {
	t.Helper()
	if _, err := conn.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
	ans, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("no answer to %s: %v", line, err)
	}
	return strings.TrimSpace(ans)
}

func req(r Request) string {
	b, _ := json.Marshal(r)
	return string(b)
}

func TestServerRefusesAnotherProcess(t *testing.T) {
	// The controller is our parent, not us: our connection is not its.
	_, conn, r := serve(t, os.Getppid())
	ans, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(ans, "refused: not the controller") {
		t.Fatalf("answer %q, %v: want refused", ans, err)
	}
	if _, err := conn.Write([]byte(req(Request{Op: OpRenew, Run: testRun, Seq: 1}) + "\n")); err == nil {
		if _, err := r.ReadString('\n'); err == nil {
			t.Error("the connection stayed open after the refusal")
		}
	}
}

func TestServerAcceptsTypedRequestsInOrder(t *testing.T) {
	s, conn, r := serve(t, os.Getpid())
	if a := ask(t, conn, r, req(Request{Op: OpRenew, Run: testRun, Seq: 1})); a != "ok" {
		t.Fatalf("renew: %s", a)
	}
	select {
	case <-s.Renewed:
	default:
		t.Error("renew did not renew the lease")
	}
	rec := Request{Op: OpRecord, Run: testRun, Seq: 2, Kind: KindNetns, Name: "fb-" + testRun + "-n1"}
	if a := ask(t, conn, r, req(rec)); a != "ok" {
		t.Fatalf("record: %s", a)
	}
	if a := ask(t, conn, r, req(rec)); !strings.Contains(a, "replayed") {
		t.Errorf("replayed record: %s, want refused as replayed", a)
	}
	recs, err := Read(Path(testRun))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].Name != rec.Name {
		t.Errorf("journal = %+v, want the controller and one namespace", recs)
	}
}

func TestServerRefusesMalformedRequests(t *testing.T) {
	_, conn, r := serve(t, os.Getpid())
	bad := []string{
		`not json`,
		`{"op":"renew","run":"` + testRun + `","seq":1,"cmd":"rm -rf /"}`,
		`{"op":"exec","run":"` + testRun + `","seq":1}`,
		`{"op":"renew","run":"ffffffffffff","seq":1}`,
		`{"op":"record","run":"` + testRun + `","seq":1,"kind":"netns","name":"default"}`,
		`{"op":"record","run":"` + testRun + `","seq":1,"kind":"cgroup","name":"/sys/fs/cgroup/freezer/user.slice"}`,
		`{"op":"record","run":"` + testRun + `","seq":1,"kind":"link","name":"eth0"}`,
		`{"op":"renew","run":"` + testRun + `","seq":0}`,
		`{"op":"renew","run":"` + testRun + `","seq":1} {}`,
	}
	for _, line := range bad {
		if a := ask(t, conn, r, line); !strings.HasPrefix(a, "refused") {
			t.Errorf("%s: answer %q, want refused", line, a)
		}
	}
	if a := ask(t, conn, r, req(Request{Op: OpRenew, Run: testRun, Seq: 1})); a != "ok" {
		t.Errorf("a good request after the bad ones: %s", a)
	}
	if _, err := conn.Write([]byte(strings.Repeat("x", MaxRequest+10) + "\n")); err != nil {
		t.Fatal(err)
	}
	if a, _ := r.ReadString('\n'); !strings.Contains(a, "over") {
		t.Errorf("oversized request: %q, want refused", a)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(req(Request{Op: OpRenew, Run: testRun, Seq: 1})), uint64(0))
	f.Add([]byte(req(Request{Op: OpRecord, Run: testRun, Seq: 5, Kind: KindCgroup, Name: "/sys/fs/cgroup/freezer/faultbench/" + testRun + "/node-1"})), uint64(4))
	f.Add([]byte(`{"op":"record","run":"`+testRun+`","seq":2,"kind":"netns","name":"fb-`+testRun+`-br"}`), uint64(1))
	f.Add([]byte(`{}`), uint64(0))
	f.Add([]byte(req(Request{Op: OpInject, Run: testRun, Seq: 3, Fault: &kernelfault.Fault{ID: "link-down#1.7",
		Target: kernelfault.Target{Netns: "fb-" + testRun + "-n1"},
		Rule:   &kernelfault.Rule{Table: "fbf7", Addrs: []string{"10.213.9.12"}, Probe: []string{"10.213.9.12"}}}})), uint64(2))
	f.Add([]byte(req(Request{Op: OpInject, Run: testRun, Seq: 3, Fault: &kernelfault.Fault{ID: "bw",
		Target: kernelfault.Target{Netns: "fb-" + testRun + "-n2", Iface: "eth0"},
		Shape:  &kernelfault.Shaping{All: true, Rate: 1 << 20, Probe: []string{"10.213.9.1"}}}})), uint64(0))
	f.Add([]byte(req(Request{Op: OpInject, Run: testRun, Seq: 3, Fault: &kernelfault.Fault{ID: "fr",
		Target: kernelfault.Target{Cgroup: []string{"/sys/fs/cgroup/freezer/faultbench/" + testRun + "/node-1"}}, Freeze: true}})), uint64(0))
	f.Add([]byte(req(Request{Op: OpInject, Run: testRun, Seq: 4, Fault: &kernelfault.Fault{ID: "delay#2.n1.3",
		Target: kernelfault.Target{Netns: "fb-" + testRun + "-n1", Iface: "eth0"},
		Queue:  &kernelfault.Queueing{Num: 101, Addrs: []string{"10.213.9.1"}, Delay: 20 * time.Millisecond, Probe: []string{"10.213.9.1"}}}})), uint64(3))
	f.Add([]byte(req(Request{Op: OpInject, Run: testRun, Seq: 4, Fault: &kernelfault.Fault{ID: "cpu-hog#3.n2.4",
		Target: kernelfault.Target{Netns: "fb-" + testRun + "-n2", Cgroup: []string{"/sys/fs/cgroup/freezer/faultbench/" + testRun + "/node-2"}},
		Proc:   &kernelfault.Helper{Kind: kernelfault.HelperBurner, CPUs: 1}}})), uint64(3))
	f.Add([]byte(req(Request{Op: OpRevert, Run: testRun, Seq: 9, ID: "fr"})), uint64(8))
	f.Add([]byte(req(Request{Op: OpRecord, Run: testRun, Seq: 9, Kind: KindAux, Name: "4242"})), uint64(8))
	f.Fuzz(func(t *testing.T, line []byte, last uint64) {
		r, err := Decode(line, testRun, last)
		if err != nil {
			return
		}
		// Whatever is accepted is a typed request of this run, in order,
		// naming only this run's objects.
		if r.Run != testRun || r.Seq <= last || (r.Op != OpRenew && r.Op != OpRecord && r.Op != OpInject && r.Op != OpRevert) {
			t.Fatalf("accepted %+v (last %d)", r, last)
		}
		if r.Op == OpRecord && r.Kind != KindAux && (!strings.Contains(r.Name, testRun[:8]) || strings.Contains(r.Name, "..")) {
			t.Fatalf("accepted a foreign object %+v", r)
		}
		if r.Op == OpInject {
			checkAcceptedFault(t, *r.Fault)
		}
	})
}

// checkAcceptedFault fails unless f is a well-formed fault on testRun's
// objects only.
func checkAcceptedFault(t *testing.T, f kernelfault.Fault) {
	t.Helper()
	if err := f.Check(); err != nil {
		t.Fatalf("accepted a fault its own check refuses: %v", err)
	}
	if ns := f.Target.Netns; ns != "" && !strings.Contains(ns, testRun) && !strings.HasPrefix(ns, "/proc/") {
		t.Fatalf("accepted a foreign namespace %q", ns)
	}
	for _, d := range f.Target.Cgroup {
		if !strings.Contains(d, "/faultbench/"+testRun+"/") || strings.Contains(d, "..") {
			t.Fatalf("accepted a foreign cgroup %q", d)
		}
	}
	if r := f.Rule; r != nil && strings.ContainsAny(r.Table+strings.Join(r.Addrs, ""), " ;{}\"\n") {
		t.Fatalf("accepted nft syntax in a rule: %+v", r)
	}
	if q := f.Queue; q != nil && (strings.ContainsAny(strings.Join(q.Addrs, ""), " -;\n") || strings.HasPrefix(f.Target.Netns, "/") || strings.HasSuffix(f.Target.Netns, "-br")) {
		t.Fatalf("accepted a queue outside the run's nodes or with iptables syntax: %+v on %q", q, f.Target.Netns)
	}
	if h := f.Proc; h != nil && h.Kind != kernelfault.HelperBurner && h.Kind != kernelfault.HelperBalloon {
		t.Fatalf("accepted a helper that is not a burner or balloon: %+v", h)
	}
}

func TestServerRefusesFaultsOnObjectsNotOfItsRun(t *testing.T) {
	_, conn, r := serve(t, os.Getpid())
	ns := "fb-" + testRun + "-n1"
	cg := "/sys/fs/cgroup/freezer/faultbench/" + testRun + "/node-1"
	rule := &kernelfault.Rule{Table: "fbf1", Addrs: []string{"10.213.9.12"}, Probe: []string{"10.213.9.12"}}
	bad := map[string]kernelfault.Fault{
		"host namespace":    {ID: "a", Target: kernelfault.Target{Netns: "/proc/1/ns/net"}, Rule: rule},
		"another run":       {ID: "a", Target: kernelfault.Target{Netns: "fb-ffffffffffff-n1"}, Rule: rule},
		"the bridge":        {ID: "a", Target: kernelfault.Target{Netns: "fb-" + testRun + "-br"}, Rule: rule},
		"foreign cgroup":    {ID: "a", Target: kernelfault.Target{Cgroup: []string{"/sys/fs/cgroup/freezer/user.slice"}}, Freeze: true},
		"two mechanisms":    {ID: "a", Target: kernelfault.Target{Netns: ns, Cgroup: []string{"/sys/fs/cgroup/freezer/faultbench/" + testRun + "/node-1"}}, Rule: rule, Freeze: true},
		"nft in the table":  {ID: "a", Target: kernelfault.Target{Netns: ns}, Rule: &kernelfault.Rule{Table: "x; flush ruleset", All: true, Probe: rule.Probe}},
		"nft in an address": {ID: "a", Target: kernelfault.Target{Netns: ns}, Rule: &kernelfault.Rule{Table: "t", Addrs: []string{"1.2.3.4 }"}, Probe: rule.Probe}},
		"loss of 1":         {ID: "a", Target: kernelfault.Target{Netns: ns}, Rule: &kernelfault.Rule{Table: "t", All: true, Loss: 1, Probe: rule.Probe}},
		"no rate":           {ID: "a", Target: kernelfault.Target{Netns: ns}, Shape: &kernelfault.Shaping{All: true, Probe: rule.Probe}},
		"bad id":            {ID: "A B", Target: kernelfault.Target{Netns: ns}, Rule: rule},
		"queue on the bridge": {ID: "a", Target: kernelfault.Target{Netns: "fb-" + testRun + "-br"},
			Queue: &kernelfault.Queueing{Num: 101, All: true, Delay: time.Millisecond, Probe: rule.Probe}},
		"queue on a path": {ID: "a", Target: kernelfault.Target{Netns: "/proc/1/ns/net"},
			Queue: &kernelfault.Queueing{Num: 101, All: true, Delay: time.Millisecond, Probe: rule.Probe}},
		"queue 0":           {ID: "a", Target: kernelfault.Target{Netns: ns}, Queue: &kernelfault.Queueing{All: true, Delay: time.Millisecond, Probe: rule.Probe}},
		"queue, no delay":   {ID: "a", Target: kernelfault.Target{Netns: ns}, Queue: &kernelfault.Queueing{Num: 101, All: true, Probe: rule.Probe}},
		"queue, hour delay": {ID: "a", Target: kernelfault.Target{Netns: ns}, Queue: &kernelfault.Queueing{Num: 101, All: true, Delay: time.Hour, Probe: rule.Probe}},
		"queue, iptables in an address": {ID: "a", Target: kernelfault.Target{Netns: ns},
			Queue: &kernelfault.Queueing{Num: 101, Addrs: []string{"1.2.3.4 -j ACCEPT"}, Delay: time.Millisecond, Probe: rule.Probe}},
		"helper running a shell": {ID: "a", Target: kernelfault.Target{Netns: ns, Cgroup: []string{cg}}, Proc: &kernelfault.Helper{Kind: "sh", CPUs: 1}},
		"burner of 0 cpus":       {ID: "a", Target: kernelfault.Target{Netns: ns, Cgroup: []string{cg}}, Proc: &kernelfault.Helper{Kind: kernelfault.HelperBurner}},
		"balloon of 1T":          {ID: "a", Target: kernelfault.Target{Netns: ns, Cgroup: []string{cg}}, Proc: &kernelfault.Helper{Kind: kernelfault.HelperBalloon, Bytes: 1 << 40}},
		"helper, no cgroup":      {ID: "a", Target: kernelfault.Target{Netns: ns}, Proc: &kernelfault.Helper{Kind: kernelfault.HelperBurner, CPUs: 1}},
		"helper, foreign cgroup": {ID: "a", Target: kernelfault.Target{Netns: ns, Cgroup: []string{"/sys/fs/cgroup/freezer/user.slice"}}, Proc: &kernelfault.Helper{Kind: kernelfault.HelperBurner, CPUs: 1}},
		"helper in the host namespace": {ID: "a", Target: kernelfault.Target{Netns: "/proc/1/ns/net", Cgroup: []string{cg}},
			Proc: &kernelfault.Helper{Kind: kernelfault.HelperBalloon, Bytes: 1 << 20}},
	}
	seq := uint64(0)
	for name, f := range bad {
		seq++
		if a := ask(t, conn, r, req(Request{Op: OpInject, Run: testRun, Seq: seq, Fault: &f})); !strings.HasPrefix(a, "refused") {
			t.Errorf("%s: answer %q, want refused", name, a)
		}
	}
	seq++
	if a := ask(t, conn, r, req(Request{Op: OpRevert, Run: testRun, Seq: seq, ID: "never-applied"})); !strings.Contains(a, "not applied") {
		t.Errorf("revert of an unknown fault: %q", a)
	}
	seq++
	if a := ask(t, conn, r, req(Request{Op: OpInject, Run: testRun, Seq: seq, ID: "x", Fault: &kernelfault.Fault{ID: "x", Target: kernelfault.Target{Netns: ns}, Rule: rule}})); !strings.HasPrefix(a, "refused") {
		t.Errorf("inject with an id field: %q", a)
	}
}

// TestWardenInjectsRevertsAndLapses applies a real rule in a namespace of
// the run through the socket, reverts it, applies another and lets the
// lease lapse: the lapse reverts it and refuses what follows.
func TestWardenInjectsRevertsAndLapses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces, nft)")
	}
	ns := "fb-" + testRun + "-n9"
	_ = exec.Command("ip", "netns", "delete", ns).Run()
	for _, args := range [][]string{{"netns", "add", ns}, {"-n", ns, "link", "set", "lo", "up"}, {"-n", ns, "addr", "add", "10.213.250.2/24", "dev", "lo"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Skipf("cannot set up namespace (ip %v): %v: %s", args, err, out)
		}
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", ns).Run() })
	s, conn, r := serve(t, os.Getpid())
	f := kernelfault.Fault{ID: "link-down#1", Target: kernelfault.Target{Netns: ns},
		Rule: &kernelfault.Rule{Table: "fbf1", Addrs: []string{"10.213.250.9"}, Probe: []string{"10.213.250.9"}}}
	if a := ask(t, conn, r, req(Request{Op: OpInject, Run: testRun, Seq: 1, Fault: &f})); !strings.HasPrefix(a, "ok nft table inet fbf1") {
		t.Fatalf("inject: %s", a)
	}
	if !hasTable(t, ns, "fbf1") {
		t.Fatal("the rule is not in the namespace after ok")
	}
	if a := ask(t, conn, r, req(Request{Op: OpRevert, Run: testRun, Seq: 2, ID: f.ID})); !strings.HasPrefix(a, "ok nft table inet fbf1 deleted") {
		t.Fatalf("revert: %s", a)
	}
	if hasTable(t, ns, "fbf1") {
		t.Fatal("the rule is still there after the revert")
	}
	f.ID, f.Rule.Table = "partition#2", "fbf2"
	if a := ask(t, conn, r, req(Request{Op: OpInject, Run: testRun, Seq: 3, Fault: &f})); !strings.HasPrefix(a, "ok") {
		t.Fatalf("inject: %s", a)
	}
	reverted, err := s.Lapse("lease of 5s lapsed")
	if err != nil || len(reverted) != 1 || !strings.Contains(reverted[0], "partition#2") {
		t.Fatalf("lapse reverted %v, %v; want partition#2", reverted, err)
	}
	if hasTable(t, ns, "fbf2") {
		t.Fatal("the rule is still there after the lease lapsed")
	}
	if a := ask(t, conn, r, req(Request{Op: OpRenew, Run: testRun, Seq: 4})); !strings.Contains(a, "lease lapsed") {
		t.Errorf("renew after the lapse: %q, want refused", a)
	}
	recs, _ := Read(Path(testRun))
	if len(Applied(recs)) != 0 {
		t.Errorf("journal still holds applied faults: %+v", Applied(recs))
	}
}

func hasTable(t *testing.T, ns, table string) bool {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns, "nft", "list", "tables").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list tables: %v: %s", err, out)
	}
	return strings.Contains(string(out)+"\n", " "+table+"\n")
}
