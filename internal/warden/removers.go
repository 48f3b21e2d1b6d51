package warden

import (
	"slices"
	"sync"
)

// Remover removes one kind of object that a backend journals and the
// warden cannot remove with its own means (a docker container or network:
// an engine call). A backend registers it once, in an init function of
// its own package, so the warden process (the same binary) knows it.
type Remover struct {
	// Owns reports whether name is an object run creates: the warden
	// refuses to journal anything else.
	Owns func(name, run string) bool
	// Remove removes the object; false when it was not there.
	Remove func(name string) (bool, error)
	// Restore, if set, takes back the faults on the object while leaving
	// it in place (a docker container unpaused, its rules deleted): what a
	// lapsed lease does, since the controller may still be alive and only
	// the pipe's closing removes the run. It reports whether it changed
	// anything.
	Restore func(name string) (bool, error)
	// OwnsProcess, if set, reports whether process pid runs in one of
	// run's objects of this kind (a container the run created or
	// attached), so that a fault may target its namespace
	// (/proc/PID/ns/net).
	OwnsProcess func(pid int, run string) bool
	// OwnsCgroup, if set, reports whether cgroup directory dir is one of
	// run's objects of this kind (a container's cgroup), so that a fault
	// may start a helper process in it.
	OwnsCgroup func(dir, run string) bool
}

var (
	removersMu sync.Mutex
	removers   = map[string]Remover{}
)

// RegisterRemover makes r the remover of journal records of kind. It
// panics on a duplicate or on a kind the warden handles itself.
func RegisterRemover(kind string, r Remover) {
	removersMu.Lock()
	defer removersMu.Unlock()
	if _, dup := removers[kind]; dup || slices.Contains([]string{KindController, KindNetns, KindLink, KindCgroup}, kind) {
		panic("warden: remover registered twice: " + kind)
	}
	removers[kind] = r
}

func lookupRemover(kind string) (Remover, bool) {
	removersMu.Lock()
	defer removersMu.Unlock()
	r, ok := removers[kind]
	return r, ok
}

// removeRegistered removes every record a registered Remover handles, in
// recs' order (already reversed), a run of records of one kind at once
// (a run's containers go together, then its network); it runs before the
// warden's own kinds, since containers hold processes and namespaces.
func removeRegistered(recs []Record) (removed []string, errs []error) {
	for i := 0; i < len(recs); {
		j := i + 1
		for j < len(recs) && recs[j].Kind == recs[i].Kind {
			j++
		}
		if rm, ok := lookupRemover(recs[i].Kind); ok {
			r, e := removeAll(rm, recs[i:j])
			removed, errs = append(removed, r...), append(errs, e...)
		}
		i = j
	}
	return removed, errs
}

// removeAll removes recs (all of one kind) concurrently.
func removeAll(rm Remover, recs []Record) (removed []string, errs []error) {
	gone := make([]bool, len(recs))
	errOf := make([]error, len(recs))
	var wg sync.WaitGroup
	for k, r := range recs {
		wg.Add(1)
		go func() { defer wg.Done(); gone[k], errOf[k] = rm.Remove(r.Name) }()
	}
	wg.Wait()
	for k, r := range recs {
		switch {
		case errOf[k] != nil:
			errs = append(errs, errOf[k])
		case gone[k]:
			removed = append(removed, r.Kind+" "+r.Name)
		}
	}
	return removed, errs
}

// restoreRegistered restores, newest first, every record whose registered
// Remover can restore it (Remover.Restore), one at a time: a lapse is
// rare and its order (an app container before its namespace's holder)
// follows the journal.
func restoreRegistered(recs []Record) (restored []string, errs []error) {
	for _, r := range slices.Backward(recs) {
		rm, ok := lookupRemover(r.Kind)
		if !ok || rm.Restore == nil {
			continue
		}
		changed, err := rm.Restore(r.Name)
		switch {
		case err != nil:
			errs = append(errs, err)
		case changed:
			restored = append(restored, r.Kind+" "+r.Name+" restored")
		}
	}
	return restored, errs
}

// ownedByBackend reports whether a registered Remover says process pid
// runs in one of run's objects.
func ownedByBackend(pid int, run string) bool {
	return anyRemover(func(r Remover) bool { return r.OwnsProcess != nil && r.OwnsProcess(pid, run) })
}

// cgroupOfBackend reports whether a registered Remover says cgroup dir is
// one of run's objects.
func cgroupOfBackend(dir, run string) bool {
	return anyRemover(func(r Remover) bool { return r.OwnsCgroup != nil && r.OwnsCgroup(dir, run) })
}

// anyRemover reports whether f holds for a registered Remover (called
// outside the registry's lock: f may take a while, asking an engine).
func anyRemover(f func(Remover) bool) bool {
	removersMu.Lock()
	rs := make([]Remover, 0, len(removers))
	for _, r := range removers {
		rs = append(rs, r)
	}
	removersMu.Unlock()
	return slices.ContainsFunc(rs, f)
}
