package scenario

import (
	"net/netip"
	"strings"
	"testing"
)

const attached = `name: a
cluster:
  backend: docker
  attach: {project: shop, services: [web], target: "lb:80"}
workload: {rate: 100}
phases: [{name: warmup, duration: 10s}, {name: fault, duration: 20s}]
faults:
  - {type: app-crash, node: 2, at: 12s, mode: sticky}
`

func TestAnAttachedClusterMayLeaveNodesAndSystemOut(t *testing.T) {
	sc, err := Parse([]byte(attached), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := sc.Cluster
	// The system is left out too: which one an attached cluster is, is the
	// registry's (testbed.Resolve: TestResolveAttachedSystem).
	if c.Nodes != 0 || c.System != "" || c.Attach.Project != "shop" || c.Attach.Target != "lb:80" {
		t.Errorf("cluster %+v attach %+v: want nodes and system left to the backend and the registry", c, *c.Attach)
	}
	b, err := sc.Marshal()
	if err != nil || !strings.Contains(string(b), "attach:") || !strings.Contains(string(b), "project: shop") {
		t.Errorf("marshal: %v\n%s", err, b)
	}
}

func TestAttachMistakesNameTheKey(t *testing.T) {
	for _, c := range []struct{ from, to, want string }{
		{"backend: docker", "backend: netns", "a.yaml:4: cluster.attach.project: attach targets running containers"},
		{"{project: shop, services: [web], target: \"lb:80\"}", "{services: [web]}", "a.yaml:4: cluster.attach: attach needs project"},
		{"{project: shop, services: [web], target: \"lb:80\"}", "{project: shop, containers: [a]}", "cluster.attach.containers: give project or containers, not both"},
		{"{project: shop, services: [web], target: \"lb:80\"}", "{containers: [a, a]}", "cluster.attach.containers: a is named twice"},
		{"{project: shop, services: [web], target: \"lb:80\"}", "{containers: [a], services: [web]}", "cluster.attach.services: services choose among a project's"},
		{"target: \"lb:80\"", "target: \"10.0.0.1\"", "cluster.attach.target: target \"10.0.0.1\": want SERVICE[:PORT]"},
		{"target: \"lb:80\"", "target: \"lb:http\"", "cluster.attach.target"},
		{"target: \"lb:80\"", "target: \"../x\"", "cluster.attach.target"},
		{"backend: docker", "backend: docker\n  image: shop/web", "cluster.image: image, command and env say how to start nodes"},
	} {
		in := strings.Replace(attached, c.from, c.to, 1)
		_, err := Parse([]byte(in), "a.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s -> %s: got %v, want %q", c.from, c.to, err, c.want)
		}
	}
}

func TestParseAttachTarget(t *testing.T) {
	for _, c := range []struct {
		in   string
		want AttachTarget
	}{
		{"lb", AttachTarget{Name: "lb"}},
		{"lb:80", AttachTarget{Name: "lb", Port: 80}},
		{"compose_lb_1:8080", AttachTarget{Name: "compose_lb_1", Port: 8080}},
		{"127.0.0.1:18080", AttachTarget{Addr: netip.MustParseAddrPort("127.0.0.1:18080")}},
		{"[::1]:80", AttachTarget{Addr: netip.MustParseAddrPort("[::1]:80")}},
	} {
		got, err := ParseAttachTarget(c.in)
		if err != nil || got != c.want {
			t.Errorf("%s: %+v %v, want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "10.0.0.1", "lb:0", "lb:70000", "a b:1", ":80", "[::1]:0"} {
		if _, err := ParseAttachTarget(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzParseAttachTarget(f *testing.F) {
	for _, s := range []string{"lb", "lb:80", "127.0.0.1:8080", "[::1]:80", "x:y:z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseAttachTarget(s)
		if err != nil {
			return
		}
		if (got.Name == "") == !got.Addr.IsValid() {
			t.Fatalf("%q: %+v: want a name or an address, not both", s, got)
		}
		if got.Addr.IsValid() && got.Addr.Port() == 0 {
			t.Fatalf("%q: an address without a port", s)
		}
	})
}
