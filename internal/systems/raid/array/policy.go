package array

import (
	"errors"
	"time"

	"github.com/faultbench/faultbench/internal/systems/raid/disk"
)

// errCorrupt marks a block whose content failed its checksum: a silent
// error the disk did not report.
var errCorrupt = errors.New("checksum mismatch")

// verdict is what the transient-error policy decides about one error.
type verdict struct {
	retry  bool // issue the command once more
	failed bool // the disk is out of service (now or already)
}

// diskError applies the transient-error policy to err, returned by b's
// disk while serving the I/O of role r; retried says err came from a retry.
// It is called by I/O goroutines with no array lock held.
func (a *Array) diskError(b *bay, r int, err error, retried bool) verdict {
	a.mu.Lock()
	defer a.mu.Unlock()
	if b.state != bayMember || b.role != r || a.closed {
		return verdict{failed: true} // already out of service (or replaced, or shutting down)
	}
	class := errorClass(err)
	b.errors++
	now := a.now()
	a.noteError(b, class, now, err)
	fail := func(reason string) verdict {
		a.failBay(b, reason)
		return verdict{failed: true}
	}
	if errors.Is(err, disk.ErrNotPresent) {
		return fail("disk not present")
	}
	switch a.cfg.Policy.Kind {
	case Paranoid:
		return fail("paranoid policy: " + class)
	case Tolerant:
		switch {
		case errors.Is(err, disk.ErrRecovered), errors.Is(err, errCorrupt):
			return verdict{} // the caller reconstructs and rewrites the block
		case errors.Is(err, disk.ErrIllegalRequest):
			return fail("illegal command")
		case retried:
			return fail(class + " on retry")
		}
		return verdict{retry: true}
	case StrictWrites:
		var de *disk.Error
		switch {
		case errors.Is(err, disk.ErrRecovered), errors.Is(err, errCorrupt):
			return verdict{}
		case errors.Is(err, disk.ErrMedium) && errors.As(err, &de) && de.Op == "write":
			// Windows 2000 took the disk out on a transient
			// uncorrectable write, where it kept it on every other
			// transient (Brown and Patterson 2000, §4.1).
			return fail("write failed (medium error)")
		case retried:
			return fail(class + " on retry")
		}
		return verdict{retry: true}
	case Threshold:
		keep := b.recent[:0]
		for _, t := range b.recent {
			if now.Sub(t) < a.cfg.Policy.Period {
				keep = append(keep, t)
			}
		}
		b.recent = append(keep, now)
		if len(b.recent) >= a.cfg.Policy.Count {
			return fail(class + ": error threshold reached")
		}
		if errors.Is(err, disk.ErrRecovered) || errors.Is(err, errCorrupt) || retried {
			return verdict{}
		}
		return verdict{retry: true}
	}
	return fail("no policy")
}

// noteError emits a disk.error event, at most one a second per bay and
// class so a sticky fault under load does not flood the log. Caller holds a.mu.
func (a *Array) noteError(b *bay, class string, now time.Time, err error) {
	if now.Before(b.quietTo[class]) {
		return
	}
	b.quietTo[class] = now.Add(time.Second)
	a.emit("disk.error", b, "%s: %v", class, err)
}

func errorClass(err error) string {
	for _, c := range []struct {
		err  error
		name string
	}{
		{disk.ErrRecovered, "recovered"}, {disk.ErrMedium, "medium"}, {disk.ErrHardware, "hardware"},
		{disk.ErrIllegalRequest, "illegal-request"}, {disk.ErrTimeout, "timeout"}, {disk.ErrNotPresent, "not-present"},
		{errCorrupt, "checksum"},
	} {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "other"
}
