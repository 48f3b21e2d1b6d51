package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/testbed/docker"
	"github.com/faultbench/faultbench/internal/warden"
)

// dockerImage skips the test with -short, without root (need says what
// for) or without an engine; otherwise it returns the engine and the image
// of this test binary (which acts as faultbench, see TestMain), removed
// when the test ends if the test made it.
func dockerImage(t *testing.T, need string) (docker.Engine, docker.Image) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end docker test; skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip(need + " needs root")
	}
	eng, err := docker.Connect(context.Background())
	if err != nil {
		t.Skipf("no Docker engine answers: %v", err)
	}
	img, err := docker.EnsureImage(context.Background(), eng, os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if img.Created {
			_ = eng.ImageRemove(context.Background(), img.Ref)
		}
	})
	return eng, img
}

const composeFile = "../../examples/compose/docker-compose.yml"

// composeStack brings examples/compose/docker-compose.yml up as a project
// of its own, with this test binary's image (which acts as `faultbench
// node KIND`, see TestMain) and a free port for the balancer, and takes it
// down, with the image, when the test ends. It skips where there is no
// root, no engine or no docker-compose. docker-compose (Debian's 1.x) is
// what the README's walk-through uses, so the test uses it too.
func composeStack(t *testing.T) (eng docker.Engine, project, lb string) {
	t.Helper()
	compose, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Skip("no docker-compose on PATH (Debian: apt-get install docker-compose)")
	}
	eng, img := dockerImage(t, "attaching to a docker-compose stack (the warden's journal, nsenter)")
	project = fmt.Sprintf("fbtest%x", time.Now().UnixNano()&0xffffffffff)
	env := append(os.Environ(), "FAULTBENCH_DEMO_IMAGE="+img.Ref, "FAULTBENCH_DEMO_PORT=")
	dc := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, compose, append([]string{"-f", composeFile, "-p", project}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		if out, err := dc("down", "-t", "1"); err != nil {
			t.Errorf("docker-compose down: %v\n%s", err, out)
		}
	})
	if out, err := dc("up", "-d", "--no-build"); err != nil {
		t.Fatalf("docker-compose up: %v\n%s", err, out)
	}
	out, err := dc("port", "lb", "80")
	if err != nil {
		t.Fatalf("docker-compose port: %v\n%s", err, out)
	}
	lb = strings.TrimSpace(out)
	// The balancer answers once its first health round found a replica.
	eventually(t, 60*time.Second, "the stack's balancer answers at "+lb, func() bool {
		resp, err := (&http.Client{Timeout: time.Second}).Get("http://" + lb + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return eng, project, lb
}

// eventually polls cond every 50 ms until it holds, bounded by limit.
func eventually(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); ; time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
	}
}

// composeScenario is examples/compose/scenario.yaml attached to project.
func composeScenario(t *testing.T, project string) string {
	t.Helper()
	b, err := os.ReadFile("../../examples/compose/scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "project: compose ", "project: "+project+" ", 1)
	if s == string(b) {
		t.Fatal("examples/compose/scenario.yaml no longer says project: compose")
	}
	return writeScenario(t, s)
}

// webContainers are the project's web replicas, by container number.
func webContainers(t *testing.T, eng docker.Engine, project string) []docker.ContainerInfo {
	t.Helper()
	var out []docker.ContainerInfo
	for _, n := range []string{"1", "2"} {
		info, err := eng.ContainerInspect(context.Background(), project+"_web_"+n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, info)
	}
	return out
}

// runTables lists the nft tables of run in a container's namespace.
func runTables(t *testing.T, info docker.ContainerInfo, run string) []string {
	t.Helper()
	out, err := exec.Command("nsenter", fmt.Sprintf("--net=/proc/%d/ns/net", info.Pid), "--", "nft", "list", "tables").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list tables in %s: %v: %s", info.Name, err, out)
	}
	var tables []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "table inet fb"+run+"t") {
			tables = append(tables, l)
		}
	}
	return tables
}

// restored fails the test unless every web replica runs, unpaused, with
// no rule of run left.
func restored(t *testing.T, eng docker.Engine, project, run string) {
	t.Helper()
	for _, c := range webContainers(t, eng, project) {
		if !c.Up() || c.Paused {
			t.Errorf("%s is %s (paused %v) after the run", c.Name, c.Status, c.Paused)
			continue
		}
		if left := runTables(t, c, run); len(left) > 0 {
			t.Errorf("%s still has the run's tables %v", c.Name, left)
		}
	}
	if _, err := os.Stat(warden.Path(run)); !os.IsNotExist(err) {
		t.Errorf("the run's journal is left: %v", err)
	}
}

func readEvents(t *testing.T, dir string) []record.Event {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, record.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []record.Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e record.Event
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			evs = append(evs, e)
		}
	}
	return evs
}

// has is the first event of kind on node whose detail holds every part.
func has(evs []record.Event, kind string, node int, parts ...string) (record.Event, bool) {
	for _, e := range evs {
		if e.Kind != kind || e.Node != node {
			continue
		}
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(e.Detail, p)
		}
		if ok {
			return e, true
		}
	}
	return record.Event{}, false
}

// The README's compose walk-through, as a test: the example stack up with
// docker-compose, the example scenario attached to it at a small time
// scale, the record checked (each fault's mechanism and revert, the
// engine's restart recorded as the engine's), every container left as
// found; bad input refused at validate; and a controller killed with
// SIGKILL in the middle of its faults leaving nothing behind.
func TestComposeExampleAttached(t *testing.T) {
	eng, project, lb := composeStack(t)

	t.Run("bad input", func(t *testing.T) {
		path := composeScenario(t, project)
		body, _ := os.ReadFile(path)
		for _, c := range []struct{ from, to, want string }{
			{"project: " + project, "project: " + project + "x", "cluster.attach.project: no container of compose project " + project + "x"},
			{"services: [web]", "services: [api]", "cluster.attach.services: compose project " + project + " has no service api (its services: lb, web)"},
			{`target: "lb:80"`, `target: "cache:80"`, "cluster.attach.target: no service or container cache"},
		} {
			bad := writeScenario(t, strings.Replace(string(body), c.from, c.to, 1))
			_, stderr, code := run(t, "validate", bad)
			if code != ExitBadInput || !strings.Contains(stderr, c.want) {
				t.Errorf("%s: exit %d, stderr %q; want 2 and %q", c.to, code, stderr, c.want)
			}
		}
		web2 := webContainers(t, eng, project)[1]
		if err := eng.ContainerStop(context.Background(), web2.ID, time.Second); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := run(t, "validate", path)
		if err := eng.ContainerStart(context.Background(), web2.ID); err != nil {
			t.Fatal(err)
		}
		if code != ExitBadInput || !strings.Contains(stderr, web2.Name+" (service web) is exited") || !strings.Contains(stderr, "docker start "+web2.Name) {
			t.Errorf("a stopped replica: exit %d, stderr %q", code, stderr)
		}
		eventually(t, 30*time.Second, web2.Name+" back", func() bool {
			resp, err := (&http.Client{Timeout: time.Second}).Get("http://" + lb + "/health")
			return err == nil && resp.Body.Close() == nil && webContainers(t, eng, project)[1].Up()
		})
	})

	t.Run("run", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "out")
		stdout, stderr, code := run(t, "run", composeScenario(t, project), "--time-scale", "0.3", "-o", dir)
		if code != ExitOK && code != ExitThreshold {
			for _, e := range readEventsIfAny(dir) {
				t.Logf("%.3f %s node %d %s #%d %s", e.TS, e.Kind, e.Node, e.Fault, e.ID, e.Detail)
			}
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
		if !strings.Contains(stderr, "restart policy unless-stopped: the engine restarts it after a crash") {
			t.Errorf("run did not say the restart policy: %s", stderr)
		}
		evs := readEvents(t, dir)
		defer func() {
			if t.Failed() {
				for _, e := range evs {
					t.Logf("%.3f %s node %d %s #%d %s", e.TS, e.Kind, e.Node, e.Fault, e.ID, e.Detail)
				}
			}
		}()
		run := ""
		for _, e := range evs {
			run = e.RunID
		}
		for _, c := range []struct {
			kind  string
			node  int
			parts []string
		}{
			{"system.docker", 0, []string{"attached to compose project " + project, project + "_web_1", "restart policy unless-stopped"}},
			{"fault.effective", 1, []string{"mechanism host-kill", project + "_web_1", "the engine restarts it by itself"}},
			{"system.docker.restart", 1, []string{"the engine restarted container " + project + "_web_1", "the engine's repair, not the operator's"}},
			{"fault.clear", 1, []string{"repaired by the engine (restart policy unless-stopped)"}},
			{"node.up", 1, []string{"restarted by the engine"}},
			{"fault.effective", 2, []string{"mechanism docker-pause"}},
			{"fault.reverted", 2, []string{"mechanism docker-unpause"}},
			{"fault.effective", 1, []string{"mechanism nft", "fb" + run + "t"}},
			{"fault.reverted", 1, []string{"mechanism nft", "deleted"}},
		} {
			if _, ok := has(evs, c.kind, c.node, c.parts...); !ok {
				t.Errorf("no %s on node %d with %q", c.kind, c.node, c.parts)
			}
		}
		// The engine repaired the crash: the operator never acted on it.
		for _, e := range evs {
			if (e.Kind == "operator.detect" || e.Kind == "operator.action") && e.Fault == "app-crash" {
				t.Errorf("the operator claims the engine's repair: %+v", e)
			}
			if e.Fault == "unplanned" {
				t.Errorf("the run's own crash was taken for an unplanned one: %+v", e)
			}
		}
		var sum analysis.Summary
		b, _ := os.ReadFile(filepath.Join(dir, record.SummaryFile))
		if err := json.Unmarshal(b, &sum); err != nil {
			t.Fatal(err)
		}
		if p := sum.Provenance; p == nil || p.Testbed == nil || p.Testbed.Backend != "docker" || len(p.Testbed.Nodes) != 2 ||
			p.Testbed.Nodes[0].Container != project+"_web_1" || p.Testbed.Nodes[0].ImageID == "" {
			t.Errorf("summary.json provenance testbed: %+v", sum.Provenance)
		}
		if sum.Run.Attempts == 0 || sum.Overall.Outcomes["ok"] == 0 {
			t.Errorf("no load went through the balancer: %+v", sum.Overall.Outcomes)
		}
		report, _ := os.ReadFile(filepath.Join(dir, record.ReportFile))
		if !strings.Contains(string(report), "attached to compose project "+project) {
			t.Error("the report does not say what ran the nodes")
		}
		restored(t, eng, project, run)
	})

	t.Run("interrupted", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "out")
		path := writeScenario(t, `name: interrupted
cluster:
  backend: docker
  system: static
  pages: 500
  page_size: 4096
  boot: 60s
  attach: {project: `+project+`, services: [web], target: "lb:80"}
workload: {rate: 20, trace: "zipf:500:1.0", window: 1s}
phases: [{name: only, duration: 90s}]
faults:
  - {type: node-crash, node: 1, at: 1s, mode: sticky}
  - {type: link-down, node: 2, at: 1s, mode: sticky}
`)
		cmd := exec.Command(os.Args[0], "run", path, "-o", dir, "--quiet")
		cmd.Env = append(os.Environ(), mainEnv+"=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		var run string
		eventually(t, 60*time.Second, "both faults in effect", func() bool {
			evs := readEventsIfAny(dir)
			_, down := has(evs, "fault.effective", 1, "mechanism docker-kill")
			_, cut := has(evs, "fault.effective", 2, "mechanism nft")
			if len(evs) > 0 {
				run = evs[0].RunID
			}
			return down && cut
		})
		if web1 := webContainers(t, eng, project)[0]; web1.Up() {
			t.Fatalf("node-crash left %s %s", web1.Name, web1.Status)
		}
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitFailed {
				t.Errorf("interrupted run: %v, want exit %d", err, ExitFailed)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("the interrupted run did not end within 60s")
		}
		// The crashed container, which the engine never restarts after its
		// own kill, is started again; the rule is gone.
		restored(t, eng, project, run)
	})

	t.Run("controller killed", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "out")
		path := writeScenario(t, `name: killed
cluster:
  backend: docker
  system: static
  pages: 500
  page_size: 4096
  attach: {project: `+project+`, services: [web], target: "lb:80"}
workload: {rate: 20, trace: "zipf:500:1.0", window: 1s}
phases: [{name: only, duration: 90s}]
faults:
  - {type: app-hang, node: 1, at: 1s, mode: sticky}
  - {type: link-down, node: 2, at: 1s, mode: sticky, scope: client}
`)
		cmd := exec.Command(os.Args[0], "run", path, "-o", dir, "--quiet")
		cmd.Env = append(os.Environ(), mainEnv+"=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		var run string
		eventually(t, 60*time.Second, "both faults in effect", func() bool {
			evs := readEventsIfAny(dir)
			_, paused := has(evs, "fault.effective", 1, "docker-pause")
			_, cut := has(evs, "fault.effective", 2, "mechanism nft")
			if len(evs) > 0 {
				run = evs[0].RunID
			}
			return paused && cut
		})
		if webs := webContainers(t, eng, project); !webs[0].Paused || len(runTables(t, webs[1], run)) != 1 {
			t.Fatalf("before the kill: %s paused %v, %s tables %v", webs[0].Name, webs[0].Paused, webs[1].Name, runTables(t, webs[1], run))
		}
		t0 := time.Now()
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		eventually(t, 30*time.Second, "the warden restores the stack", func() bool {
			webs := webContainers(t, eng, project)
			return webs[0].Up() && !webs[0].Paused && len(runTables(t, webs[1], run)) == 0
		})
		took := time.Since(t0)
		t.Logf("the warden unpaused %s_web_1 and removed the rule from %s_web_2 %v after the controller's SIGKILL (lease %v)", project, project, took.Round(10*time.Millisecond), warden.DefaultLease)
		if took > warden.DefaultLease {
			t.Errorf("restored %v after the SIGKILL, beyond the lease of %v", took, warden.DefaultLease)
		}
		eventually(t, 10*time.Second, "the journal removed", func() bool {
			_, err := os.Stat(warden.Path(run))
			return os.IsNotExist(err)
		})
		restored(t, eng, project, run)
	})
}

func readEventsIfAny(dir string) []record.Event {
	b, err := os.ReadFile(filepath.Join(dir, record.EventsFile))
	if err != nil {
		return nil
	}
	var evs []record.Event
	for _, l := range strings.Split(string(b), "\n") {
		var e record.Event
		if json.Unmarshal([]byte(l), &e) == nil && e.Kind != "" {
			evs = append(evs, e)
		}
	}
	return evs
}

// TestQuickstartDockerEndToEnd runs examples/quickstart-docker.yaml, every
// node a container of the image faultbench builds from its own binary
// (here the test binary, which acts as faultbench): the record shows the
// hang and the crash as the local quickstart's does, the provenance names
// each node's container and image, and the run leaves no container or
// network behind.
func TestQuickstartDockerEndToEnd(t *testing.T) {
	eng, _ := dockerImage(t, "the docker backend's kernel levers and warden")
	dir := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := run(t, "run", "../../examples/quickstart-docker.yaml", "--time-scale", "0.25", "--quiet", "-o", dir)
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	sum := checkQuickstartRecord(t, dir)
	if st, err := os.Stat(filepath.Join(dir, record.ReportFile)); err != nil || st.Size() == 0 {
		t.Errorf("no report: %v", err)
	}
	p := sum.Provenance
	if p == nil || p.Testbed == nil || p.Testbed.Backend != "docker" || len(p.Testbed.Nodes) != 4 {
		t.Fatalf("provenance does not name the docker testbed and its 4 nodes: %+v", p)
	}
	for _, n := range p.Testbed.Nodes {
		if n.Container == "" || n.ImageID == "" {
			t.Errorf("node %d: no container or image id in the provenance: %+v", n.Node, n)
		}
	}
	cs, _ := eng.ContainerList(context.Background(), docker.LabelRun+"="+p.RunID)
	ns, _ := eng.NetworkList(context.Background(), docker.LabelRun+"="+p.RunID)
	if len(cs)+len(ns) > 0 {
		t.Errorf("the run left %d containers and %d networks", len(cs), len(ns))
	}
}
