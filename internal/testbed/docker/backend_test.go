package docker

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/warden"
)

func fakeBackend(f *fakeEngine) *Backend {
	return &Backend{Connect: func(context.Context) (Engine, error) { return f, nil }}
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the run's warden journals under /run/faultbench")
	}
	removerEngine = Connect
}

func TestPlanGivesEveryNodeAnAddressInAFreeSubnet(t *testing.T) {
	f := newFake()
	b := fakeBackend(f)
	spec := testSpec(t.TempDir(), "", 3)
	first, err := b.Plan(spec)
	if err != nil {
		t.Fatal(err)
	}
	// Take that subnet: the next plan must move on.
	p := netip.MustParsePrefix(first.Hosts[0] + "/24").Masked()
	f.networks["other"] = NetworkInfo{ID: "other", Subnets: []netip.Prefix{p}}
	second, err := b.Plan(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Hosts) != 3 || !strings.HasSuffix(second.Hosts[0], ".11") || !strings.HasSuffix(second.Hosts[2], ".13") {
		t.Fatalf("hosts %v: want .11 .. .13", second.Hosts)
	}
	if p.Contains(netip.MustParseAddr(second.Hosts[0])) {
		t.Errorf("plan %v reuses the taken subnet %s", second.Hosts, p)
	}
	if !second.KernelLinks {
		t.Error("docker nodes are hosts of their own: KernelLinks must be set")
	}
}

func TestNoEngineIsAOneLineErrorNamingTheRemedy(t *testing.T) {
	for _, tc := range []struct{ cause, want string }{
		{"dial unix /var/run/docker.sock: connect: no such file or directory", "no engine answers"},
		{"dial unix /var/run/docker.sock: connect: permission denied", "group docker"},
	} {
		err := explainConnect(errors.New(tc.cause))
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s -> %v, want one line with %q", tc.cause, err, tc.want)
		}
	}
	b := &Backend{Connect: func(context.Context) (Engine, error) { return nil, explainConnect(errors.New("connection refused")) }}
	if _, err := b.Plan(testSpec(t.TempDir(), "", 1)); err == nil || !strings.Contains(err.Error(), "no engine answers") {
		t.Errorf("Plan without engine: %v", err)
	}
}

func TestImageHoldsTheBinaryAndIsReused(t *testing.T) {
	f := newFake()
	img, err := EnsureImage(context.Background(), f, os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if !img.Created || !strings.HasPrefix(img.Ref, "faultbench-node:") || !slices.Contains(f.imported, "faultbench") || !slices.Contains(f.imported, "tmp/") {
		t.Fatalf("image %+v, tar %v", img, f.imported)
	}
	if !strings.Contains(strings.Join(f.calls, " "), `ENTRYPOINT ["/faultbench"]`) {
		t.Errorf("import changes: %v", f.calls)
	}
	again, err := EnsureImage(context.Background(), f, os.Args[0])
	if err != nil || again.Created || again.Ref != img.Ref {
		t.Errorf("second EnsureImage = %+v, %v: want the same image, not imported again", again, err)
	}
}

// startFailing starts a 2-node cluster on f, which must fail; it returns
// the error after checking nothing is left.
func startFailing(t *testing.T, f *fakeEngine) error {
	t.Helper()
	b := fakeBackend(f)
	removerEngine = func(context.Context) (Engine, error) { return f, nil }
	t.Cleanup(func() { removerEngine = Connect })
	spec := testSpec(t.TempDir(), "a1b2c3d4e5f6", 2)
	plan, err := b.Plan(spec)
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.Start(context.Background(), spec, plan, nil)
	if err == nil {
		_ = c.Stop()
		t.Fatal("Start succeeded")
	}
	if c != nil {
		t.Errorf("Start returned a cluster (%T) with its error", c)
	}
	if len(f.containers) != 0 || len(f.networks) != 0 {
		t.Errorf("left behind: %d containers, %d networks", len(f.containers), len(f.networks))
	}
	if _, statErr := os.Stat(warden.Path(spec.RunID)); statErr == nil {
		t.Errorf("journal %s left behind", warden.Path(spec.RunID))
	}
	return err
}

func TestAContainerThatExitsAtOnceFailsTheStartNamingIt(t *testing.T) {
	needRoot(t)
	f := newFake()
	f.exitAtOnce = true
	err := startFailing(t, f)
	if !strings.Contains(err.Error(), "fb-a1b2c3d4e5f6-n1-app exited (code 2)") || !strings.Contains(err.Error(), "node-1.log") {
		t.Errorf("err = %v", err)
	}
}

func TestAnAddressClashNamesCleanup(t *testing.T) {
	needRoot(t)
	f := newFake()
	f.startErr["fb-a1b2c3d4e5f6-n2-net"] = errors.New("Error response from daemon: Address already in use")
	err := startFailing(t, f)
	if !strings.Contains(err.Error(), "node 2") || !strings.Contains(err.Error(), "faultbench cleanup") {
		t.Errorf("err = %v", err)
	}
}

func TestArgvIsTheLocalBackendsNodeCommand(t *testing.T) {
	sub := netip.MustParsePrefix("10.214.9.0/24")
	c := &Containers{spec: testSpec("/r", "a1b2c3d4e5f6", 2), subnet: sub}
	c.spec.Mode = "ha"
	n := &ctrNode{id: 2, addr: "10.214.9.12:8080"}
	got := strings.Join(c.argv(n), " ")
	want := "node static --listen 10.214.9.12:8080 --node 2 --peers 10.214.9.11:8080,10.214.9.12:8080 --dir /data --mode ha --pages 20 --page-size 2048"
	if got != want {
		t.Errorf("argv\n got %s\nwant %s", got, want)
	}
}

func TestParseLdd(t *testing.T) {
	out := "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n"
	got := parseLdd(out)
	want := []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"}
	if !slices.Equal(got, want) {
		t.Errorf("parseLdd = %v, want %v", got, want)
	}
}

func FuzzDemuxLogs(f *testing.F) {
	f.Add([]byte("\x01\x00\x00\x00\x00\x00\x00\x06hello\n\x02\x00\x00\x00\x00\x00\x00\x04err\n"))
	f.Add([]byte("plain tty output\n"))
	f.Add([]byte("\x01\x00\x00\x00\x00\x00\x10\x00torn"))
	f.Fuzz(func(t *testing.T, b []byte) {
		out := demuxLogs(b)
		if len(out) > len(b) {
			t.Fatalf("demux grew %d bytes to %d", len(b), len(out))
		}
	})
}

func TestDemuxLogs(t *testing.T) {
	got := string(demuxLogs([]byte("\x01\x00\x00\x00\x00\x00\x00\x06hello\n\x02\x00\x00\x00\x00\x00\x00\x04err\n")))
	if got != "hello\nerr\n" {
		t.Errorf("demux = %q", got)
	}
}

func TestAMissingUserImageIsAnErrorSayingHowToGetIt(t *testing.T) {
	f := newFake()
	spec := testSpec(t.TempDir(), "", 1)
	spec.System, spec.Image, spec.Command = ContainerSystem, "shop/web:1", []string{"serve"}
	_, err := fakeBackend(f).Plan(spec)
	if err == nil || !strings.Contains(err.Error(), "docker build -t shop/web:1") || !strings.Contains(err.Error(), "docker pull shop/web:1") {
		t.Fatalf("Plan = %v", err)
	}
	f.images["shop/web:1"] = ImageInfo{ID: "sha256:1"}
	if _, err := fakeBackend(f).Plan(spec); err != nil {
		t.Fatalf("Plan with the image: %v", err)
	}
}

func TestAUserContainerRunsItsImageWithTheNodesPlaceholders(t *testing.T) {
	c := &Containers{spec: testSpec("/r", "a1b2c3d4e5f6", 2)}
	c.spec.System, c.spec.Image = ContainerSystem, "shop/web:1"
	c.spec.Command = []string{"serve", "--bind", "{addr}", "--port", "{port}", "--id", "{node}", "--data", "{dir}"}
	c.spec.ImageEnv = []string{"MODE=test"}
	n := &ctrNode{id: 2, addr: "10.214.9.12:8000", dir: "/r/node-2", holder: "h2"}
	s := c.appSpec(n, []string{"FAULTBENCH_RUN_ID=a1b2c3d4e5f6"}, nil)
	if s.Image != "shop/web:1" || s.NetworkOf != "h2" || strings.Join(s.Cmd, " ") != "serve --bind 10.214.9.12 --port 8000 --id 2 --data /data" ||
		strings.Join(s.Env, " ") != "FAULTBENCH_RUN_ID=a1b2c3d4e5f6 MODE=test" || s.Binds[0] != "/r/node-2:/data" {
		t.Errorf("app spec %+v", s)
	}
}
