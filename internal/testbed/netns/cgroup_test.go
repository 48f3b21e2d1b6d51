package netns

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeV2 is a directory laid out like a cgroup v2 mount.
func fakeV2(t *testing.T) string {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestCgroupV2Layout(t *testing.T) {
	root := fakeV2(t)
	cg, err := cgroupPaths(root, "faultbench/run/node-1")
	if err != nil {
		t.Fatal(err)
	}
	if !cg.v2 || len(cg.dirs) != 1 || cg.dirs[0] != filepath.Join(root, "faultbench/run/node-1") {
		t.Fatalf("cgroup = %+v", cg)
	}
	if err := cg.create(); err != nil {
		t.Fatal(err)
	}
	if got := cg.procsFiles(); len(got) != 1 || !strings.HasSuffix(got[0], "node-1/cgroup.procs") {
		t.Errorf("procs files = %v", got)
	}
	// The kernel reports the freeze in cgroup.events; the fake already does.
	d := cg.dirs[0]
	_ = os.WriteFile(filepath.Join(d, "cgroup.events"), []byte("populated 1\nfrozen 1\n"), 0o644)
	if err := cg.setFrozen(true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(d, "cgroup.freeze")); string(b) != "1" {
		t.Errorf("cgroup.freeze = %q, want 1", b)
	}
	_ = os.WriteFile(filepath.Join(d, "cgroup.events"), []byte("populated 1\nfrozen 0\n"), 0o644)
	if err := cg.setFrozen(false); err != nil {
		t.Fatal(err)
	}
	// Kill writes cgroup.kill and waits for cgroup.procs to empty.
	_ = os.WriteFile(filepath.Join(d, "cgroup.procs"), nil, 0o644)
	if err := cg.kill(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(d, "cgroup.kill")); string(b) != "1" {
		t.Errorf("cgroup.kill = %q, want 1", b)
	}
	_ = os.WriteFile(filepath.Join(d, "memory.current"), []byte("4096\n"), 0o644)
	if got := cg.memoryUsage(); got != 4096 {
		t.Errorf("memory usage = %d", got)
	}
}

func TestCgroupV1NeedsTheFreezer(t *testing.T) {
	root := t.TempDir() // no cgroup.controllers: v1, and no freezer mounted
	if _, err := cgroupPaths(root, "faultbench/run/node-1"); err == nil || !strings.Contains(err.Error(), "freezer") {
		t.Fatalf("err = %v, want one naming the missing freezer", err)
	}
	for _, c := range []string{"freezer", "memory"} {
		_ = os.MkdirAll(filepath.Join(root, c), 0o755)
		_ = os.WriteFile(filepath.Join(root, c, "cgroup.procs"), nil, 0o644)
	}
	cg, err := cgroupPaths(root, "faultbench/run/node-1")
	if err != nil {
		t.Fatal(err)
	}
	if cg.v2 || len(cg.dirs) != 2 || !strings.Contains(cg.dirs[0], "/freezer/") {
		t.Fatalf("cgroup = %+v, want freezer first, then memory", cg)
	}
	file, frozen, thawed := cg.freezeFile()
	if !strings.HasSuffix(file, "freezer.state") || frozen != "FROZEN" || thawed != "THAWED" {
		t.Errorf("freeze file = %s %s %s", file, frozen, thawed)
	}
}

func TestHexIP(t *testing.T) {
	if got := hexIP("0100A8C0"); got.String() != "192.168.0.1" {
		t.Errorf("hexIP = %v", got)
	}
	if hexIP("zz") != nil {
		t.Error("hexIP accepted garbage")
	}
}

func TestPickSubnetAvoidsTheHostsNetworks(t *testing.T) {
	third, err := pickSubnet("0123456789ab")
	if err != nil {
		t.Fatal(err)
	}
	used, _ := usedNets()
	n := newNetwork("0123456789ab", third, 2)
	for _, u := range used {
		if u.Contains(netIP(n.gateway())) {
			t.Errorf("picked %s, inside the host's %v", n.gateway(), u)
		}
	}
}

func netIP(s string) []byte { return net.ParseIP(s) }

func TestWithoutRootTheBackendSaysSo(t *testing.T) {
	err := usableAs(1000)
	if err != ErrNotRoot || strings.Count(err.Error(), "\n") != 0 || !strings.Contains(err.Error(), "needs root") {
		t.Fatalf("err = %v, want the one-line ErrNotRoot", err)
	}
}
