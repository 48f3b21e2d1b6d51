package docker

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/kernelfault"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/warden"
)

// engine returns the real engine or skips: the end-to-end tests need a
// Docker engine and root (nsenter, nft, the warden's journal).
func engine(t *testing.T) Engine {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("docker end-to-end tests need root")
	}
	eng, err := Connect(context.Background())
	if err != nil {
		t.Skipf("no Docker engine answers: %v", err)
	}
	removerEngine = Connect
	t.Cleanup(func() { removeTestImage(eng) })
	return eng
}

// removeTestImage removes the image of this test binary: every build of
// it is a new image.
func removeTestImage(eng Engine) {
	files, err := imageFiles(os.Args[0])
	if err != nil {
		return
	}
	if sum, err := contentHash(files); err == nil {
		_ = eng.ImageRemove(context.Background(), imageRepo+":"+sum[:12])
	}
}

// runLeft lists the containers and networks of run id still on the engine.
func runLeft(eng Engine, run string) []string {
	var left []string
	cs, _ := eng.ContainerList(context.Background(), LabelRun+"="+run)
	for _, c := range cs {
		left = append(left, "container "+c.Name+" "+c.Status)
	}
	ns, _ := eng.NetworkList(context.Background(), LabelRun+"="+run)
	for _, n := range ns {
		left = append(left, "network "+n.Name)
	}
	return left
}

func get(addr string) error {
	client := http.Client{Timeout: 1500 * time.Millisecond}
	resp, err := client.Get("http://" + addr + "/health")
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

// eventually polls f until it returns nil, bounded by 20 s.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err = f(); err == nil {
			return
		}
	}
	t.Fatalf("%s: still %v after 20s", what, err)
}

// startCluster starts an n-node static cluster of the test binary on the
// engine; when the test ends it is stopped and must leave nothing on the
// engine. events returns what the cluster emitted so far.
func startCluster(t *testing.T, eng Engine, n int) (c *Containers, events func() []record.Event) {
	t.Helper()
	b := &Backend{Connect: Connect}
	spec := testSpec(t.TempDir(), fmt.Sprintf("%012x", time.Now().UnixNano()&0xffffffffffff), n)
	plan, err := b.Plan(spec)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var evs []record.Event
	tc, err := b.Start(context.Background(), spec, plan, func(e record.Event) { mu.Lock(); evs = append(evs, e); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	c = tc.(*Containers)
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
		if left := runLeft(eng, spec.RunID); len(left) > 0 {
			t.Errorf("left after Stop: %v", left)
		}
	})
	return c, func() []record.Event { mu.Lock(); defer mu.Unlock(); return slices.Clone(evs) }
}

func TestEveryContainerFaultTakesEffectAndReverts(t *testing.T) {
	eng := engine(t)
	c, events := startCluster(t, eng, 2)
	a1, a2 := c.Nodes()[0].Addr, c.Nodes()[1].Addr
	for _, a := range []string{a1, a2} {
		if err := get(a); err != nil {
			t.Fatalf("node at %s: %v", a, err)
		}
	}
	// app-crash: the holder keeps the address, so the kernel refuses.
	if err := c.KillApp(1); err != nil {
		t.Fatal(err)
	}
	if err := get(a1); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("after KillApp: %v, want connection refused", err)
	}
	if err := c.StartApp(1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "node 1 after StartApp", func() error { return get(a1) })
	// app-hang: paused, the connection is accepted by the kernel but unanswered.
	if err := c.Pause(2); err != nil {
		t.Fatal(err)
	}
	var ne net.Error
	if err := get(a2); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("paused node: %v, want a timeout", err)
	}
	if err := c.Resume(2); err != nil {
		t.Fatal(err)
	}
	eventually(t, "node 2 after Resume", func() error { return get(a2) })
	// nft rule on the client side of node 1: silence, then back.
	undo, err := c.Filter(kernelfault.Label{Fault: "link-down", ID: 1}, 1, kernelfault.Block{Peers: kernelfault.Peers{Client: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := get(a1); err == nil {
		t.Error("node 1 answered through a DROP rule")
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "node 1 after the rule went", func() error { return get(a1) })
	// node-crash: the address goes; never refused, since no host answers.
	if err := c.HostDown(2, false); err != nil {
		t.Fatal(err)
	}
	if err := get(a2); err == nil || errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("downed host: %v, want no answer at all", err)
	}
	if err := c.StartApp(2); err != nil {
		t.Fatal(err)
	}
	eventually(t, "node 2 after boot", func() error { return get(a2) })
	var mechs []string
	for _, e := range events() {
		if e.Kind == "fault.effective" || e.Kind == "fault.reverted" {
			mechs = append(mechs, strings.Fields(e.Detail)[1])
		}
	}
	want := "docker-kill: docker-start: docker-pause: docker-unpause: nft: nft: docker-kill: docker-start: docker-start:"
	if got := strings.Join(mechs, " "); got != want {
		t.Errorf("mechanisms in events:\n got %s\nwant %s", got, want)
	}
}

func TestAKilledControllerLeavesNoContainerPausedNorRunning(t *testing.T) {
	eng := engine(t)
	run := fmt.Sprintf("%012x", time.Now().UnixNano()&0xffffffffffff)
	cmd := startHolder(t, run)
	if left := runLeft(eng, run); len(left) != 5 {
		t.Fatalf("before the kill: %v, want 2 nodes of 2 containers and a network", left)
	}
	t0 := time.Now()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if left := untilNone(30*time.Second, func() []string { return runLeft(eng, run) }); len(left) > 0 {
		t.Fatalf("30s after SIGKILL of the controller: %v", left)
	}
	t.Logf("the warden removed the run's containers and network %s after the controller's SIGKILL", time.Since(t0).Round(10*time.Millisecond))
}

// startHolder starts a controller (the test binary as runHolder) that
// holds run's 2-node cluster with node 1 paused and an nft rule in node
// 2's namespace, and returns it once it says so.
func startHolder(t *testing.T, run string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holderEnv+"="+run, holderDirEnv+"="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case l := <-line:
		if l != "held" {
			t.Fatalf("holder: %s", l)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("holder did not hold within 90s")
	}
	return cmd
}

// untilNone polls list every 100 ms until it returns nothing or limit
// has passed, and returns what it last listed.
func untilNone(limit time.Duration, list func() []string) []string {
	left := list()
	for deadline := time.Now().Add(limit); len(left) > 0 && time.Now().Before(deadline); left = list() {
		time.Sleep(100 * time.Millisecond)
	}
	return left
}

// faultsLeft says which of the holder's faults are still on run's
// containers: a paused container, a run's nft table in a namespace.
func faultsLeft(eng Engine, run string) []string {
	var left []string
	cs, _ := eng.ContainerList(context.Background(), LabelRun+"="+run)
	for _, c := range cs {
		info, err := eng.ContainerInspect(context.Background(), c.ID)
		if err != nil {
			continue
		}
		if info.Paused {
			left = append(left, info.Name+" paused")
		}
		if _, on := info.IPs["fb-"+run]; info.Labels[LabelRole] == "holder" && !on {
			left = append(left, info.Name+" off the network")
		}
		if info.Running && info.Pid > 0 {
			tables, _ := inNS(fmt.Sprintf("/proc/%d/ns/net", info.Pid), "", "nft", "list", "tables")
			if strings.Contains(tables, runTable(run)) {
				left = append(left, info.Name+": nft table")
			}
		}
	}
	return left
}

// TestALapsedLeaseUnpausesAndRemovesRules stops (SIGSTOP, a starved
// controller) a controller whose cluster has a paused and disconnected
// node and a rule: once its lease lapses the warden must unpause and
// reconnect the node and delete the rule, and leave the containers in place (the pipe is still open, the
// controller may come back to find its run invalid); SIGKILL then removes
// them.
func TestALapsedLeaseUnpausesAndRemovesRules(t *testing.T) {
	eng := engine(t)
	run := fmt.Sprintf("%012x", time.Now().UnixNano()&0xffffffffffff)
	cmd := startHolder(t, run)
	// Node 2's app container shares its holder's namespace: the rule shows
	// in both.
	if left := strings.Join(faultsLeft(eng, run), ", "); !strings.Contains(left, "-n1-app paused") || !strings.Contains(left, "-n2-net: nft table") ||
		!strings.Contains(left, "-n1-net off the network") {
		t.Fatalf("the holder's faults are not in place: %s, want node 1 paused and disconnected and node 2's rule", left)
	}
	t0 := time.Now()
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if left := untilNone(warden.DefaultLease+3*time.Second, func() []string { return faultsLeft(eng, run) }); len(left) > 0 {
		t.Fatalf("lease + 3s after the controller stopped, still: %v", left)
	}
	t.Logf("the warden took the faults back %s after the controller stopped (lease %v)", time.Since(t0).Round(10*time.Millisecond), warden.DefaultLease)
	if objs := runLeft(eng, run); len(objs) != 5 {
		t.Errorf("after the lapse: %v; the lapse must leave the 4 containers and the network to the pipe's closing", objs)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if left := untilNone(30*time.Second, func() []string { return runLeft(eng, run) }); len(left) > 0 {
		t.Fatalf("30s after SIGKILL of the controller: %v", left)
	}
}

// TestAUserImageRunsAsANode runs system container from a user image (here
// the test binary's own image under another name) and crashes it.
func TestAUserImageRunsAsANode(t *testing.T) {
	eng := engine(t)
	ref := userImage(t, eng)
	b := &Backend{Connect: Connect}
	spec := testSpec(t.TempDir(), fmt.Sprintf("%012x", time.Now().UnixNano()&0xffffffffffff), 1)
	spec.System, spec.Image, spec.Port = ContainerSystem, ref, 8000
	spec.Command = []string{"node", "static", "--listen", "{addr}:{port}", "--node", "{node}", "--dir", "{dir}"}
	plan, err := b.Plan(spec)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := b.Start(context.Background(), spec, plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := tc.(*Containers)
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	addr := c.Nodes()[0].Addr
	if err := get(addr); err != nil {
		t.Fatal(err)
	}
	// cpu-hog's burner runs from the host in the container's cgroups: the
	// image holds no faultbench binary for it.
	undo, err := c.Burn(kernelfault.Label{Fault: "cpu-hog", ID: 1}, 1, 1)
	if err != nil {
		t.Fatalf("cpu-hog on a user's image: %v", err)
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	if err := c.KillApp(1); err != nil {
		t.Fatal(err)
	}
	if err := get(addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("after KillApp: %v, want refused", err)
	}
}

// userImage imports an image that is not faultbench's: the test binary
// as /app, its entry point (with the libraries a -race build links), and
// nothing at /faultbench. It is removed when the test ends.
func userImage(t *testing.T, eng Engine) string {
	t.Helper()
	files, err := imageFiles(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range files {
		name := strings.TrimPrefix(f.image, "/")
		if f.image == binaryPath {
			name = "app"
		}
		for d := filepath.Dir(name); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Name: d + "/", Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
				t.Fatal(err)
			}
		}
		b, err := os.ReadFile(f.host)
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	ref := fmt.Sprintf("faultbench-test-userimage:%x", time.Now().UnixNano())
	if err := eng.ImageImport(context.Background(), &buf, ref, []string{`ENTRYPOINT ["/app"]`}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.ImageRemove(context.Background(), ref) })
	return ref
}
