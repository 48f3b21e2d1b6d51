package kvcheck

import (
	"errors"
	"fmt"
	"math"
)

// Counts are the reads of a period by class, and the writes.
type Counts struct {
	Reads   int64 `json:"reads"` // answered reads: ok + stale + lost + phantom
	OK      int64 `json:"ok"`
	Stale   int64 `json:"stale"`
	Lost    int64 `json:"lost"`
	Phantom int64 `json:"phantom"`
	// WritesAcked and WritesUnacked are the puts sent, by whether the
	// service acknowledged them.
	WritesAcked   int64 `json:"writes_acked"`
	WritesUnacked int64 `json:"writes_unacked"`
}

func (c *Counts) addRead(v Verdict) {
	c.Reads++
	switch v {
	case OK:
		c.OK++
	case Stale:
		c.Stale++
	case Lost:
		c.Lost++
	case Phantom:
		c.Phantom++
	}
}

// Anomalies is stale + lost + phantom.
func (c Counts) Anomalies() int64 { return c.Stale + c.Lost + c.Phantom }

// Span is a stretch [StartS, EndS) of the run (a fault's), whose reads are
// counted apart.
type Span struct{ StartS, EndS float64 }

// Config sets how a Checker counts.
type Config struct {
	WindowS float64 // window length in seconds; reads are counted in the window of their start
	Spans   []Span  // counted apart too (a read may fall in several)
}

// Report is what a Checker found. Windows[i] counts the reads that started
// in [i*WindowS, (i+1)*WindowS); Spans[i] those that started in
// Config.Spans[i].
type Report struct {
	Total   Counts
	Windows []Counts
	Spans   []Counts
}

// MaxPending bounds the stale reads of one key waiting to be resolved.
const MaxPending = 1024

// MaxWindows bounds the window series (as analysis does).
const MaxWindows = 1 << 21

// ErrOp is wrapped by Add's errors: an operation no kv driver writes.
var ErrOp = errors.New("impossible kv operation")

type keyID struct{ client, user, key uint32 }

// pending is a stale read not yet resolved.
type pending struct {
	required  uint64  // the version it should have seen
	startS    float64 // when it started (its window and spans)
	laterMiss bool    // a later answered read also returned below required
}

type keyEntry struct {
	KeyState
	pending []pending
}

// Checker classifies the reads of a history. Feed it with Add, in each
// user's order, then call Close once. Not safe for concurrent use: it runs
// off the hot path, on a finished history (analysis) or behind one
// goroutine.
type Checker struct {
	cfg    Config
	keys   map[keyID]*keyEntry
	report Report
}

// New returns a Checker; cfg.WindowS must be positive.
func New(cfg Config) (*Checker, error) {
	if !(cfg.WindowS > 0) || math.IsInf(cfg.WindowS, 0) {
		return nil, fmt.Errorf("kvcheck: window %v s must be a positive number of seconds", cfg.WindowS)
	}
	return &Checker{cfg: cfg, keys: map[keyID]*keyEntry{}, report: Report{Spans: make([]Counts, len(cfg.Spans))}}, nil
}

// Add takes the next operation. It returns an error wrapping ErrOp for an
// operation that cannot come from a kv driver (a put whose version does not
// grow, a start beyond MaxWindows windows).
func (c *Checker) Add(op Op) error {
	if op.StartS/c.cfg.WindowS >= MaxWindows || !(op.StartS >= 0) {
		return fmt.Errorf("%w: t_start_s %v is outside the %d windows of %g s a history may span", ErrOp, op.StartS, MaxWindows, c.cfg.WindowS)
	}
	id := keyID{op.Client, op.User, op.Key}
	k := c.keys[id]
	if k == nil {
		k = &keyEntry{}
		c.keys[id] = k
	}
	if op.Kind == Put {
		if op.Version <= k.Written {
			return fmt.Errorf("%w: client %d user %d key %d: put of version %d after version %d (versions only grow)",
				ErrOp, op.Client, op.User, op.Key, op.Version, k.Written)
		}
		k.Put(op.Version, op.Result == Acked)
		c.each(op.StartS, func(n *Counts) {
			if op.Result == Acked {
				n.WritesAcked++
			} else {
				n.WritesUnacked++
			}
		})
		return nil
	}
	v := k.Get(op.Version, op.Result == Garbage)
	switch v {
	case OK:
		// It saw at least every version the waiting reads missed.
		for _, p := range k.pending {
			c.count(p.startS, Stale)
		}
		k.pending = k.pending[:0]
	case Stale:
		c.resolve(k, op.Version)
		if len(k.pending) == MaxPending {
			c.count(k.pending[0].startS, Lost)
			k.pending = append(k.pending[:0], k.pending[1:]...)
		}
		k.pending = append(k.pending, pending{required: k.Required(), startS: op.StartS})
		return nil
	}
	c.count(op.StartS, v)
	return nil
}

// resolve settles the waiting reads of k against a later stale read that
// returned version got: those it saw past were stale; the others it missed
// too.
func (c *Checker) resolve(k *keyEntry, got uint64) {
	kept := k.pending[:0]
	for _, p := range k.pending {
		if got >= p.required {
			c.count(p.startS, Stale)
			continue
		}
		p.laterMiss = true
		kept = append(kept, p)
	}
	k.pending = kept
}

func (c *Checker) count(startS float64, v Verdict) {
	c.each(startS, func(n *Counts) { n.addRead(v) })
}

// each applies add to the total and to the counts of every period holding
// startS: its window and its spans.
func (c *Checker) each(startS float64, add func(*Counts)) {
	add(&c.report.Total)
	i := int(startS / c.cfg.WindowS)
	for len(c.report.Windows) <= i {
		c.report.Windows = append(c.report.Windows, Counts{})
	}
	add(&c.report.Windows[i])
	for j, s := range c.cfg.Spans {
		if startS >= s.StartS && startS < s.EndS {
			add(&c.report.Spans[j])
		}
	}
}

// Close settles every read still waiting: lost when a later read missed
// its version too, else stale. Call it once; it returns the report.
func (c *Checker) Close() Report {
	for _, k := range c.keys {
		for _, p := range k.pending {
			if p.laterMiss {
				c.count(p.startS, Lost)
			} else {
				c.count(p.startS, Stale)
			}
		}
		k.pending = nil
	}
	return c.report
}
