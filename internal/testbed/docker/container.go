package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/testbed"
)

// ContainerSystem is the Spec.System of the user's own image
// (cluster.system: container), the container-side sibling of system
// command. Only backend docker runs it.
const ContainerSystem = "container"

func init() {
	testbed.RegisterSystem(testbed.System{Name: ContainerSystem, Check: checkContainer,
		Takes: []string{testbed.TakesCommand, testbed.TakesImage, testbed.TakesEnv}})
}

// checkContainer: system container needs the user's image and the port
// its containers listen on (unless it attaches to running ones), and runs
// only on backend docker.
func checkContainer(sc *scenario.Scenario, _ testbed.Plan) error {
	var errs []error
	if sc.Cluster.Attach == nil { // attached containers already run their image, on their ports
		if sc.Cluster.Image == "" {
			errs = append(errs, sc.Errorf([]any{"cluster"}, "system: container needs image: the name of a local image (docker build -t NAME . or docker pull NAME)"))
		}
		if sc.Cluster.Port <= 0 {
			errs = append(errs, sc.Errorf([]any{"cluster", "port"}, "system: container needs the port its containers listen on (1-65535)"))
		}
	}
	if b := sc.Cluster.Backend; b != Name {
		errs = append(errs, sc.Errorf([]any{"cluster", "backend"}, "system: container runs only on backend: docker (this is backend: %s)", b))
		return errors.Join(errs...)
	}
	return errors.Join(errs...)
}

// checkImage says how to get a user's image that the engine lacks:
// faultbench never pulls.
func checkImage(ctx context.Context, eng Engine, ref string) error {
	_, err := eng.ImageInspect(ctx, ref)
	if IsNotFound(err) {
		return fmt.Errorf("image %s is not in the local engine and faultbench never pulls: build it (docker build -t %s DIR) or pull it (docker pull %s) first", ref, ref, ref)
	}
	if err != nil {
		return fmt.Errorf("docker: inspect image %s: %w", ref, err)
	}
	return nil
}

// userCommand is a container node's command: spec.Command with {addr}
// {port} {node} {dir} substituted ({dir} is /data), or nil for the
// image's own.
func userCommand(spec testbed.Spec, n *ctrNode) []string {
	if len(spec.Command) == 0 {
		return nil
	}
	host, port, _ := net.SplitHostPort(n.addr)
	r := strings.NewReplacer("{addr}", host, "{port}", port, "{node}", strconv.Itoa(n.id), "{dir}", "/data")
	out := make([]string, len(spec.Command))
	for i, a := range spec.Command {
		out[i] = r.Replace(a)
	}
	return out
}

// appSpec is node n's application container: the faultbench image running
// the node kind, or the user's image.
func (c *Containers) appSpec(n *ctrNode, env []string, labels map[string]string) ContainerSpec {
	s := ContainerSpec{Name: containerName(c.spec.RunID, n.id, "app"), NetworkOf: n.holder,
		Labels: labels, Binds: []string{n.dir + ":/data"}}
	if c.spec.System == ContainerSystem {
		s.Image, s.Cmd, s.Env = c.spec.Image, userCommand(c.spec, n), append(env, c.spec.ImageEnv...)
		return s
	}
	s.Image, s.Cmd, s.Env = c.image.Ref, c.argv(n), env
	return s
}

// tcpReady is the readiness check of a service with no ready path.
func tcpReady(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	return conn.Close()
}
