package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/testbed"
)

// attachSystems are the systems a run can attach to: a black box
// (container) and faultbench's own page server (static, whose pages the
// clients verify). The others configure the nodes they start (peers,
// tokens, proxies), which an attached stack has done by itself.
var attachSystems = []string{ContainerSystem, "static"}

// findAttachedFor finds spec.Attach's containers and checks their number
// against spec.Nodes when the scenario gives one.
func findAttachedFor(ctx context.Context, eng Engine, spec testbed.Spec) (attachment, error) {
	att, err := findAttached(ctx, eng, spec.Attach, spec.Port)
	if err != nil {
		return att, err
	}
	if spec.Nodes != 0 && spec.Nodes != len(att.nodes) {
		var names []string
		for _, n := range att.nodes {
			names = append(names, n.Name)
		}
		return att, attachErr("nodes", "%d nodes, but attach finds %d containers (%s): set nodes: %d, or leave nodes out", spec.Nodes, len(att.nodes), strings.Join(names, ", "), len(att.nodes))
	}
	return att, nil
}

// attachedPlan is the plan of an attached stack: the nodes' addresses on
// their networks, reachable from each other through the kernel.
func attachedPlan(att attachment) testbed.Plan {
	hosts := make([]string, len(att.nodes))
	for i, n := range att.nodes {
		hosts[i] = n.IP.String()
	}
	return testbed.Plan{Hosts: hosts, KernelLinks: true}
}

// CheckScenario implements testbed.ScenarioChecker: for an attached
// cluster, that the system is one a run can attach to, and that the engine holds what
// attach names, running (errors at the key, file:line); its notes say
// which container is which node and what its restart policy means.
func (b *Backend) CheckScenario(sc *scenario.Scenario) ([]string, error) {
	c := sc.Cluster
	if c.Attach == nil {
		return nil, nil
	}
	var errs []error
	if !slices.Contains(attachSystems, c.System) {
		errs = append(errs, sc.Errorf([]any{"cluster", "system"}, "system %s starts and configures its own nodes; attach takes system: container (any running service) or static (faultbench's page server, whose pages the clients verify)", c.System))
	}
	for i, f := range sc.Faults {
		if f.Type == "disconnect" {
			errs = append(errs, sc.Errorf([]any{"faults", i, "type"}, "fault disconnect takes one of the run's own containers off the run's network; an attached container is not: use link-down (a silent nft DROP in its namespace)"))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	ctx := context.Background()
	eng, err := b.Connect(ctx)
	if err != nil {
		return nil, sc.Errorf([]any{"cluster", "backend"}, "%v", err)
	}
	att, err := findAttachedFor(ctx, eng, testbed.FromScenario(c, ""))
	var ae *attachError
	if errors.As(err, &ae) {
		return nil, sc.Errorf(keyPath(ae.Key), "%v", ae.Err)
	}
	if err != nil {
		return nil, sc.Errorf([]any{"cluster", "attach"}, "%v", err)
	}
	return att.notes(), nil
}

// keyPath turns a dotted key under cluster into sc.Errorf's path.
func keyPath(key string) []any {
	path := []any{"cluster"}
	for _, k := range strings.Split(key, ".") {
		path = append(path, k)
	}
	return path
}

// attach is Start for an attached stack: it finds the containers again
// (they must be those the plan found), journals them with the run's
// warden and waits until each answers.
func (b *Backend) attach(ctx context.Context, spec testbed.Spec, plan testbed.Plan, emit func(record.Event)) (testbed.Cluster, error) {
	if spec.RunID == "" {
		buf := make([]byte, 6)
		_, _ = rand.Read(buf)
		spec.RunID = hex.EncodeToString(buf)
	}
	eng, err := b.Connect(ctx)
	if err != nil {
		return nil, err
	}
	att, err := findAttachedFor(ctx, eng, spec)
	if err != nil {
		return nil, err
	}
	if got := attachedPlan(att); !slices.Equal(got.Hosts, plan.Hosts) {
		return nil, fmt.Errorf("attach: the stack changed since it was planned (nodes at %v, now %v): run again", plan.Hosts, got.Hosts)
	}
	a, err := attach(ctx, eng, spec, att, emit)
	if err != nil {
		return nil, err // never a typed nil in the interface
	}
	return a, nil
}
