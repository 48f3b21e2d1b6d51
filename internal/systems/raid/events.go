package raid

import (
	"encoding/json"
	"io"
	"sync"

	"github.com/faultbench/faultbench/internal/systems/raid/array"
	"github.com/faultbench/faultbench/internal/systems/raid/control"
)

// eventRing keeps the node's events: each is numbered, written through to
// the event log (one JSON object a line) and kept in a bounded buffer for
// GET /control/events.
type eventRing struct {
	mu   sync.Mutex
	w    io.Writer // may be nil
	seq  int64
	buf  []control.Event
	keep int
}

func newEventRing(w io.Writer, keep int) *eventRing { return &eventRing{w: w, keep: keep} }

// add records e. It is the array's OnEvent, so it runs under the array's
// lock: it must not block for long (a file or stdout write) and must not call
// the array.
func (r *eventRing) add(e array.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	ev := control.Event{Seq: r.seq, Event: e}
	if len(r.buf) == r.keep {
		copy(r.buf, r.buf[1:])
		r.buf = r.buf[:len(r.buf)-1]
	}
	r.buf = append(r.buf, ev)
	if r.w != nil {
		if b, err := json.Marshal(ev); err == nil {
			_, _ = r.w.Write(append(b, '\n'))
		}
	}
}

// after returns the events numbered above seq and the last number.
func (r *eventRing) after(seq int64) ([]control.Event, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []control.Event{}
	for _, e := range r.buf {
		if e.Seq > seq {
			out = append(out, e)
		}
	}
	return out, r.seq
}
