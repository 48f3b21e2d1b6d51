package docker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/testbed"
)

// shop is a compose project as docker-compose leaves it: a load balancer
// publishing port 80 on 18080, two web replicas (listed out of order) and
// a database, plus another project's container.
func shop() *fakeEngine {
	f := newFake()
	svc := func(s, n string) map[string]string {
		return map[string]string{composeProject: "shop", composeService: s, composeNumber: n}
	}
	f.run("shop_web_2", svc("web", "2"), "172.30.0.12", nil)
	f.run("shop_lb_1", svc("lb", "1"), "172.30.0.2", map[int]string{80: "0.0.0.0:18080"})
	f.run("shop_web_1", svc("web", "1"), "172.30.0.11", nil)
	f.run("shop_db_1", svc("db", "1"), "172.30.0.20", map[int]string{5432: "127.0.0.1:15432"})
	f.run("blog_web_1", map[string]string{composeProject: "blog", composeService: "web", composeNumber: "1"}, "172.31.0.2", nil)
	return f
}

func names(nodes []attachedNode) string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name+"@"+n.Addr)
	}
	return strings.Join(out, " ")
}

func TestAttachMapsServicesToNodesInOrder(t *testing.T) {
	f := shop()
	att, err := findAttached(context.Background(), f, &scenario.Attach{Project: "shop", Services: []string{"web"}, Target: "lb:80"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// By service, then container number; a replica without a published
	// port is reached at its address on the project's network.
	if got, want := names(att.nodes), "shop_web_1@172.30.0.11:8000 shop_web_2@172.30.0.12:8000"; got != want {
		t.Errorf("nodes %s, want %s", got, want)
	}
	// The entry point's published port, on loopback.
	if got := strings.Join(att.entryAddrs(), ","); got != "127.0.0.1:18080" {
		t.Errorf("entry %s, want the load balancer's published port on loopback", got)
	}
	if n := att.nodes[0]; n.Service != "web" || n.Number != 1 || n.Restart != "always" || n.Gateway.String() != "172.30.0.1" || n.Network != "shop_default" {
		t.Errorf("node 1 %+v", n)
	}
	if p := attachedPlan(att); strings.Join(p.Hosts, ",") != "172.30.0.11,172.30.0.12" || !p.KernelLinks {
		t.Errorf("plan %+v", p)
	}
	// Without services: every service but the target's, by name; the
	// database publishes its one port on loopback.
	att, err = findAttached(context.Background(), f, &scenario.Attach{Project: "shop", Target: "lb"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(att.nodes), "shop_db_1@127.0.0.1:15432 shop_web_1@172.30.0.11:8000 shop_web_2@172.30.0.12:8000"; got != want {
		t.Errorf("nodes %s, want %s", got, want)
	}
	// Named containers are the nodes in the order given; no target: the
	// clients send to every node.
	att, err = findAttached(context.Background(), f, &scenario.Attach{Containers: []string{"shop_web_2", "blog_web_1"}}, 8000)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(att.nodes), "shop_web_2@172.30.0.12:8000 blog_web_1@172.31.0.2:8000"; got != want || att.entryAddrs() != nil {
		t.Errorf("nodes %s entry %v, want %s and none", got, att.entryAddrs(), want)
	}
	notes := strings.Join(att.notes(), "\n")
	for _, want := range []string{"node 1 is container shop_web_2 (service web) at 172.30.0.12:8000, restart policy always: the engine restarts it", "the clients send to every node"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes\n%s\nlack %q", notes, want)
		}
	}
}

func TestAttachMistakesAreOneLineErrorsAtTheirKey(t *testing.T) {
	for _, c := range []struct {
		name  string
		a     scenario.Attach
		port  int
		setup func(f *fakeEngine)
		key   string
		want  string
	}{
		{name: "no such project", a: scenario.Attach{Project: "shpo"}, key: "attach.project",
			want: "no container of compose project shpo on this engine (projects here: blog, shop): bring the stack up first (docker-compose up -d"},
		{name: "no such service", a: scenario.Attach{Project: "shop", Services: []string{"api"}}, key: "attach.services",
			want: "compose project shop has no service api (its services: db, lb, web)"},
		{name: "no such container", a: scenario.Attach{Containers: []string{"shop_web_9"}}, key: "attach.containers",
			want: "no container shop_web_9 on this engine"},
		{name: "stopped", a: scenario.Attach{Project: "shop", Services: []string{"web"}},
			setup: func(f *fakeEngine) { byName(f, "shop_web_2").RestartPolicy = "no"; f.crash(byName(f, "shop_web_2").ID) }, key: "attach.services",
			want: "container shop_web_2 (service web) is exited (exit code 137), not running: start it first (docker start shop_web_2)"},
		{name: "being restarted", a: scenario.Attach{Project: "shop", Services: []string{"web"}},
			setup: func(f *fakeEngine) { f.crash(byName(f, "shop_web_1").ID) }, key: "attach.services",
			want: "container shop_web_1 (service web) is restarting (restart policy always, 0 restarts so far): wait until it runs"},
		{name: "paused", a: scenario.Attach{Containers: []string{"shop_web_1"}},
			setup: func(f *fakeEngine) { _ = f.ContainerPause(context.Background(), byName(f, "shop_web_1").ID) }, key: "attach.containers",
			want: "container shop_web_1 (service web) is paused: unpause it first"},
		{name: "no such target", a: scenario.Attach{Project: "shop", Services: []string{"web"}, Target: "proxy"}, key: "attach.target",
			want: "no service or container proxy in compose project shop (its services: db, lb, web)"},
		{name: "remote target", a: scenario.Attach{Project: "shop", Services: []string{"web"}, Target: "10.9.9.9:80"}, key: "attach.target",
			want: "10.9.9.9:80 is neither loopback nor the address of an attached container"},
		{name: "only the target", a: scenario.Attach{Containers: []string{"shop_lb_1", "shop_lb_1"}}, key: "attach.containers",
			want: "container shop_lb_1 is named twice"},
		{name: "which port", a: scenario.Attach{Containers: []string{"shop_web_1"}},
			setup: func(f *fakeEngine) { byName(f, "shop_web_1").Exposed = []int{8000, 9000} }, key: "attach.containers",
			want: "container shop_web_1 (service web) has ports 8000, 9000: say which one its service listens on (cluster.port"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := shop()
			if c.setup != nil {
				c.setup(f)
			}
			_, err := findAttached(context.Background(), f, &c.a, c.port)
			var ae *attachError
			if !errors.As(err, &ae) || ae.Key != c.key || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %v (key %v), want one line at %s with %q", err, ae, c.key, c.want)
			}
		})
	}
	// Nodes given and found must agree.
	spec := testbed.Spec{System: "container", Nodes: 3, Attach: &scenario.Attach{Project: "shop", Services: []string{"web"}}}
	_, err := findAttachedFor(context.Background(), shop(), spec)
	if err == nil || !strings.Contains(err.Error(), "3 nodes, but attach finds 2 containers (shop_web_1, shop_web_2): set nodes: 2, or leave nodes out") {
		t.Errorf("nodes mismatch: %v", err)
	}
}

func byName(f *fakeEngine, name string) *ContainerInfo {
	for _, c := range f.containers {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// validate (testbed.Check) finds the containers, fills nodes in, prints
// the restart policies as notes, and puts each mistake at its line.
func TestValidateAnAttachedScenario(t *testing.T) {
	b := fakeBackend(shop())
	const file = `name: shop
cluster:
  system: static
  backend: docker
  attach:
    project: shop
    services: [web]
    target: "lb:80"
workload: {rate: 50}
phases: [{name: warmup, duration: 10s}, {name: fault, duration: 10s}]
faults:
  - {type: app-crash, node: 2, at: 12s, mode: sticky}
`
	sc := parse(t, file)
	notes, err := b.CheckScenario(sc)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 3 || !strings.Contains(notes[1], "node 2 is container shop_web_2 (service web)") || !strings.Contains(notes[2], "entry point shop_lb_1 at 127.0.0.1:18080") {
		t.Errorf("notes %q", notes)
	}
	plan, err := b.Plan(testbed.FromScenario(sc.Cluster, ""))
	if err != nil || len(plan.Hosts) != 2 {
		t.Fatalf("plan %+v, %v", plan, err)
	}
	for _, c := range []struct{ from, to, want string }{
		{"project: shop", "project: shpo", "s.yaml:6: cluster.attach.project: no container of compose project shpo"},
		{"services: [web]", "services: [api]", "s.yaml:7: cluster.attach.services: compose project shop has no service api"},
		{`target: "lb:80"`, `target: "cache:80"`, "s.yaml:8: cluster.attach.target: no service or container cache"},
		{"system: static", "system: press", "s.yaml:3: cluster.system: system press starts and configures its own nodes"},
		{"  backend: docker\n", "  backend: docker\n  nodes: 3\n", "s.yaml:5: cluster.nodes: 3 nodes, but attach finds 2 containers"},
	} {
		sc := parse(t, strings.Replace(file, c.from, c.to, 1))
		if _, err := b.CheckScenario(sc); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s -> %s: %v, want %q", c.from, c.to, err, c.want)
		}
	}
	// The warden runs cpu-hog's and mem-pressure's helpers from the host
	// in the container's cgroups: an attached container takes them too.
	for _, f := range []string{"cpu-hog, node: 2", "mem-pressure, node: 1"} {
		if _, err := b.CheckScenario(parse(t, strings.Replace(file, "app-crash, node: 2", f, 1))); err != nil {
			t.Errorf("%s on an attached container: %v", f, err)
		}
	}
}

func parse(t *testing.T, s string) *scenario.Scenario {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Parse([]byte(s), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestObserveTellsTheEnginesDoingsFromTheRuns(t *testing.T) {
	running := ContainerInfo{Running: true, RestartCount: 3}
	exited := ContainerInfo{Status: "exited", RestartCount: 3}
	restarted := ContainerInfo{Running: true, RestartCount: 4}
	paused := ContainerInfo{Running: true, Paused: true, RestartCount: 3}
	for _, c := range []struct {
		what        string
		runRunning  bool
		runRestarts int
		info        ContainerInfo
		want        change
	}{
		{"steady", true, 3, running, unchanged},
		{"paused by the run", true, 3, paused, unchanged},
		{"killed by the run, not yet back", false, 3, exited, unchanged},
		{"killed by the run, restarted by the policy", false, 3, restarted, restartedByEngine},
		{"crashed on its own", true, 3, exited, exitedOnItsOwn},
		{"crashed and restarted between two looks", true, 3, restarted, crashedAndRestarted},
		{"started by someone else", false, 3, running, startedElsewhere},
		{"crashed again while restarting", false, 3, ContainerInfo{Status: "restarting", RestartCount: 4}, unchanged},
		// The engine says Running of a container waiting to be restarted.
		{"killed by the run, waiting for its restart", false, 3, ContainerInfo{Running: true, Status: "restarting", RestartCount: 3}, unchanged},
		{"crashed on its own, waiting for its restart", true, 3, ContainerInfo{Running: true, Status: "restarting", RestartCount: 3}, exitedOnItsOwn},
	} {
		if got := observe(c.runRunning, c.runRestarts, c.info); got != c.want {
			t.Errorf("%s: %v, want %v", c.what, got, c.want)
		}
	}
}

func TestDeviceOfFindsTheInterfaceHoldingTheAddress(t *testing.T) {
	out := "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n" +
		"24: eth0    inet 172.18.0.3/16 brd 172.18.255.255 scope global eth0\\       valid_lft forever preferred_lft forever\n" +
		"31: eth1@if32    inet 172.19.0.5/16 brd 172.19.255.255 scope global eth1\\       valid_lft forever\n"
	for ip, want := range map[string]string{"172.18.0.3": "eth0", "172.19.0.5": "eth1"} {
		if dev, ok := deviceOf(out, ip); !ok || dev != want {
			t.Errorf("%s: %q %v, want %s", ip, dev, ok, want)
		}
	}
	if dev, ok := deviceOf(out, "172.18.0.30"); ok {
		t.Errorf("a prefix of another address matched: %s", dev)
	}
}
