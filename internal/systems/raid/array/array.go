// Package array is a software RAID-5 over emulated disks (package disk), with
// the availability policies of Brown & Patterson (2000) as knobs.
//
// Layout. The volume is striped over Disks active members in chunks of
// ChunkSize bytes with left-symmetric parity (Linux md's default, the
// paper's configuration): in stripe s the parity chunk lives on member
// Disks-1-(s mod Disks) and the data chunks follow it, wrapping around.
//
// Integrity. The array keeps a CRC-32C for every 4 KiB block of every member
// role, in memory, like a controller's NVRAM. Every read is checked against
// it; a block that fails the check (a bit flip, a torn write, a stale block
// on a reinserted disk) is reconstructed from the other members and the
// reconstruction is checked too. When no correct copy can be produced the
// read fails with ErrUnrecoverable: the array never returns wrong bytes
// (the Solaris defect of Brown and Patterson 2000, §4.2). Because the checksums belong to
// roles, not disks, they also tell a rebuilt spare's blocks apart from
// garbage.
//
// Failure semantics. One member out of service leaves the volume degraded
// (reads and writes continue, reconstructing on the fly); a second one
// makes it refuse all I/O with ErrFailed until an operator calls Force —
// unless Config.DoubleFailure emulates another system: Unrecoverable also
// refuses Force (Linux), KeepServing promotes a half-rebuilt spare and
// serves unchecked, wrong bytes (Solaris; the only way this array returns
// wrong data, and only when asked to).
//
// Reconstruction is a state machine advanced only by Step (and presence
// changes only by Poll), so tests drive it without sleeping; Run is the thin
// goroutine that ticks it in a live node, pacing it by the priority policy.
//
// Concurrency. ReadAt and WriteAt may be called from many goroutines; they
// lock one stripe at a time. Maintenance calls and Step may run alongside.
package array

import (
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/systems/raid/disk"
)

// Errors of ReadAt and WriteAt, and of the maintenance calls.
var (
	// ErrFailed: two members are out of service; the volume refuses I/O
	// until Force.
	ErrFailed = errors.New("volume failed: two disks out of service, refusing I/O until an operator forces it")
	// ErrUnrecoverable: a block could neither be read nor reconstructed
	// correctly; nothing was returned.
	ErrUnrecoverable = errors.New("data unrecoverable")
	// ErrOutOfRange and ErrUnaligned are bad requests.
	ErrOutOfRange = errors.New("request beyond the end of the volume")
	ErrUnaligned  = errors.New("offset or length not a multiple of the block size")
	// ErrNoDisk: a disk number names no disk bay.
	ErrNoDisk = errors.New("no such disk")
	// ErrState: the maintenance action does not apply in the current state.
	ErrState = errors.New("not possible in this state")
)

// Event is a state change of the array.
type Event struct {
	Time       time.Time `json:"time"`
	Kind       string    `json:"kind"`           // e.g. disk.failed, reconstruction.started; see docs/raid.md
	Disk       int       `json:"disk,omitempty"` // bay number, 1-based, when about one disk
	Redundancy int       `json:"redundancy"`     // disk failures the volume can still tolerate, after the event
	Detail     string    `json:"detail,omitempty"`
}

type bayState int

const (
	baySpare bayState = iota
	bayMember
	bayFailed
)

func (s bayState) String() string {
	return [...]string{"spare", "member", "failed"}[s]
}

// bay is a disk slot. Bays are numbered from 1 and never renumbered; the
// disk in a bay changes on ReplaceDisk.
type bay struct {
	n       int
	disk    *disk.Disk
	state   bayState
	role    int         // member or rebuild target: the role; else -1
	recent  []time.Time // error times within the threshold period
	errors  int64
	quietTo map[string]time.Time // disk.error events of a kind are muted until then
}

type roleState int

const (
	roleActive roleState = iota
	roleMissing
	roleRebuilding
)

type role struct {
	state    roleState
	bay      *bay       // active member, or rebuild target; nil when missing
	lastDisk *disk.Disk // the disk that served the role when it went missing (for Force)
	lastBay  *bay
}

type rebuild struct {
	role    int
	target  *bay
	cursor  int64 // stripes below cursor are rebuilt onto target
	started time.Time
}

// Opener creates the blank disk of a bay (on New, ReplaceDisk, AddSpare).
type Opener func(bay int, size int64) (*disk.Disk, error)

// Array is a RAID-5 volume.
type Array struct {
	cfg     Config
	now     func() time.Time
	open    Opener
	n       int   // active roles
	chunk   int   // bytes
	stripes int64 // per disk
	diskLen int64 // bytes used on each disk
	sums    [][]uint32
	locks   [256]sync.Mutex
	bufs    sync.Pool
	// rebuildCmds counts the disk commands reconstruction issued, so that
	// the adaptive priority can tell the foreground's share of the disks'
	// busy time from its own.
	rebuildCmds atomic.Int64

	mu     sync.Mutex
	bays   []*bay
	roles  []role
	rb     *rebuild
	failed bool
	forced bool
	closed bool  // after Close: disks vanishing is shutdown, not failure
	lost   int64 // blocks a rebuild could not reconstruct
	faults map[int]faultRef
	// fabricating: KeepServing promoted a half-rebuilt spare after a
	// double failure; reads are no longer checked. Read without a.mu by
	// the I/O path.
	fabricating atomic.Bool
	nextID      int
}

type faultRef struct {
	disk *disk.Disk
	id   int
	bay  int
	kind disk.Kind
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var zeroBlockSum = crc32.Checksum(make([]byte, BlockSize), castagnoli)

// New validates cfg, opens Disks+Spares blank disks through open (bays
// 1..Disks are the members, the rest spares) and returns an empty volume.
func New(cfg Config, open Opener) (*Array, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Array{cfg: cfg, now: cfg.Now, open: open, n: cfg.Disks, chunk: cfg.ChunkSize, faults: map[int]faultRef{}, nextID: cfg.FaultIDBase}
	if a.now == nil {
		a.now = time.Now
	}
	a.stripes = cfg.DiskSize / int64(cfg.ChunkSize)
	a.diskLen = a.stripes * int64(a.chunk)
	a.bufs.New = func() any { b := make([]byte, a.chunk); return &b }
	blocks := a.diskLen / BlockSize
	for r := 0; r < a.n; r++ {
		s := make([]uint32, blocks)
		for i := range s {
			s[i] = zeroBlockSum
		}
		a.sums = append(a.sums, s)
	}
	for i := 1; i <= cfg.Disks+cfg.Spares; i++ {
		d, err := open(i, a.diskLen)
		if err != nil {
			a.Close()
			return nil, fmt.Errorf("disk %d: %w", i, err)
		}
		b := &bay{n: i, disk: d, state: baySpare, role: -1, quietTo: map[string]time.Time{}}
		if i <= cfg.Disks {
			b.state, b.role = bayMember, i-1
			a.roles = append(a.roles, role{state: roleActive, bay: b})
		}
		a.bays = append(a.bays, b)
	}
	return a, nil
}

// Size returns the volume's capacity in bytes.
func (a *Array) Size() int64 { return a.diskLen * int64(a.n-1) }

// Config returns the array's configuration.
func (a *Array) Config() Config { return a.cfg }

// Close closes every disk; hung commands fail. Safe twice.
func (a *Array) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	var errs []error
	for _, b := range a.bays {
		errs = append(errs, b.disk.Close())
	}
	return errors.Join(errs...)
}

// unavailable counts roles not fully served. Caller holds a.mu.
func (a *Array) unavailable() int {
	n := 0
	for _, r := range a.roles {
		if r.state != roleActive {
			n++
		}
	}
	return n
}

// redundancy is the number of further disk failures the volume tolerates.
// Caller holds a.mu.
func (a *Array) redundancy() int {
	if a.failed || a.unavailable() > 0 {
		return 0
	}
	return 1
}

// emit reports an event. Caller holds a.mu.
func (a *Array) emit(kind string, b *bay, format string, args ...any) {
	if a.cfg.OnEvent == nil {
		return
	}
	e := Event{Time: a.now(), Kind: kind, Redundancy: a.redundancy(), Detail: fmt.Sprintf(format, args...)}
	if b != nil {
		e.Disk = b.n
	}
	a.cfg.OnEvent(e)
}

// bayByNumber returns bay n. Caller holds a.mu.
func (a *Array) bayByNumber(n int) (*bay, error) {
	if n < 1 || n > len(a.bays) {
		return nil, fmt.Errorf("%w %d (disks are numbered 1 to %d)", ErrNoDisk, n, len(a.bays))
	}
	return a.bays[n-1], nil
}

// failBay takes b's disk out of service. Caller holds a.mu.
func (a *Array) failBay(b *bay, reason string) {
	switch b.state {
	case bayFailed:
		return
	case baySpare:
		b.state = bayFailed
		a.emit("disk.failed", b, "spare: %s", reason)
		return
	}
	r := b.role
	ro := &a.roles[r]
	b.state, b.role = bayFailed, -1
	if ro.state == roleRebuilding {
		// The rebuild target failed: the role stays missing, the rebuild ends.
		a.rb = nil
		ro.state, ro.bay = roleMissing, nil
		a.emit("disk.failed", b, "reconstruction target: %s", reason)
		a.emit("reconstruction.aborted", b, "target disk failed")
	} else {
		ro.state, ro.bay, ro.lastDisk, ro.lastBay = roleMissing, nil, b.disk, b
		a.emit("disk.failed", b, "member %d: %s", r, reason)
		a.afterLoss()
	}
	a.maybeStartRebuild()
}

// afterLoss updates the volume state after a member went missing. Caller
// holds a.mu.
func (a *Array) afterLoss() {
	if a.failed {
		return
	}
	if a.unavailable() >= 2 {
		if a.cfg.DoubleFailure == KeepServing && a.rb != nil {
			a.keepServing()
			return
		}
		a.failed = true
		if a.rb != nil {
			t := a.rb.target
			a.roles[a.rb.role].state, a.roles[a.rb.role].bay = roleMissing, nil
			t.state, t.role = baySpare, -1
			a.rb = nil
			a.emit("reconstruction.aborted", t, "second member lost")
		}
		a.emit("volume.failed", nil, "two members out of service: refusing I/O until forced")
		return
	}
	a.emit("volume.degraded", nil, "running without redundancy")
}

// keepServing is KeepServing's answer to a member lost during a
// reconstruction: the rebuild target becomes the member, whatever it holds
// beyond the cursor, and checksums stop being checked, so the volume stays
// up and serves garbage, as Solaris did (Brown and Patterson 2000, §4.2).
// Caller holds a.mu.
func (a *Array) keepServing() {
	rb := a.rb
	a.rb = nil
	a.roles[rb.role].state = roleActive
	a.fabricating.Store(true)
	a.emit("reconstruction.aborted", rb.target, "second member lost")
	a.emit("volume.fabricating", rb.target, "a second member lost while member %d was rebuilt: disk %d, rebuilt to %d of %d stripes, serves as member %d as it is; reads are no longer checked (double_failure=keep-serving)",
		rb.role, rb.target.n, rb.cursor, a.stripes, rb.role)
	a.emit("volume.degraded", nil, "running without redundancy")
}

// Fabricating reports whether the volume serves unchecked data after a
// double failure (double_failure=keep-serving): reads may return wrong bytes.
func (a *Array) Fabricating() bool { return a.fabricating.Load() }

// maybeStartRebuild starts an automatic reconstruction when one is due.
// Caller holds a.mu.
func (a *Array) maybeStartRebuild() {
	if !a.cfg.Recon.Auto || a.failed || a.rb != nil {
		return
	}
	for r := range a.roles {
		if a.roles[r].state == roleMissing {
			if sp := a.spare(); sp != nil {
				a.startRebuild(r, sp)
			}
			return
		}
	}
}

// spare returns a present spare, or nil. Caller holds a.mu.
func (a *Array) spare() *bay {
	for _, b := range a.bays {
		if b.state == baySpare && b.disk.Present() {
			return b
		}
	}
	return nil
}

// startRebuild makes sp the target of role r. Caller holds a.mu.
func (a *Array) startRebuild(r int, sp *bay) {
	a.rb = &rebuild{role: r, target: sp, started: a.now()}
	a.roles[r].state, a.roles[r].bay = roleRebuilding, sp
	sp.state, sp.role = bayMember, r
	a.emit("reconstruction.started", sp, "member %d onto disk %d", r, sp.n)
}

// RebuildStatus is the progress of a reconstruction.
type RebuildStatus struct {
	Member    int       `json:"member"` // role index 0..disks-1
	Disk      int       `json:"disk"`   // target bay
	Progress  float64   `json:"progress"`
	DoneBytes int64     `json:"done_bytes"`
	Total     int64     `json:"total_bytes"`
	Started   time.Time `json:"started"`
}

// BayStatus describes one disk bay.
type BayStatus struct {
	Disk    int              `json:"disk"`
	State   string           `json:"state"`  // member | spare | failed | rebuilding
	Member  int              `json:"member"` // role index, -1 when not a member
	Present bool             `json:"present"`
	Errors  int64            `json:"errors"`
	Reads   int64            `json:"reads"`
	Writes  int64            `json:"writes"`
	Faults  []disk.FaultInfo `json:"faults"` // ids as Inject returned them and Revert takes them
}

// Status is a snapshot of the array.
type Status struct {
	State          string         `json:"state"`       // optimal | degraded | reconstructing | failed
	Redundancy     int            `json:"redundancy"`  // disk failures the volume can still tolerate
	Forced         bool           `json:"forced"`      // the operator forced the volume back after a double failure
	Fabricating    bool           `json:"fabricating"` // serving unchecked data after a double failure (keep-serving)
	DoubleFailure  string         `json:"double_failure"`
	Capacity       int64          `json:"capacity_bytes"`
	ChunkSize      int            `json:"chunk_bytes"`
	Policy         string         `json:"transient_policy"`
	Reconstruction string         `json:"reconstruction"`
	Rebuild        *RebuildStatus `json:"rebuild,omitempty"`
	LostBlocks     int64          `json:"lost_blocks"`
	Disks          []BayStatus    `json:"disks"`
}

// Status returns a snapshot.
func (a *Array) Status() Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := Status{Redundancy: a.redundancy(), Forced: a.forced, Fabricating: a.fabricating.Load(), DoubleFailure: a.cfg.DoubleFailure.String(),
		Capacity: a.Size(), ChunkSize: a.chunk,
		Policy: a.cfg.Policy.String(), Reconstruction: a.cfg.Recon.String(), LostBlocks: a.lost}
	switch {
	case a.failed:
		st.State = "failed"
	case a.rb != nil:
		st.State = "reconstructing"
	case a.unavailable() > 0:
		st.State = "degraded"
	default:
		st.State = "optimal"
	}
	if a.rb != nil {
		done := a.rb.cursor * int64(a.chunk)
		st.Rebuild = &RebuildStatus{Member: a.rb.role, Disk: a.rb.target.n, DoneBytes: done, Total: a.diskLen,
			Progress: float64(done) / float64(a.diskLen), Started: a.rb.started}
	}
	type diskFault struct {
		disk *disk.Disk
		id   int
	}
	ids := make(map[diskFault]int, len(a.faults))
	for id, f := range a.faults {
		ids[diskFault{f.disk, f.id}] = id
	}
	for _, b := range a.bays {
		ds := b.disk.Stats()
		faults := b.disk.Faults() // numbered by the disk, in injection order: renumber as the array's
		for i := range faults {
			faults[i].ID = ids[diskFault{b.disk, faults[i].ID}]
		}
		bs := BayStatus{Disk: b.n, State: b.state.String(), Member: b.role, Present: b.disk.Present(), Errors: b.errors,
			Reads: ds.Reads, Writes: ds.Writes, Faults: faults}
		if a.rb != nil && a.rb.target == b {
			bs.State = "rebuilding"
		}
		st.Disks = append(st.Disks, bs)
	}
	return st
}
