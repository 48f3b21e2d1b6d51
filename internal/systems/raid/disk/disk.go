// Package disk emulates a block device with injectable faults, after the
// SCSI disk emulator of Brown & Patterson (2000, §3.1): a backing file (or
// memory) holds the content, and every command first consults the faults
// injected into the disk. A fault is one of the kinds of Table 1 and is
// transient (it fires on the next matching command, then is spent) or sticky
// (it fires on every matching command until it is reverted or the disk is
// replaced).
//
// Errors are reported the way a SCSI target reports them, as sense classes:
// ErrRecovered (the command succeeded after retries or ECC: data is valid),
// ErrMedium, ErrHardware, ErrIllegalRequest, ErrTimeout (the command hung
// past the controller's command timeout) and ErrNotPresent (power lost,
// disk pulled). What to do about them is the RAID layer's policy, not the
// disk's.
//
// A Disk is safe for concurrent use: commands run in parallel, as on a
// tagged-queueing disk; a hung command blocks only its caller.
package disk

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// SectorSize is the unit of the emulated disk: a torn write stops at a
// sector boundary.
const SectorSize = 512

// Sense classes returned (wrapped in *Error) by ReadAt and WriteAt.
var (
	ErrRecovered      = errors.New("recovered error")   // data transferred correctly after retries/ECC
	ErrMedium         = errors.New("medium error")      // unrecoverable read or write of the sectors
	ErrHardware       = errors.New("hardware error")    // firmware or mechanical failure
	ErrIllegalRequest = errors.New("illegal request")   // the disk rejected the command
	ErrTimeout        = errors.New("command timed out") // the disk hung past the command timeout
	ErrNotPresent     = errors.New("disk not present")  // power lost or disk removed
	ErrOutOfRange     = errors.New("out of range")      // the command addresses sectors beyond the disk
)

// Error is the error of one failed or recovered command.
type Error struct {
	Disk string // the disk's name
	Op   string // "read" or "write"
	Off  int64
	Len  int
	Err  error // one of the sense classes above
}

func (e *Error) Error() string {
	return fmt.Sprintf("disk %s: %s %d bytes at %d: %v", e.Disk, e.Op, e.Len, e.Off, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Backing stores a disk's content. *os.File satisfies it.
type Backing interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
}

// Config describes one emulated disk.
type Config struct {
	Name string // for errors and events, e.g. "3"
	Size int64  // bytes; a multiple of SectorSize
	// Overhead is added to every command, like the 510 µs of the paper's
	// emulator (Brown and Patterson 2000, §3.1). Zero means none. With an overhead the disk
	// serves one command at a time, like a single actuator, so concurrent
	// commands queue (a reconstruction then competes with the load for the
	// disk); without one, commands run in parallel at page-cache speed.
	Overhead time.Duration
	// Timeout is the controller's command timeout: a hung command returns
	// ErrTimeout after it. Zero means a hung command waits until the hang
	// is reverted or the disk is closed (the paper's pattern D).
	Timeout time.Duration
}

// Stats counts the commands a disk has served.
type Stats struct {
	Reads, Writes           int64
	ReadBytes, WrittenBytes int64
	Errors                  int64 // commands that returned an error (recovered ones included)
	// Busy is the time the disk spent serving commands: the per-command
	// overhead and the transfer, not the time commands waited for the disk
	// or hung. Busy over elapsed time is the disk's utilisation. It stays 0
	// without an Overhead: commands then run in parallel at page-cache
	// speed, nothing queues for the disk, and the command path reads no
	// clock.
	Busy time.Duration
}

// Disk is one emulated disk.
type Disk struct {
	cfg     Config
	backing Backing

	mu       sync.Mutex
	faults   []*fault // active (not spent, not reverted), in injection order
	byID     map[int]*fault
	nextID   int
	absent   bool          // power failed or removed
	unhang   chan struct{} // closed (and replaced) whenever a hang may have ended
	closed   bool
	stats    Stats
	running  atomic.Int64  // commands in flight
	busy     atomic.Int64  // Stats.Busy, nanoseconds
	actuator chan struct{} // a token serialising commands when cfg.Overhead > 0; a channel, so synctest sees waiters as blocked
}

type fault struct {
	id    int
	kind  Kind
	mode  Mode
	spent bool
}

// New returns a disk over b.
func New(b Backing, cfg Config) (*Disk, error) {
	if cfg.Size <= 0 || cfg.Size%SectorSize != 0 {
		return nil, fmt.Errorf("disk %s: size %d is not a positive multiple of %d", cfg.Name, cfg.Size, SectorSize)
	}
	return &Disk{cfg: cfg, backing: b, byID: map[int]*fault{}, unhang: make(chan struct{}), actuator: make(chan struct{}, 1)}, nil
}

// Create creates (or truncates) the backing file at path, sized cfg.Size and
// sparse, and returns a blank disk over it.
func Create(path string, cfg Config) (*Disk, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(cfg.Size); err != nil {
		f.Close()
		return nil, err
	}
	d, err := New(f, cfg)
	if err != nil {
		f.Close()
	}
	return d, err
}

// Name returns the disk's name.
func (d *Disk) Name() string { return d.cfg.Name }

// Size returns the disk's size in bytes.
func (d *Disk) Size() int64 { return d.cfg.Size }

// Present reports whether the disk has power and is plugged in. Enclosures
// report this without a command (hot-plug notification), so the array polls
// it to notice a pulled disk that sees no I/O.
func (d *Disk) Present() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.absent && !d.closed
}

// Stats returns the command counters.
func (d *Disk) Stats() Stats {
	d.mu.Lock()
	st := d.stats
	d.mu.Unlock()
	st.Busy = time.Duration(d.busy.Load())
	return st
}

// ReadAt reads len(p) bytes at off. On ErrRecovered (and only then) the
// data in p is valid although the returned error is non-nil.
func (d *Disk) ReadAt(p []byte, off int64) error { return d.command(opRead, p, off) }

// WriteAt writes p at off. On ErrRecovered the data was written.
func (d *Disk) WriteAt(p []byte, off int64) error { return d.command(opWrite, p, off) }

type op int

const (
	opRead op = iota
	opWrite
)

func (o op) String() string {
	if o == opRead {
		return "read"
	}
	return "write"
}

func (d *Disk) command(o op, p []byte, off int64) error {
	d.running.Add(1)
	defer d.running.Add(-1)
	fail := func(err error) error {
		return &Error{Disk: d.cfg.Name, Op: o.String(), Off: off, Len: len(p), Err: err}
	}
	if off < 0 || off+int64(len(p)) > d.cfg.Size {
		return fail(ErrOutOfRange)
	}
	effect, hung, unhang := d.consult(o)
	switch effect {
	case effectHang:
		if err := d.hang(hung, unhang); err != nil {
			d.count(o, 0, true)
			return fail(err)
		}
		// The hang was reverted: the command completes normally.
	case effectNone:
	case effectPowerFail:
		if o == opWrite {
			torn := len(p) / 2 / SectorSize * SectorSize
			_, _ = d.backing.WriteAt(p[:torn], off)
		}
		d.count(o, 0, true)
		return fail(ErrNotPresent)
	default:
		if err := effect.err(o); err != nil && !errors.Is(err, ErrRecovered) {
			d.count(o, 0, true)
			return fail(err)
		}
	}
	if d.cfg.Overhead > 0 {
		// One command at a time: the disk is busy from taking the actuator
		// to giving it back (overhead and transfer); the wait for it is
		// not service.
		d.actuator <- struct{}{}
		served := time.Now()
		defer func() {
			d.busy.Add(int64(time.Since(served)))
			<-d.actuator
		}()
		time.Sleep(d.cfg.Overhead)
	}
	var err error
	if o == opRead {
		_, err = d.backing.ReadAt(p, off)
		if errors.Is(err, io.EOF) {
			clear(p) // sparse tail of a short file reads as zeros
			err = nil
		}
	} else {
		_, err = d.backing.WriteAt(p, off)
	}
	if err != nil {
		d.count(o, 0, true)
		return fail(fmt.Errorf("%w: backing store: %v", ErrHardware, err))
	}
	if effect == effectRecovered {
		d.count(o, len(p), true)
		return fail(ErrRecovered)
	}
	d.count(o, len(p), false)
	return nil
}

func (d *Disk) count(o op, n int, failed bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if o == opRead {
		d.stats.Reads++
		d.stats.ReadBytes += int64(n)
	} else {
		d.stats.Writes++
		d.stats.WrittenBytes += int64(n)
	}
	if failed {
		d.stats.Errors++
	}
}

type effect int

const (
	effectNone effect = iota
	effectRecovered
	effectMedium
	effectHardware
	effectIllegal
	effectHang
	effectPowerFail
	effectAbsent
)

func (e effect) err(o op) error {
	switch e {
	case effectMedium:
		return ErrMedium
	case effectHardware:
		return ErrHardware
	case effectIllegal:
		return ErrIllegalRequest
	case effectAbsent:
		return ErrNotPresent
	case effectRecovered:
		return ErrRecovered
	}
	return nil
}

// consult picks the effect of the first active fault that matches o,
// spending it if transient, and returns that fault and the channel that
// signals a possible end of a hang.
func (d *Disk) consult(o op) (effect, *fault, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || d.absent {
		return effectAbsent, nil, nil
	}
	for _, f := range d.faults {
		e := f.kind.effectOn(o)
		if e == effectNone {
			continue
		}
		if f.mode == Transient || e == effectPowerFail {
			d.spend(f)
		}
		if e == effectPowerFail {
			d.absent = true
		}
		return e, f, d.unhang
	}
	return effectNone, nil, d.unhang
}

// spend retires f from the active list; it stays known by id so that
// reverting it later is not an error. Caller holds d.mu.
func (d *Disk) spend(f *fault) {
	f.spent = true
	for i, g := range d.faults {
		if g == f {
			d.faults = append(d.faults[:i], d.faults[i+1:]...)
			return
		}
	}
}

// hang blocks until fault f is reverted (nil: the command proceeds), the
// disk is closed or removed (ErrNotPresent) or the command timeout passes
// (ErrTimeout).
func (d *Disk) hang(f *fault, unhang <-chan struct{}) error {
	var timeout <-chan time.Time
	if d.cfg.Timeout > 0 {
		t := time.NewTimer(d.cfg.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	for {
		select {
		case <-timeout:
			return ErrTimeout
		case <-unhang:
		}
		d.mu.Lock()
		if d.closed || d.absent {
			d.mu.Unlock()
			return ErrNotPresent
		}
		hung := d.byID[f.id] == f
		unhang = d.unhang
		d.mu.Unlock()
		if !hung {
			return nil
		}
	}
}

// wake releases every hung command so it re-checks its hang. Caller holds d.mu.
func (d *Disk) wake() {
	close(d.unhang)
	d.unhang = make(chan struct{})
}

// Inject adds a fault and returns its id. Remove takes effect at once; the
// other kinds fire on the next matching command. PowerFail and Remove
// persist until reverted whatever the mode (they are fatal, Brown and Patterson 2000, §3.1).
func (d *Disk) Inject(k Kind, m Mode) (int, error) {
	if k < ReadCorrectable || k > Remove {
		return 0, fmt.Errorf("disk %s: unknown fault kind %d", d.cfg.Name, int(k))
	}
	if m != Transient && m != Sticky {
		return 0, fmt.Errorf("disk %s: unknown fault mode %d", d.cfg.Name, int(m))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.nextID++
	f := &fault{id: d.nextID, kind: k, mode: m}
	d.byID[f.id] = f
	if k == Remove {
		d.absent = true
		f.spent = true
		d.wake()
		return f.id, nil
	}
	d.faults = append(d.faults, f)
	return f.id, nil
}

// Revert undoes fault id: an active fault stops firing, a hang ends (hung
// commands complete), power comes back or the pulled disk is reinserted,
// with whatever content it had. It reports false for an unknown id.
func (d *Disk) Revert(id int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, ok := d.byID[id]
	if !ok {
		return false
	}
	delete(d.byID, id)
	if !f.spent {
		d.spend(f)
	}
	if f.kind == Remove || f.kind == PowerFail {
		d.absent = false
		for _, g := range d.byID {
			if (g.kind == Remove || g.kind == PowerFail) && g.spent {
				d.absent = true // another removal still holds
			}
		}
	}
	d.wake()
	return true
}

// FaultInfo describes a fault for status reports.
type FaultInfo struct {
	ID     int    `json:"id"`
	Type   string `json:"type"`
	Mode   string `json:"mode"`
	Active bool   `json:"active"` // false once a transient fault has fired
}

// Faults lists the faults injected and not reverted, by id.
func (d *Disk) Faults() []FaultInfo {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]FaultInfo, 0, len(d.byID))
	for _, f := range d.byID {
		active := !f.spent || ((f.kind == Remove || f.kind == PowerFail) && d.absent)
		out = append(out, FaultInfo{ID: f.id, Type: f.kind.String(), Mode: f.mode.String(), Active: active})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Close releases hung commands (they fail with ErrNotPresent) and closes the
// backing store. Later commands fail with ErrNotPresent. Safe twice.
func (d *Disk) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.wake()
	d.mu.Unlock()
	return d.backing.Close()
}
