package docker

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/kernelfault"
)

func TestParseCgroups(t *testing.T) {
	id := strings.Repeat("ab", 32)
	exist := func(dirs ...string) func(string) bool {
		return func(d string) bool {
			for _, x := range dirs {
				if d == x {
					return true
				}
			}
			return false
		}
	}
	for _, tc := range []struct {
		name, text string
		exists     func(string) bool
		want       []string
	}{
		{"v1, controllers mounted apart (this machine)",
			"9:name=systemd:/docker/" + id + "\n8:pids:/docker/" + id + "\n6:freezer:/docker/" + id + "\n4:memory:/docker/" + id +
				"\n2:cpuacct:/docker/" + id + "\n1:cpu:/docker/" + id + "\n0::/docker/" + id,
			exist("/sys/fs/cgroup/memory/docker/"+id, "/sys/fs/cgroup/cpu/docker/"+id, "/sys/fs/cgroup/cpuacct/docker/"+id,
				"/sys/fs/cgroup/pids/docker/"+id, "/sys/fs/cgroup/freezer/docker/"+id),
			[]string{"/sys/fs/cgroup/memory/docker/" + id, "/sys/fs/cgroup/cpu/docker/" + id, "/sys/fs/cgroup/cpuacct/docker/" + id, "/sys/fs/cgroup/pids/docker/" + id}},
		{"v1, cpu and cpuacct mounted together",
			"4:memory:/system.slice/docker-" + id + ".scope\n3:cpu,cpuacct:/system.slice/docker-" + id + ".scope",
			exist("/sys/fs/cgroup/memory/system.slice/docker-"+id+".scope", "/sys/fs/cgroup/cpu,cpuacct/system.slice/docker-"+id+".scope"),
			[]string{"/sys/fs/cgroup/memory/system.slice/docker-" + id + ".scope", "/sys/fs/cgroup/cpu,cpuacct/system.slice/docker-" + id + ".scope"}},
		{"v2", "0::/system.slice/docker-" + id + ".scope",
			exist("/sys/fs/cgroup/system.slice/docker-" + id + ".scope"),
			[]string{"/sys/fs/cgroup/system.slice/docker-" + id + ".scope"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCgroups(tc.text, tc.exists)
			if err != nil || strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("got %v, %v\nwant %v", got, err, tc.want)
			}
			for _, d := range got {
				if m := containerIDRE.FindStringSubmatch(d); m == nil || m[1] != id {
					t.Errorf("%s: the warden's ownership check finds no container id in it", d)
				}
			}
		})
	}
	if _, err := parseCgroups("0::/user.slice", func(string) bool { return false }); err == nil {
		t.Error("a process in no container's cgroup: no error")
	}
}

// readInt reads a cgroup file holding one number.
func readInt(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCPUAndMemoryOfAContainer has the warden run a burner and then a
// balloon in a container's cgroups and measures them in the container's
// own accounting (cgroup v1 here: cpuacct.usage, memory.usage_in_bytes),
// then their revert.
func TestCPUAndMemoryOfAContainer(t *testing.T) {
	eng := engine(t)
	c, events := startCluster(t, eng, 1)
	pid, _, err := c.appPid(1)
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := containerCgroups(pid)
	if err != nil {
		t.Fatal(err)
	}
	var cpuacct, memory string
	for _, d := range dirs {
		switch {
		case strings.Contains(d, "cpuacct"):
			cpuacct = d
		case strings.Contains(d, "/memory/"):
			memory = d
		}
	}
	if cpuacct == "" || memory == "" {
		t.Skipf("not cgroup v1 with cpuacct and memory (%v): the measurement below reads their files", dirs)
	}
	usage := func() int64 { return readInt(t, filepath.Join(cpuacct, "cpuacct.usage")) }
	u0 := usage()
	time.Sleep(300 * time.Millisecond) // bounded: an idle page server's CPU over this time is the baseline
	idle := usage() - u0

	undo, err := c.Burn(kernelfault.Label{Fault: "cpu-hog", ID: 1}, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Wait (eventually: bounded) for the burner's first 100 ms of CPU to
	// show in the container's account: on a machine busy with other work
	// (a CI run) it gets far less than a core, so a fixed window measures
	// the neighbours. A burner outside the cgroup never gets there.
	u1, t1 := usage(), time.Now()
	var burning int64
	eventually(t, "the burner counted in the container's CPU", func() error {
		if burning = usage() - u1; burning < 100*int64(time.Millisecond) {
			return fmt.Errorf("%v of CPU in %v, %v in 300 ms idle", time.Duration(burning), time.Since(t1).Round(time.Millisecond), time.Duration(idle))
		}
		return nil
	})
	took := time.Since(t1)
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	if idleThen := idle * int64(took) / int64(300*time.Millisecond); burning < 5*idleThen { // the idle server's CPU over as long
		t.Errorf("the container used %v of CPU in %v with the burner, %v in 300 ms without: not the burner's", time.Duration(burning), took.Round(time.Millisecond), time.Duration(idle))
	}

	m0 := readInt(t, filepath.Join(memory, "memory.usage_in_bytes"))
	const size = 64 << 20
	undo, err = c.Balloon(kernelfault.Label{Fault: "mem-pressure", ID: 2}, 1, size)
	if err != nil {
		t.Fatal(err)
	}
	m1 := readInt(t, filepath.Join(memory, "memory.usage_in_bytes"))
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	m2 := readInt(t, filepath.Join(memory, "memory.usage_in_bytes"))
	// The container's usage also moves by its own page cache: ask for
	// three quarters of the balloon, which a balloon outside the cgroup
	// (0) could never show.
	if m1-m0 < size*3/4 || m1-m2 < size*3/4 {
		t.Errorf("container memory %d MiB before the balloon, %d MiB with it, %d MiB after: want about %d MiB more while it held", m0>>20, m1>>20, m2>>20, size>>20)
	}
	t.Logf("container CPU: %v in 300 ms idle, %v in %v with a 1-thread burner; memory %d → %d → %d MiB with a %d MiB balloon",
		time.Duration(idle), time.Duration(burning), took.Round(time.Millisecond), m0>>20, m1>>20, m2>>20, size>>20)
	n := 0
	for _, e := range events() {
		if (e.Kind == "fault.effective" || e.Kind == "fault.reverted") && strings.HasPrefix(e.Detail, "mechanism cgroup:") {
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d cgroup events, want an effective and a reverted for each helper", n)
	}
}
