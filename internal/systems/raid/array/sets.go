package array

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// DoubleFailure is what the volume does when a second member is lost
// (Brown and Patterson 2000, §4.2, scenario 2). The zero value is
// Recoverable.
type DoubleFailure int

const (
	// Recoverable refuses every read and write (ErrFailed) until an
	// operator calls Force, which takes back the disks present again: RAID-5's
	// semantics, and Windows 2000's path, where the administrator
	// reactivated the pulled disk and the volume served again.
	Recoverable DoubleFailure = iota
	// Unrecoverable refuses every read and write, and refuses Force too:
	// the volume is lost, to be recreated and restored from backup, as the
	// paper found Linux's (its tools could only add the reinserted disk
	// back as a spare).
	Unrecoverable
	// KeepServing does not stop the volume when a member is lost during a
	// reconstruction: the partially rebuilt spare is made a member as it is
	// and the volume goes on serving, without checking its checksums any
	// more, so every block beyond the rebuild's cursor comes back wrong —
	// Solaris's garbage. A second loss with no reconstruction running
	// leaves nothing to serve from and fails the volume as Recoverable does.
	KeepServing
)

var doubleFailureNames = map[DoubleFailure]string{
	Recoverable: "recoverable", Unrecoverable: "unrecoverable", KeepServing: "keep-serving",
}

func (d DoubleFailure) String() string {
	if s, ok := doubleFailureNames[d]; ok {
		return s
	}
	return "invalid"
}

// ParseDoubleFailure parses "recoverable", "unrecoverable" or "keep-serving".
func ParseDoubleFailure(s string) (DoubleFailure, error) {
	for d, name := range doubleFailureNames {
		if strings.TrimSpace(s) == name {
			return d, nil
		}
	}
	return 0, fmt.Errorf("double_failure %q: want recoverable, unrecoverable or keep-serving", s)
}

// PolicySet is the set of knobs that emulates one of the software RAIDs
// Brown and Patterson (2000) measured: what it did with transient errors
// (§4.1), how it reconstructed (§4.2) and what it did on a double failure
// (§4.2, scenario 2). Every part is ours, built to match what the paper
// reports; a run under a set measures what follows from it.
type PolicySet struct {
	Name          string
	Policy        TransientPolicy
	Priority      Priority
	Auto          bool
	DoubleFailure DoubleFailure
}

// policySets are the sets by name.
var policySets = map[string]PolicySet{
	// Linux (Red Hat 6.0, raidtools 0.90): out at the first error, a slow
	// automatic rebuild, a double failure not recoverable.
	"linux": {Name: "linux", Policy: TransientPolicy{Kind: Paranoid}, Priority: Low, Auto: true, DoubleFailure: Unrecoverable},
	// Solaris 7 with Solstice DiskSuite 4.2: tolerant of transients, out on
	// sticky unrecoverable errors and an illegal command, a fast automatic
	// rebuild, and on a double failure it kept serving the partially
	// rebuilt spare.
	"solaris": {Name: "solaris", Policy: TransientPolicy{Kind: Tolerant}, Priority: High, Auto: true, DoubleFailure: KeepServing},
	// Windows 2000 Server (RC build 2128): tolerant but out on a failed
	// write, a rebuild only when the administrator starts it (it has no
	// automatic spares), fast when the load leaves room, and a double
	// failure recoverable by reactivating the pulled disk.
	"windows2000": {Name: "windows2000", Policy: TransientPolicy{Kind: StrictWrites}, Priority: Adaptive, Auto: false, DoubleFailure: Recoverable},
}

// LookupPolicySet returns the set named name: linux, solaris or windows2000.
func LookupPolicySet(name string) (PolicySet, error) {
	if s, ok := policySets[strings.TrimSpace(name)]; ok {
		return s, nil
	}
	return PolicySet{}, fmt.Errorf("policy_set %q: want one of %s", name, strings.Join(slices.Sorted(maps.Keys(policySets)), ", "))
}

// Apply sets c's transient policy, reconstruction priority and start, and
// double-failure behaviour to the set's; rates and everything else stay.
func (s PolicySet) Apply(c *Config) {
	c.Policy = s.Policy
	c.Recon.Priority, c.Recon.Auto = s.Priority, s.Auto
	c.DoubleFailure = s.DoubleFailure
}
