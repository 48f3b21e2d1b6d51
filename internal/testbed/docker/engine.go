package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// Engine is the handful of Docker Engine API calls the backend makes. The
// production Engine is the moby client (Connect); tests use a fake. Every
// method is safe for concurrent use and bounded by ctx. A missing object
// is reported as an error for which IsNotFound is true.
type Engine interface {
	// Version is the API version the connection speaks after negotiation.
	Version() string
	ImageInspect(ctx context.Context, ref string) (ImageInfo, error)
	// ImageImport creates image ref from a root-filesystem tar, with
	// Dockerfile-style changes (ENTRYPOINT, LABEL, ...).
	ImageImport(ctx context.Context, tar io.Reader, ref string, changes []string) error
	ImageRemove(ctx context.Context, ref string) error
	ImageList(ctx context.Context, label string) ([]ImageInfo, error)
	NetworkCreate(ctx context.Context, name string, subnet netip.Prefix, labels map[string]string) (string, error)
	NetworkRemove(ctx context.Context, id string) error
	// NetworkList lists the networks with label (every one when "").
	NetworkList(ctx context.Context, label string) ([]NetworkInfo, error)
	// NetworkDisconnect takes container id off network netID;
	// NetworkConnect puts it back with address ip.
	NetworkDisconnect(ctx context.Context, netID, id string) error
	NetworkConnect(ctx context.Context, netID, id string, ip netip.Addr) error
	ContainerCreate(ctx context.Context, spec ContainerSpec) (string, error)
	ContainerStart(ctx context.Context, id string) error
	ContainerInspect(ctx context.Context, id string) (ContainerInfo, error)
	ContainerKill(ctx context.Context, id, signal string) error
	ContainerStop(ctx context.Context, id string, grace time.Duration) error
	ContainerRestart(ctx context.Context, id string, grace time.Duration) error
	ContainerPause(ctx context.Context, id string) error
	ContainerUnpause(ctx context.Context, id string) error
	ContainerRemove(ctx context.Context, id string) error
	// ContainerList lists the containers (running or not) with label.
	ContainerList(ctx context.Context, label string) ([]ContainerInfo, error)
	// ContainerLogs is the container's output so far (stdout and stderr
	// interleaved as the engine stored them).
	ContainerLogs(ctx context.Context, id string) ([]byte, error)
	// Exec starts argv in the container, detached, and returns its pid in
	// the host's pid namespace.
	Exec(ctx context.Context, id string, argv []string) (int, error)
}

// ImageInfo is what the backend reads of an image.
type ImageInfo struct {
	ID     string
	Tags   []string
	Labels map[string]string
}

// NetworkInfo is what the backend reads of a network.
type NetworkInfo struct {
	ID, Name string
	Subnets  []netip.Prefix
	Labels   map[string]string
}

// ContainerSpec is a container to create.
type ContainerSpec struct {
	Name   string
	Image  string
	Cmd    []string // appended to the image's entrypoint
	Env    []string
	Labels map[string]string
	// Network and IP attach the container to a network at a fixed address;
	// NetworkOf instead shares the network namespace of another container.
	Network   string
	IP        netip.Addr
	NetworkOf string
	Binds     []string // host:container bind mounts
}

// ContainerInfo is what the backend reads of a container.
type ContainerInfo struct {
	ID, Name, Image string
	Labels          map[string]string
	Status          string // created, running, paused, restarting, exited, dead
	Running, Paused bool
	Pid             int
	ExitCode        int
	OOMKilled       bool
	RestartPolicy   string
	RestartCount    int
	IPs             map[string]netip.Addr // network name -> address
	// What inspect alone says (ContainerList leaves them zero): the image
	// as the container names it and its id, when the container last
	// started and ended, its networks' gateways, its published and
	// exposed TCP ports, and its network mode (host, container:ID, ...).
	ImageRef, ImageID     string
	StartedAt, FinishedAt time.Time
	Gateways              map[string]netip.Addr
	Published             map[int][]netip.AddrPort // container port -> host bindings
	Exposed               []int                    // sorted
	NetworkMode           string
}

// Up reports whether the container's process runs (paused or not). The
// engine says Running also of a container it is about to restart by its
// restart policy (Status restarting, no process), which is down.
func (c ContainerInfo) Up() bool { return c.Running && c.Status != "restarting" }

// IsNotFound reports whether err says an object does not exist.
func IsNotFound(err error) bool {
	return cerrdefs.IsNotFound(err) || errors.Is(err, errNotFound)
}

// errNotFound is the fake engine's not-found error.
var errNotFound = errors.New("not found")

// MinAPI is the oldest Engine API the backend is tested against (Docker
// 20.10); the client negotiates down to the engine's version.
const MinAPI = "1.41"

// Connect opens the engine named by DOCKER_HOST (default: the local unix
// socket), negotiates the API version and pings it. Its errors name the
// cause: no engine answering, no permission on the socket, an engine too old.
func Connect(ctx context.Context) (Engine, error) {
	c, err := client.New(client.FromEnv)
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ping, err := c.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	if err != nil {
		_ = c.Close()
		return nil, explainConnect(err)
	}
	if versionLess(ping.APIVersion, MinAPI) {
		_ = c.Close()
		return nil, fmt.Errorf("docker: the engine speaks API %s, older than %s (Docker 20.10): upgrade the engine", ping.APIVersion, MinAPI)
	}
	return &moby{c: c}, nil
}

// explainConnect turns a failed ping into a one-line cause and remedy.
func explainConnect(err error) error {
	host := os.Getenv("DOCKER_HOST")
	if host == "" {
		host = "unix:///var/run/docker.sock"
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "permission denied"):
		return fmt.Errorf("docker: no permission on the engine's socket %s: run as root or as a member of group docker", host)
	case strings.Contains(msg, "no such file") || strings.Contains(msg, "connection refused") || strings.Contains(msg, "Cannot connect"):
		return fmt.Errorf("docker: no engine answers at %s: start it (systemctl start docker) or set DOCKER_HOST", host)
	}
	return fmt.Errorf("docker: engine at %s: %w", host, err)
}

// versionLess compares API versions "1.41" < "1.9" numerically.
func versionLess(a, b string) bool {
	var amaj, amin, bmaj, bmin int
	_, _ = fmt.Sscanf(a, "%d.%d", &amaj, &amin)
	_, _ = fmt.Sscanf(b, "%d.%d", &bmaj, &bmin)
	return amaj < bmaj || (amaj == bmaj && amin < bmin)
}

// moby is the Engine over github.com/moby/moby/client.
type moby struct{ c *client.Client }

func (m *moby) Version() string { return m.c.ClientVersion() }

func labelFilter(label string) client.Filters {
	f := client.Filters{}
	if label != "" {
		f = f.Add("label", label)
	}
	return f
}

func (m *moby) ImageInspect(ctx context.Context, ref string) (ImageInfo, error) {
	r, err := m.c.ImageInspect(ctx, ref)
	if err != nil {
		return ImageInfo{}, err
	}
	info := ImageInfo{ID: r.ID, Tags: r.RepoTags}
	if r.Config != nil {
		info.Labels = r.Config.Labels
	}
	return info, nil
}

func (m *moby) ImageImport(ctx context.Context, tar io.Reader, ref string, changes []string) error {
	out, err := m.c.ImageImport(ctx, client.ImageImportSource{Source: tar, SourceName: "-"}, ref, client.ImageImportOptions{Changes: changes})
	if err != nil {
		return err
	}
	defer out.Close()
	b, err := io.ReadAll(out)
	if err != nil {
		return err
	}
	if strings.Contains(string(b), `"error"`) {
		return fmt.Errorf("import %s: %s", ref, strings.TrimSpace(string(b)))
	}
	return nil
}

func (m *moby) ImageRemove(ctx context.Context, ref string) error {
	_, err := m.c.ImageRemove(ctx, ref, client.ImageRemoveOptions{})
	return err
}

func (m *moby) ImageList(ctx context.Context, label string) ([]ImageInfo, error) {
	r, err := m.c.ImageList(ctx, client.ImageListOptions{Filters: labelFilter(label)})
	if err != nil {
		return nil, err
	}
	var out []ImageInfo
	for _, s := range r.Items {
		out = append(out, ImageInfo{ID: s.ID, Tags: s.RepoTags, Labels: s.Labels})
	}
	return out, nil
}

func (m *moby) NetworkCreate(ctx context.Context, name string, subnet netip.Prefix, labels map[string]string) (string, error) {
	gw := subnet.Addr().Next()
	r, err := m.c.NetworkCreate(ctx, name, client.NetworkCreateOptions{Driver: "bridge", Labels: labels,
		IPAM: &network.IPAM{Config: []network.IPAMConfig{{Subnet: subnet, Gateway: gw}}}})
	return r.ID, err
}

func (m *moby) NetworkDisconnect(ctx context.Context, netID, id string) error {
	_, err := m.c.NetworkDisconnect(ctx, netID, client.NetworkDisconnectOptions{Container: id})
	return err
}

func (m *moby) NetworkConnect(ctx context.Context, netID, id string, ip netip.Addr) error {
	_, err := m.c.NetworkConnect(ctx, netID, client.NetworkConnectOptions{Container: id,
		EndpointConfig: &network.EndpointSettings{IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: ip}}})
	return err
}

func (m *moby) NetworkRemove(ctx context.Context, id string) error {
	_, err := m.c.NetworkRemove(ctx, id, client.NetworkRemoveOptions{})
	return err
}

func (m *moby) NetworkList(ctx context.Context, label string) ([]NetworkInfo, error) {
	r, err := m.c.NetworkList(ctx, client.NetworkListOptions{Filters: labelFilter(label)})
	if err != nil {
		return nil, err
	}
	var out []NetworkInfo
	for _, n := range r.Items {
		info := NetworkInfo{ID: n.ID, Name: n.Name, Labels: n.Labels}
		for _, c := range n.IPAM.Config {
			info.Subnets = append(info.Subnets, c.Subnet)
		}
		out = append(out, info)
	}
	return out, nil
}

func (m *moby) ContainerCreate(ctx context.Context, s ContainerSpec) (string, error) {
	cfg := &container.Config{Image: s.Image, Cmd: s.Cmd, Env: s.Env, Labels: s.Labels}
	host := &container.HostConfig{Binds: s.Binds}
	var netCfg *network.NetworkingConfig
	switch {
	case s.NetworkOf != "":
		host.NetworkMode = container.NetworkMode("container:" + s.NetworkOf)
	case s.Network != "":
		host.NetworkMode = container.NetworkMode(s.Network)
		netCfg = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			s.Network: {IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: s.IP}}}}
	}
	r, err := m.c.ContainerCreate(ctx, client.ContainerCreateOptions{Name: s.Name, Config: cfg, HostConfig: host, NetworkingConfig: netCfg})
	return r.ID, err
}

func (m *moby) ContainerStart(ctx context.Context, id string) error {
	_, err := m.c.ContainerStart(ctx, id, client.ContainerStartOptions{})
	return err
}

func (m *moby) ContainerInspect(ctx context.Context, id string) (ContainerInfo, error) {
	r, err := m.c.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return ContainerInfo{}, err
	}
	c := r.Container
	info := ContainerInfo{ID: c.ID, Name: strings.TrimPrefix(c.Name, "/"), Image: c.Image, IPs: map[string]netip.Addr{},
		RestartCount: c.RestartCount, ImageID: c.Image, Gateways: map[string]netip.Addr{}, Published: map[int][]netip.AddrPort{}}
	if c.Config != nil {
		info.Labels, info.ImageRef = c.Config.Labels, c.Config.Image
		for p := range c.Config.ExposedPorts {
			if p.Proto() == network.TCP {
				info.Exposed = append(info.Exposed, int(p.Num()))
			}
		}
		slices.Sort(info.Exposed)
	}
	if c.State != nil {
		info.Status, info.Running, info.Paused = string(c.State.Status), c.State.Running, c.State.Paused
		info.Pid, info.ExitCode, info.OOMKilled = c.State.Pid, c.State.ExitCode, c.State.OOMKilled
		info.StartedAt, _ = time.Parse(time.RFC3339Nano, c.State.StartedAt)
		info.FinishedAt, _ = time.Parse(time.RFC3339Nano, c.State.FinishedAt)
	}
	if c.HostConfig != nil {
		info.RestartPolicy = string(c.HostConfig.RestartPolicy.Name)
		info.NetworkMode = string(c.HostConfig.NetworkMode)
	}
	if c.NetworkSettings != nil {
		for name, ep := range c.NetworkSettings.Networks {
			if ep != nil {
				info.IPs[name], info.Gateways[name] = ep.IPAddress, ep.Gateway
			}
		}
		for p, binds := range c.NetworkSettings.Ports {
			if p.Proto() != network.TCP {
				continue
			}
			for _, b := range binds {
				if port, err := strconv.Atoi(b.HostPort); err == nil && port > 0 {
					info.Published[int(p.Num())] = append(info.Published[int(p.Num())], netip.AddrPortFrom(b.HostIP, uint16(port)))
				}
			}
		}
	}
	return info, nil
}

func (m *moby) ContainerKill(ctx context.Context, id, signal string) error {
	_, err := m.c.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: signal})
	return err
}

func seconds(d time.Duration) *int {
	s := int((d + time.Second - 1) / time.Second)
	return &s
}

func (m *moby) ContainerStop(ctx context.Context, id string, grace time.Duration) error {
	_, err := m.c.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: seconds(grace)})
	return err
}

func (m *moby) ContainerRestart(ctx context.Context, id string, grace time.Duration) error {
	_, err := m.c.ContainerRestart(ctx, id, client.ContainerRestartOptions{Timeout: seconds(grace)})
	return err
}

func (m *moby) ContainerPause(ctx context.Context, id string) error {
	_, err := m.c.ContainerPause(ctx, id, client.ContainerPauseOptions{})
	return err
}

func (m *moby) ContainerUnpause(ctx context.Context, id string) error {
	_, err := m.c.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
	return err
}

func (m *moby) ContainerRemove(ctx context.Context, id string) error {
	_, err := m.c.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
	return err
}

func (m *moby) ContainerList(ctx context.Context, label string) ([]ContainerInfo, error) {
	r, err := m.c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: labelFilter(label)})
	if err != nil {
		return nil, err
	}
	var out []ContainerInfo
	for _, s := range r.Items {
		name := ""
		if len(s.Names) > 0 {
			name = strings.TrimPrefix(s.Names[0], "/")
		}
		out = append(out, ContainerInfo{ID: s.ID, Name: name, Image: s.Image, Labels: s.Labels, Status: string(s.State),
			Running: s.State == container.StateRunning, Paused: s.State == container.StatePaused})
	}
	return out, nil
}

func (m *moby) ContainerLogs(ctx context.Context, id string) ([]byte, error) {
	r, err := m.c.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(io.LimitReader(r, 64<<20))
}

func (m *moby) Exec(ctx context.Context, id string, argv []string) (int, error) {
	e, err := m.c.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: argv})
	if err != nil {
		return 0, err
	}
	if _, err := m.c.ExecStart(ctx, e.ID, client.ExecStartOptions{Detach: true}); err != nil {
		return 0, err
	}
	for range 100 {
		r, err := m.c.ExecInspect(ctx, e.ID, client.ExecInspectOptions{})
		if err != nil {
			return 0, err
		}
		if r.PID > 0 {
			return r.PID, nil
		}
		if !r.Running && r.ExitCode != 0 {
			return 0, fmt.Errorf("exec %v exited with %d", argv, r.ExitCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0, fmt.Errorf("exec %v: no pid after 1s", argv)
}
