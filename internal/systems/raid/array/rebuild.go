package array

import (
	"context"
	"errors"
	"time"

	"github.com/faultbench/faultbench/internal/systems/raid/disk"
)

// Step advances the reconstruction by up to budget bytes per disk (whole
// chunks; a budget below one chunk still rebuilds one) and returns the bytes
// rebuilt. It does nothing when no reconstruction is running or the volume
// has failed. Each stripe is rebuilt with its lock held, so Step may run
// alongside foreground I/O; a stripe is written to the target before the
// cursor passes it, and foreground writes below the cursor go to the target.
func (a *Array) Step(budget int64) int64 {
	var done int64
	for done == 0 || done < budget {
		a.mu.Lock()
		rb := a.rb
		if rb == nil || a.failed {
			a.mu.Unlock()
			return done
		}
		s := rb.cursor
		a.mu.Unlock()
		if !a.rebuildStripe(rb, s) {
			return done
		}
		done += int64(a.chunk)
	}
	return done
}

// rebuildStripe reconstructs stripe s of rb's role onto its target. It
// reports false when the rebuild ended (finished, aborted, failed volume).
func (a *Array) rebuildStripe(rb *rebuild, s int64) bool {
	unlock := a.lock(s)
	defer unlock()
	var v view
	if a.viewOf(s, &v) {
		return false
	}
	a.mu.Lock()
	current := a.rb == rb && rb.cursor == s
	a.mu.Unlock()
	if !current {
		return a.isRebuilding(rb)
	}
	bp := a.getBuf(a.chunk)
	defer a.bufs.Put(bp)
	buf := *bp
	err := a.reconstructWide(&v, rb.role, s, buf)
	if errors.Is(err, ErrFailed) || (err != nil && a.isClosed()) {
		// Disks closed under the rebuild are the node shutting down, not
		// blocks lost: stop without marking any.
		return false
	}
	if err != nil {
		// Some blocks are lost for good (two bad copies). Rebuild block by
		// block: the lost ones keep their checksums, so they read as
		// errors, never as the zeros written here.
		for off := 0; off < a.chunk; off += BlockSize {
			blk := buf[off : off+BlockSize]
			if e := a.reconstruct(&v, rb.role, s, off, off+BlockSize, blk); e != nil {
				if errors.Is(e, ErrFailed) || a.isClosed() {
					return false
				}
				clear(blk)
				a.mu.Lock()
				a.lost++
				a.emit("blocks.lost", rb.target, "member %d stripe %d offset %d: %v", rb.role, s, off, e)
				a.mu.Unlock()
			}
		}
	}
	target := rb.target
	a.rebuildCmds.Add(int64(a.n)) // n-1 reads of the survivors and this write
	if e := a.command(&view{}, rb.role, target, func() error { return target.disk.WriteAt(buf, s*int64(a.chunk)) }); e != nil {
		// The policy either failed the target (rebuild aborted) or kept it:
		// retry this stripe on the next step.
		return a.isRebuilding(rb)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.rb != rb {
		return false
	}
	rb.cursor++
	if rb.cursor == a.stripes {
		ro := &a.roles[rb.role]
		ro.state, ro.lastDisk, ro.lastBay = roleActive, nil, nil
		a.rb = nil
		a.emit("reconstruction.finished", target, "member %d rebuilt onto disk %d in %s", rb.role, target.n, a.now().Sub(rb.started).Round(time.Millisecond))
		if a.unavailable() == 0 {
			a.emit("volume.optimal", nil, "redundancy restored")
		}
		a.maybeStartRebuild()
		return false
	}
	return true
}

func (a *Array) isClosed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.closed
}

func (a *Array) isRebuilding(rb *rebuild) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rb == rb && !a.failed
}

// Rebuilding reports whether a reconstruction is running.
func (a *Array) Rebuilding() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rb != nil && !a.failed
}

// Poll notices disks that were pulled or lost power without being used
// since (an enclosure's hot-plug notice): a missing member or rebuild target
// is taken out of service, which may start a reconstruction or fail the
// volume.
func (a *Array) Poll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	for _, b := range a.bays {
		if b.state == bayMember && !b.disk.Present() {
			b.errors++
			a.failBay(b, "disk not present")
		}
	}
	a.maybeStartRebuild()
}

// Pacer turns the reconstruction policy into per-tick budgets. It carries
// unspent credit between ticks so slow rates still make progress in
// whole chunks.
type Pacer struct {
	Recon  Reconstruction
	credit float64
}

// Budget returns the bytes a reconstruction may rebuild in a tick of length
// dt when the foreground load kept the member disks busy a fraction util
// (0..1) of it; -1 means unlimited for the tick.
func (p *Pacer) Budget(dt time.Duration, util float64) int64 {
	rate := p.Recon.RateFor(util)
	if rate == Unlimited {
		p.credit = 0
		return -1
	}
	p.credit = min(p.credit+float64(rate)*dt.Seconds(), float64(rate)) // at most a second of burst
	return int64(p.credit)
}

// Spent records bytes rebuilt against the credit.
func (p *Pacer) Spent(n int64) { p.credit = max(p.credit-float64(n), 0) }

// Run ticks the array every tick until ctx ends: Poll, then Step within the
// pacer's budget. An unlimited (high priority) budget rebuilds until the
// tick's time is used. It is the only goroutine the array needs.
func (a *Array) Run(ctx context.Context, tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	pacer := Pacer{Recon: a.cfg.Recon}
	var meter loadMeter
	meter.read(a)
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		a.Poll()
		now := time.Now()
		dt := now.Sub(last)
		budget := pacer.Budget(dt, meter.foreground(a, dt))
		last = now
		if !a.Rebuilding() {
			continue
		}
		if budget < 0 {
			for time.Since(now) < tick && ctx.Err() == nil && a.Rebuilding() {
				a.Step(int64(a.chunk) * 8)
			}
			continue
		}
		if budget >= int64(a.chunk) {
			pacer.Spent(a.Step(budget - budget%int64(a.chunk)))
		}
	}
}

// loadMeter measures the foreground load on the member disks between two
// readings, for the adaptive priority: "spare bandwidth" is the time the
// disks are not serving foreground commands. Summing the wall time of
// concurrent volume requests instead counts each disk's queue many times
// over (at a few hundred requests a second it is several seconds a second,
// and the rebuild never left its floor), so it reads the disks' own busy
// time and takes out the rebuild's share: its commands times the mean
// service time of a command in the interval. Disks without a per-command
// overhead report no busy time (nothing queues for them), so over them
// adaptive rebuilds at its ceiling.
type loadMeter struct {
	busy    time.Duration
	cmds    int64
	rebuild int64
}

// read takes a reading of the array's disks.
func (m *loadMeter) read(a *Array) {
	a.mu.Lock()
	disks := make([]*disk.Disk, len(a.bays))
	for i, b := range a.bays {
		disks[i] = b.disk
	}
	a.mu.Unlock()
	m.busy, m.cmds = 0, 0
	for _, d := range disks {
		st := d.Stats()
		m.busy += st.Busy
		m.cmds += st.Reads + st.Writes
	}
	m.rebuild = a.rebuildCmds.Load()
}

// foreground takes a new reading and returns the member disks' mean
// utilisation by foreground commands over the dt since the last one, in
// [0, 1]. A replaced disk starts its counters afresh; an interval in which
// the totals went backwards reads as idle.
func (m *loadMeter) foreground(a *Array, dt time.Duration) float64 {
	prev := *m
	m.read(a)
	return foregroundUtil(m.busy-prev.busy, m.cmds-prev.cmds, m.rebuild-prev.rebuild, a.n, dt)
}

// foregroundUtil is the mean utilisation of members disks by foreground
// commands when, over dt, the disks were busy for busy serving cmds
// commands, rebuild of which were the reconstruction's.
func foregroundUtil(busy time.Duration, cmds, rebuild int64, members int, dt time.Duration) float64 {
	if busy <= 0 || cmds <= 0 || dt <= 0 || members <= 0 {
		return 0
	}
	fg := float64(busy) * float64(max(cmds-max(rebuild, 0), 0)) / float64(cmds)
	return min(max(fg/(float64(dt)*float64(members)), 0), 1)
}
