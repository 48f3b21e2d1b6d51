package warden

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/kernelfault"
)

// Dir is where journals live; tests point it elsewhere.
var Dir = "/run/faultbench"

// Kinds of journal record, in the order a run creates them; Remove undoes
// them in the reverse order.
const (
	KindController = "controller" // Name: the controller's pid
	KindNetns      = "netns"      // Name: a network namespace (ip netns)
	KindLink       = "link"       // Name: a link in the host namespace
	KindCgroup     = "cgroup"     // Name: a cgroup directory
	KindAux        = "aux"        // Name: the pid of a burner or balloon in a node's cgroup
	KindFault      = "fault"      // Name: a fault's id; Fault: what the warden applied
	KindUnfault    = "unfault"    // Name: the id of a fault the warden reverted
)

// Record is one line of a journal.
type Record struct {
	Kind  string             `json:"kind"`
	Name  string             `json:"name"`
	Fault *kernelfault.Fault `json:"fault,omitempty"`
}

// Journal appends a run's records to its file; safe for concurrent use.
type Journal struct {
	mu   sync.Mutex
	path string
	f    *os.File
}

// Path is the journal file of run id.
func Path(runID string) string { return filepath.Join(Dir, runID+".journal") }

// Open creates (or appends to) run id's journal and records this process
// as the controller.
func Open(runID string) (*Journal, error) { return OpenFor(runID, os.Getpid()) }

// OpenFor creates (or appends to) run id's journal and records the
// controller's pid: while it runs, cleanup leaves the run alone.
func OpenFor(runID string, controller int) (*Journal, error) {
	if runID == "" || strings.ContainsAny(runID, "/.") {
		return nil, fmt.Errorf("journal: bad run id %q", runID)
	}
	if err := os.MkdirAll(Dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	f, err := os.OpenFile(Path(runID), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	j := &Journal{path: f.Name(), f: f}
	return j, j.Add(KindController, fmt.Sprint(controller))
}

// Add writes one record and syncs it, before the object exists.
func (j *Journal) Add(kind, name string) error { return j.add(Record{Kind: kind, Name: name}) }

func (j *Journal) add(r Record) error {
	b, _ := json.Marshal(r)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return errors.New("journal closed")
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	return j.f.Sync()
}

// Finish closes the journal and deletes it: the run removed everything.
func (j *Journal) Finish() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	_ = j.f.Close()
	j.f = nil
	return os.Remove(j.path)
}

// close closes the file, keeping it.
func (j *Journal) close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f != nil {
		_ = j.f.Close()
		j.f = nil
	}
}

// Read parses a journal; a torn last line (the controller died while
// writing it) is skipped.
func Read(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r Record
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Kind != "" {
			out = append(out, r)
		}
	}
	return out, sc.Err()
}

// Remove undoes recs in reverse order: kills every process of each cgroup
// and removes it, deletes the namespaces (and with them every veth end,
// rule and qdisc inside) and the host links. It returns what it removed,
// one line each, and what it could not.
func Remove(recs []Record) (removed []string, err error) {
	var errs []error
	removed, failed := revertEach(Applied(recs))
	removed = append(removed, killAux(recs, "")...)
	defer func() {
		// A fault whose revert failed inside a namespace or cgroup that is
		// now removed went with it; one that still fails is the error.
		again, still := revertEach(failed.faults())
		removed = append(removed, again...)
		err = errors.Join(append(errs, still.err())...)
	}()
	recs = slices.Clone(recs)
	slices.Reverse(recs)
	more, moreErrs := removeRegistered(recs)
	removed, errs = append(removed, more...), append(errs, moreErrs...)
	// Processes first: a namespace is only gone once nothing runs in it.
	// Thaw every frozen cgroup before killing: a frozen process cannot
	// die, and its freezer directory may come after another controller's.
	for _, r := range recs {
		if r.Kind == KindCgroup && isOurCgroup(r.Name) {
			_ = os.WriteFile(filepath.Join(r.Name, "freezer.state"), []byte("THAWED"), 0o644)
			_ = os.WriteFile(filepath.Join(r.Name, "cgroup.freeze"), []byte("0"), 0o644)
		}
	}
	for _, r := range recs {
		if r.Kind != KindCgroup {
			continue
		}
		ok, e := removeCgroup(r.Name)
		if e != nil {
			errs = append(errs, e)
		} else if ok {
			removed = append(removed, "cgroup "+r.Name)
		}
	}
	for _, r := range recs {
		switch r.Kind {
		case KindNetns:
			if _, e := os.Stat(filepath.Join("/run/netns", r.Name)); e != nil {
				continue
			}
			if e := ipRun("netns", "delete", r.Name); e != nil {
				errs = append(errs, e)
				continue
			}
			removed = append(removed, "netns "+r.Name)
		case KindLink:
			if _, e := os.Stat(filepath.Join("/sys/class/net", r.Name)); e != nil {
				continue
			}
			if e := ipRun("link", "delete", r.Name); e != nil {
				errs = append(errs, e)
				continue
			}
			removed = append(removed, "link "+r.Name)
		}
	}
	return removed, errors.Join(errs...)
}

// removeCgroup kills every process in dir (thawing a v1 freezer first)
// and removes it; false when it did not exist.
func removeCgroup(dir string) (bool, error) {
	if !isOurCgroup(dir) {
		return false, fmt.Errorf("journal names cgroup %s, outside faultbench's: left alone", dir)
	}
	if _, err := os.Stat(dir); err != nil {
		return false, nil
	}
	_ = os.WriteFile(filepath.Join(dir, "freezer.state"), []byte("THAWED"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "cgroup.freeze"), []byte("0"), 0o644)
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		pids := strings.Fields(string(b))
		for _, p := range pids {
			var pid int
			if _, err := fmt.Sscan(p, &pid); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			// The parent directories (faultbench/RUN, faultbench) go
			// when empty; another run's keep them.
			_ = syscall.Rmdir(filepath.Dir(dir))
			_ = syscall.Rmdir(filepath.Dir(filepath.Dir(dir)))
			return true, nil
		}
		if time.Now().After(deadline) {
			return true, fmt.Errorf("remove cgroup %s: %w (processes left: %v)", dir, err, pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// isOurCgroup reports whether dir is a cgroup faultbench creates.
func isOurCgroup(dir string) bool {
	return strings.HasPrefix(dir, "/sys/fs/cgroup/") && strings.Contains(dir, "/faultbench/") && !strings.Contains(dir, "..")
}

// ControllerAlive reports whether the controller that recorded recs still
// runs (its pid exists).
func ControllerAlive(recs []Record) bool {
	for _, r := range recs {
		if r.Kind == KindController {
			var pid int
			if _, err := fmt.Sscan(r.Name, &pid); err == nil && pid > 0 {
				return syscall.Kill(pid, 0) == nil
			}
		}
	}
	return false
}

// Applied is what recs say is applied and not reverted, in order.
func Applied(recs []Record) []kernelfault.Fault {
	var out []kernelfault.Fault
	for _, r := range recs {
		switch {
		case r.Kind == KindFault && r.Fault != nil:
			out = append(out, *r.Fault)
		case r.Kind == KindUnfault:
			out = slices.DeleteFunc(out, func(f kernelfault.Fault) bool { return f.ID == r.Name })
		}
	}
	return out
}

// RevertFaults reverts, newest first, every fault recs hold as applied,
// and kills every burner or balloon they list that still runs in run's
// cgroups (any faultbench cgroup when run is ""). It returns one line per
// fault reverted and joins what failed, each naming the fault.
func RevertFaults(recs []Record, run string) ([]string, error) {
	out, failed := revertEach(Applied(recs))
	return append(out, killAux(recs, run)...), failed.err()
}

// failure is a fault whose revert failed, with the error.
type failure struct {
	f   kernelfault.Fault
	err error
}

type failures []failure

func (fs failures) faults() []kernelfault.Fault {
	out := make([]kernelfault.Fault, len(fs))
	for i, x := range fs {
		out[i] = x.f
	}
	return out
}

// err joins the failures, each naming its fault and target.
func (fs failures) err() error {
	var errs []error
	for _, x := range fs {
		errs = append(errs, fmt.Errorf("revert fault %s in %s: %w", x.f.ID, x.f.Target.Netns+strings.Join(x.f.Target.Cgroup, ","), x.err))
	}
	return errors.Join(errs...)
}

// revertEach reverts faults newest first; it returns one line per fault
// reverted and the failures.
func revertEach(faults []kernelfault.Fault) (out []string, failed failures) {
	for _, f := range slices.Backward(faults) {
		ev, err := kernelfault.Revert(f)
		if err != nil {
			failed = append(failed, failure{f, err})
			continue
		}
		out = append(out, "fault "+f.ID+": "+ev)
	}
	return out, failed
}

// killAux kills every burner or balloon recs list (KindAux) that still
// runs in run's cgroups (any faultbench cgroup when run is "").
func killAux(recs []Record, run string) []string {
	var out []string
	for _, r := range recs {
		if r.Kind != KindAux {
			continue
		}
		var pid int
		if _, err := fmt.Sscan(r.Name, &pid); err != nil || pid <= 1 {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil || !strings.Contains(string(b), "/faultbench/"+run) {
			continue // gone, or the pid is another process's now
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			out = append(out, "aux process "+r.Name+" killed")
		}
	}
	return out
}
