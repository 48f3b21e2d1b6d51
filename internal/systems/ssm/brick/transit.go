package brick

import "time"

// transit estimates how late a request arrives: its one-way delay (the
// brick's receipt time minus the stub's send time, wire.Msg.Sent) above
// the smallest one-way delay seen on the same stream recently. The two
// clocks' offset is in every delay alike and cancels; what is left is the
// time the request spent queued on its way (a slow or lossy link, a stub
// whose socket backed up), which a brick must charge against the
// request's budget: a request that arrives after its stub gave up can
// only waste the brick's time (Ling, Kiciman and Fox 2004, §3.4).
//
// The baseline is the minimum over the current and the previous period
// (baseWindow each), so it follows a stepped clock within two periods
// while a lossy link, which still lets some requests through on time,
// keeps it low. One transit belongs to one stream's reader goroutine.
type transit struct {
	cur, prev  int64 // minimum one-way delay (µs) in this and the last period
	curStarted time.Time
}

// baseWindow is the length of one baseline period.
const baseWindow = time.Minute

// noDelay marks a period with no sample yet.
const noDelay = int64(1<<63 - 1)

func newTransit() *transit { return &transit{cur: noDelay, prev: noDelay} }

// late returns how much later than the stream's baseline a request sent
// at sentMicros (the stub's clock, Unix µs; 0 = unknown) arrived at
// arrived (the brick's clock); 0 when unknown or on time.
func (t *transit) late(arrived time.Time, sentMicros int64) time.Duration {
	if sentMicros == 0 {
		return 0
	}
	if t.curStarted.IsZero() {
		t.curStarted = arrived
	}
	if arrived.Sub(t.curStarted) >= baseWindow {
		t.prev, t.cur, t.curStarted = t.cur, noDelay, arrived
	}
	d := arrived.UnixMicro() - sentMicros
	t.cur = min(t.cur, d)
	base := min(t.cur, t.prev)
	return time.Duration(d-base) * time.Microsecond
}
