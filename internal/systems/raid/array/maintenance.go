package array

import (
	"fmt"
	"time"

	"github.com/faultbench/faultbench/internal/systems/raid/disk"
)

// Inject injects a fault into the disk now in bay n and returns an id for
// Revert: Config.FaultIDBase+1, +2, ..., so unique within the array. A
// removal is noticed at once.
func (a *Array) Inject(n int, k disk.Kind, m disk.Mode) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	b, err := a.bayByNumber(n)
	if err != nil {
		return 0, err
	}
	local, err := b.disk.Inject(k, m)
	if err != nil {
		return 0, err
	}
	a.nextID++
	a.faults[a.nextID] = faultRef{disk: b.disk, id: local, bay: n, kind: k}
	if k == disk.Remove && b.state == bayMember {
		b.errors++
		a.failBay(b, "disk removed")
	}
	return a.nextID, nil
}

// Revert undoes fault id (see disk.Disk.Revert): a reinserted disk or one
// whose power came back is not taken back into the array — that takes
// ReplaceDisk or, after a double failure, Force. It reports false for an
// unknown id. Faults of a disk that has since been replaced are forgotten
// silently.
func (a *Array) Revert(id int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	f, ok := a.faults[id]
	if !ok {
		return false
	}
	delete(a.faults, id)
	f.disk.Revert(f.id)
	return true
}

// FaultBay returns the bay of fault id and whether the fault is known.
func (a *Array) FaultBay(id int) (int, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f, ok := a.faults[id]
	return f.bay, ok
}

// Disks returns the number of bays.
func (a *Array) Disks() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.bays)
}

// ReplaceDisk swaps the disk in bay n for a blank one, which becomes a hot
// spare (and, with automatic reconstruction, the target of a rebuild if one
// is due). Replacing a live member takes it out of service first — the
// operator pulled the wrong disk.
func (a *Array) ReplaceDisk(n int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	b, err := a.bayByNumber(n)
	if err != nil {
		return err
	}
	if b.state == bayMember {
		a.failBay(b, "replaced while in service")
	}
	d, err := a.open(n, a.diskLen)
	if err != nil {
		return fmt.Errorf("disk %d: new disk: %w", n, err)
	}
	old := b.disk
	_ = old.Close()
	for id, f := range a.faults {
		if f.disk == old {
			delete(a.faults, id)
		}
	}
	b.disk, b.state, b.role, b.recent = d, baySpare, -1, nil
	a.emit("disk.replaced", b, "blank disk in bay %d is a spare", n)
	a.maybeStartRebuild()
	return nil
}

// AddSpare adds a bay with a blank hot spare and returns its number.
func (a *Array) AddSpare() (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := len(a.bays) + 1
	if n > 2*MaxDisks {
		return 0, fmt.Errorf("%w: already %d disks", ErrState, n-1)
	}
	d, err := a.open(n, a.diskLen)
	if err != nil {
		return 0, fmt.Errorf("disk %d: %w", n, err)
	}
	b := &bay{n: n, disk: d, state: baySpare, role: -1, quietTo: map[string]time.Time{}}
	a.bays = append(a.bays, b)
	a.emit("disk.spare-added", b, "blank disk in bay %d", n)
	a.maybeStartRebuild()
	return n, nil
}

// StartReconstruction starts rebuilding the missing member onto the spare in
// bay n, or onto any present spare when n is 0 — the operator's action when
// automatic reconstruction is off (Windows 2000).
func (a *Array) StartReconstruction(n int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failed {
		return fmt.Errorf("%w: the volume has failed; force it first", ErrState)
	}
	if a.rb != nil {
		return fmt.Errorf("%w: a reconstruction onto disk %d is already running", ErrState, a.rb.target.n)
	}
	missing := -1
	for r := range a.roles {
		if a.roles[r].state == roleMissing {
			missing = r
		}
	}
	if missing < 0 {
		return fmt.Errorf("%w: no member is missing", ErrState)
	}
	sp := a.spare()
	if n != 0 {
		b, err := a.bayByNumber(n)
		if err != nil {
			return err
		}
		if b.state != baySpare || !b.disk.Present() {
			return fmt.Errorf("%w: disk %d is not a present spare (it is %s)", ErrState, n, b.state)
		}
		sp = b
	}
	if sp == nil {
		return fmt.Errorf("%w: no spare disk; replace a disk or add a spare", ErrState)
	}
	a.startRebuild(missing, sp)
	return nil
}

// Force brings a failed volume back: every missing member whose last disk is
// present again (reinserted, powered back) is taken back as it is. Blocks it
// missed while away fail their checksums and are reconstructed from the
// others when possible, refused otherwise — never served stale. Force fails
// while fewer than Disks-1 members can be brought back, and always with
// double_failure=unrecoverable.
func (a *Array) Force() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.failed {
		return fmt.Errorf("%w: the volume has not failed", ErrState)
	}
	if a.cfg.DoubleFailure == Unrecoverable {
		return fmt.Errorf("%w: the volume is lost (double_failure=unrecoverable, as Linux's): replace the disks, recreate the volume and restore from backup", ErrState)
	}
	back := 0
	for r := range a.roles {
		ro := &a.roles[r]
		if ro.state == roleMissing && ro.lastBay != nil && ro.lastBay.disk == ro.lastDisk && ro.lastDisk.Present() {
			back++
		}
	}
	if a.unavailable()-back >= 2 {
		return fmt.Errorf("%w: only %d of %d members can be brought back; reinsert a pulled disk first", ErrState, a.n-a.unavailable()+back, a.n)
	}
	for r := range a.roles {
		ro := &a.roles[r]
		if ro.state == roleMissing && ro.lastBay != nil && ro.lastBay.disk == ro.lastDisk && ro.lastDisk.Present() {
			b := ro.lastBay
			b.state, b.role, b.recent = bayMember, r, nil
			ro.state, ro.bay, ro.lastBay, ro.lastDisk = roleActive, b, nil, nil
			a.emit("disk.forced", b, "member %d taken back as it is", r)
		}
	}
	a.failed, a.forced = false, true
	a.emit("volume.forced", nil, "operator forced the volume back into service")
	if a.unavailable() > 0 {
		a.emit("volume.degraded", nil, "running without redundancy")
	}
	a.maybeStartRebuild()
	return nil
}
