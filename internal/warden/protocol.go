package warden

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/faultbench/faultbench/internal/kernelfault"
)

// The controller talks to its warden over a Unix socket
// (/run/faultbench/RUN_ID.sock, mode 0600), one JSON request a line, one
// answer line back ("ok" or "refused: REASON"). Only typed operations
// exist — never a command line — and every request names its run and
// carries a sequence number above the last accepted one, so a replayed or
// reordered request is refused. The socket only accepts the controller
// process itself (its pid, checked with SO_PEERCRED).
const (
	OpRenew  = "renew"  // renew the lease
	OpRecord = "record" // journal an object before the controller creates it
	OpInject = "inject" // apply a typed kernel fault (Fault) and prove it
	OpRevert = "revert" // revert the fault ID this warden applied
)

// MaxRequest bounds one request line.
const MaxRequest = 8192

// Request is one decoded request.
type Request struct {
	Op   string `json:"op"`
	Run  string `json:"run"`
	Seq  uint64 `json:"seq"`
	Kind string `json:"kind,omitempty"` // OpRecord
	Name string `json:"name,omitempty"` // OpRecord

	Fault *kernelfault.Fault `json:"fault,omitempty"` // OpInject
	ID    string             `json:"id,omitempty"`    // OpRevert
}

var (
	runIDRE  = regexp.MustCompile(`^[0-9a-f]{12}$`)
	netnsRE  = regexp.MustCompile(`^fb-[0-9a-f]{12}-(br|n[0-9]{1,3})$`)
	linkRE   = regexp.MustCompile(`^fb[0-9a-f]{8}$`)
	pidRE    = regexp.MustCompile(`^[1-9][0-9]{0,9}$`)
	cgroupRE = regexp.MustCompile(`^/sys/fs/cgroup/([a-z_]+/)?faultbench/[0-9a-f]{12}/node-[0-9]{1,3}$`)
)

// Decode parses and checks one request line for run, whose last accepted
// sequence number is last. It refuses anything malformed, of another run,
// replayed, or naming an object faultbench would not create.
func Decode(line []byte, run string, last uint64) (Request, error) {
	var r Request
	if len(line) > MaxRequest {
		return r, fmt.Errorf("request of %d bytes, over %d", len(line), MaxRequest)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Request{}, fmt.Errorf("malformed request: %v", err)
	}
	if dec.More() {
		return Request{}, errors.New("malformed request: trailing data")
	}
	if !runIDRE.MatchString(r.Run) || r.Run != run {
		return Request{}, fmt.Errorf("request for run %q, this warden guards %s", r.Run, run)
	}
	if r.Seq <= last {
		return Request{}, fmt.Errorf("replayed request: sequence %d, last accepted %d", r.Seq, last)
	}
	if err := checkOp(r, run); err != nil {
		return Request{}, err
	}
	return r, nil
}

// checkOp checks that r carries what its operation takes, and only that.
func checkOp(r Request, run string) error {
	record, fault, id := r.Kind != "" || r.Name != "", r.Fault != nil, r.ID != ""
	switch r.Op {
	case OpRenew:
		if record || fault || id {
			return errors.New("renew takes no kind, name, fault or id")
		}
	case OpRecord:
		if fault || id {
			return errors.New("record takes a kind and a name only")
		}
		return checkObject(r.Kind, r.Name, run)
	case OpInject:
		if record || id || !fault {
			return errors.New("inject takes a fault only")
		}
		return checkFault(*r.Fault, run)
	case OpRevert:
		if record || fault || !faultIDRE.MatchString(r.ID) {
			return fmt.Errorf("revert takes the id of a fault only (got id %q)", r.ID)
		}
	default:
		return fmt.Errorf("unknown operation %q (known: renew, record, inject, revert)", r.Op)
	}
	return nil
}

var faultIDRE = regexp.MustCompile(`^[a-z0-9][a-z0-9#._-]{0,47}$`)

// checkFault refuses a fault that is malformed or whose target is not
// one of run's: a node namespace of the run, or /proc/PID/ns/net of a
// process in the run's cgroups or in one of its containers (a backend's
// Remover.OwnsProcess), and the run's cgroups or its containers'
// (Remover.OwnsCgroup).
func checkFault(f kernelfault.Fault, run string) error {
	if err := f.Check(); err != nil {
		return err
	}
	t := f.Target
	if t.Netns != "" && !(netnsRE.MatchString(t.Netns) && strings.Contains(t.Netns, run) && !strings.HasSuffix(t.Netns, "-br")) {
		pid, ok := strings.CutSuffix(strings.TrimPrefix(t.Netns, "/proc/"), "/ns/net")
		if !ok || !strings.HasPrefix(t.Netns, "/proc/") || !(pidOfRun(pid, run) || ownedByPid(pid, run)) {
			return fmt.Errorf("fault %s: netns %q is not a node of run %s", f.ID, t.Netns, run)
		}
	}
	for _, d := range t.Cgroup {
		if !(cgroupRE.MatchString(d) && strings.Contains(d, "/faultbench/"+run+"/")) && !cgroupOfBackend(d, run) {
			return fmt.Errorf("fault %s: cgroup %q is not a node of run %s", f.ID, d, run)
		}
	}
	return nil
}

// ownedByPid is ownedByBackend for a pid in its decimal form.
func ownedByPid(pid, run string) bool {
	n, err := strconv.Atoi(pid)
	return err == nil && n > 1 && ownedByBackend(n, run)
}

// pidOfRun reports whether process pid is in one of run's cgroups.
func pidOfRun(pid, run string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/cgroup")
	return err == nil && strings.Contains(string(b), "/faultbench/"+run+"/")
}

// checkObject refuses a journal record naming anything but the objects
// run creates.
func checkObject(kind, name, run string) error {
	var ok bool
	switch kind {
	case KindNetns:
		ok = netnsRE.MatchString(name) && strings.Contains(name, run)
	case KindLink:
		ok = linkRE.MatchString(name) && name[2:] == run[:8]
	case KindCgroup:
		ok = cgroupRE.MatchString(name) && strings.Contains(name, "/faultbench/"+run+"/")
	case KindAux:
		ok = pidRE.MatchString(name)
	default:
		rm, known := lookupRemover(kind)
		if !known {
			return fmt.Errorf("unknown record kind %q (known: netns, link, cgroup, aux and the backends' own)", kind)
		}
		ok = rm.Owns(name, run)
	}
	if !ok {
		return fmt.Errorf("%s %q is not an object of run %s", kind, name, run)
	}
	return nil
}
