package docker

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// fakeEngine is an in-memory engine: containers never run a process, so
// readiness never succeeds; exitAtOnce makes every app container exit as
// it starts, startErr fails ContainerStart of a name with that error.
type fakeEngine struct {
	mu         sync.Mutex
	images     map[string]ImageInfo
	imported   []string // files of the last import's tar
	networks   map[string]NetworkInfo
	containers map[string]*ContainerInfo
	specs      map[string]ContainerSpec
	exitAtOnce bool
	startErr   map[string]error
	calls      []string
}

func newFake() *fakeEngine {
	return &fakeEngine{images: map[string]ImageInfo{}, networks: map[string]NetworkInfo{},
		containers: map[string]*ContainerInfo{}, specs: map[string]ContainerSpec{}, startErr: map[string]error{}}
}

func (f *fakeEngine) log(format string, a ...any) {
	f.mu.Lock()
	f.calls = append(f.calls, fmt.Sprintf(format, a...))
	f.mu.Unlock()
}

func notFound(what string) error { return fmt.Errorf("%s: %w", what, errNotFound) }

func (f *fakeEngine) Version() string { return "1.41" }

func (f *fakeEngine) ImageInspect(_ context.Context, ref string) (ImageInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i, ok := f.images[ref]; ok {
		return i, nil
	}
	return ImageInfo{}, notFound("image " + ref)
}

func (f *fakeEngine) ImageImport(_ context.Context, r io.Reader, ref string, changes []string) error {
	tr := tar.NewReader(r)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		names = append(names, h.Name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.imported = names
	f.images[ref] = ImageInfo{ID: "sha256:feed" + ref[len(ref)-4:], Tags: []string{ref}}
	f.calls = append(f.calls, "import "+ref+" "+strings.Join(changes, "|"))
	return nil
}

func (f *fakeEngine) ImageRemove(_ context.Context, ref string) error { return nil }
func (f *fakeEngine) ImageList(context.Context, string) ([]ImageInfo, error) {
	return nil, nil
}

func (f *fakeEngine) NetworkCreate(_ context.Context, name string, subnet netip.Prefix, labels map[string]string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.networks[name] = NetworkInfo{ID: name, Name: name, Subnets: []netip.Prefix{subnet}, Labels: labels}
	return name, nil
}

func (f *fakeEngine) NetworkDisconnect(_ context.Context, netID, id string) error {
	f.log("disconnect %s from %s", id, netID)
	return nil
}

func (f *fakeEngine) NetworkConnect(_ context.Context, netID, id string, ip netip.Addr) error {
	f.log("connect %s to %s as %s", id, netID, ip)
	return nil
}

func (f *fakeEngine) NetworkRemove(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.networks[id]; !ok {
		return notFound("network " + id)
	}
	delete(f.networks, id)
	return nil
}

func (f *fakeEngine) NetworkList(context.Context, string) ([]NetworkInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []NetworkInfo
	for _, n := range f.networks {
		out = append(out, n)
	}
	return out, nil
}

func (f *fakeEngine) ContainerCreate(_ context.Context, s ContainerSpec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := fmt.Sprintf("%064d", len(f.specs)+1)
	f.specs[id] = s
	f.containers[id] = &ContainerInfo{ID: id, Name: s.Name, Image: s.Image, Labels: s.Labels, Status: "created"}
	return id, nil
}

func (f *fakeEngine) get(id string) (*ContainerInfo, error) {
	c, ok := f.containers[id]
	if !ok {
		return nil, notFound("container " + id)
	}
	return c, nil
}

func (f *fakeEngine) ContainerStart(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(id)
	if err != nil {
		return err
	}
	if err := f.startErr[c.Name]; err != nil {
		return err
	}
	if f.exitAtOnce && strings.HasSuffix(c.Name, "-app") {
		c.Status, c.ExitCode = "exited", 2
		return nil
	}
	c.Status, c.Running, c.Pid = "running", true, 4200000 // no process has it
	return nil
}

func (f *fakeEngine) ContainerInspect(_ context.Context, id string) (ContainerInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(id)
	if err != nil {
		for _, byName := range f.containers {
			if byName.Name == id {
				return *byName, nil
			}
		}
		return ContainerInfo{}, err
	}
	return *c, nil
}

// run adds a running container with labels, an address on network net,
// and published ports (container port -> host address), as a compose
// stack's: its id is 64 hex digits, its pid a number no process has.
func (f *fakeEngine) run(name string, labels map[string]string, ip string, published map[int]string) *ContainerInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := fmt.Sprintf("%064x", len(f.containers)+0xc0ffee)
	c := &ContainerInfo{ID: id, Name: name, Image: "sha256:beef", ImageID: "sha256:beef", ImageRef: "shop/web:1", Labels: labels,
		Status: "running", Running: true, Pid: 4000000 + len(f.containers), RestartPolicy: "always",
		IPs: map[string]netip.Addr{"shop_default": netip.MustParseAddr(ip)}, Gateways: map[string]netip.Addr{"shop_default": netip.MustParseAddr("172.30.0.1")},
		Published: map[int][]netip.AddrPort{}, Exposed: []int{8000}}
	for port, host := range published {
		c.Published[port] = []netip.AddrPort{netip.MustParseAddrPort(host)}
		c.Exposed = []int{port}
	}
	f.containers[id] = c
	return c
}

// crash ends container id's process as a kill from the host would: under
// a restart policy the engine says it is restarting (and, as Docker does,
// still Running, with no process) until restartByPolicy.
func (f *fakeEngine) crash(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	crashed(f.containers[id])
}

func crashed(c *ContainerInfo) {
	c.Status, c.Running, c.Paused, c.ExitCode, c.Pid = "exited", false, false, 137, 0
	if c.RestartPolicy == "always" || c.RestartPolicy == "unless-stopped" {
		c.Status, c.Running = "restarting", true
	}
}

// crashPid crashes the container whose process is pid, as a kill from
// the host would.
func (f *fakeEngine) crashPid(pid int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.containers {
		if c.Pid == pid {
			crashed(c)
			return nil
		}
	}
	return fmt.Errorf("no process %d", pid)
}

// restartByPolicy restarts container id as the engine's restart policy
// does: the restart count goes up.
func (f *fakeEngine) restartByPolicy(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	c.Status, c.Running, c.RestartCount, c.Pid = "running", true, c.RestartCount+1, 4100000+c.RestartCount
}

func (f *fakeEngine) state(id string) ContainerInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *f.containers[id]
}

func (f *fakeEngine) set(id, status string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(id)
	if err != nil {
		return err
	}
	c.Status, c.Running, c.Paused = status, status == "running" || status == "paused", status == "paused"
	return nil
}

func (f *fakeEngine) ContainerKill(_ context.Context, id, _ string) error { return f.set(id, "exited") }
func (f *fakeEngine) ContainerStop(_ context.Context, id string, _ time.Duration) error {
	return f.set(id, "exited")
}
func (f *fakeEngine) ContainerRestart(_ context.Context, id string, _ time.Duration) error {
	return f.set(id, "running")
}
func (f *fakeEngine) ContainerPause(_ context.Context, id string) error { return f.set(id, "paused") }
func (f *fakeEngine) ContainerUnpause(_ context.Context, id string) error {
	return f.set(id, "running")
}

func (f *fakeEngine) ContainerRemove(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, c := range f.containers {
		if k == id || c.Name == id {
			delete(f.containers, k)
			return nil
		}
	}
	return notFound("container " + id)
}

// ContainerList filters by label as the engine does: "key" (has it) or
// "key=value".
func (f *fakeEngine) ContainerList(_ context.Context, label string) ([]ContainerInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key, value, byValue := strings.Cut(label, "=")
	var out []ContainerInfo
	for _, c := range f.containers {
		v, has := c.Labels[key]
		if label != "" && (!has || (byValue && v != value)) {
			continue
		}
		out = append(out, *c)
	}
	return out, nil
}

func (f *fakeEngine) ContainerLogs(context.Context, string) ([]byte, error) {
	return []byte("\x01\x00\x00\x00\x00\x00\x00\x06hello\n"), nil
}

func (f *fakeEngine) Exec(context.Context, string, []string) (int, error) {
	return 0, errors.New("fake engine runs no process")
}
