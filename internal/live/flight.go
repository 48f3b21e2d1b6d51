package live

import (
	"math"
	"sync"
	"time"
)

// flightBucket is the resolution of the in-flight tracker: attempts are
// counted per 10 ms of scheduled time, so the oldest age is exact to 10 ms
// and a scan costs at most (response timeout / 10 ms) buckets.
const flightBucket = 10 * time.Millisecond

// flights tracks the attempts in flight per client (one lock per client,
// so clients never contend with one another), by scheduled time.
type flights struct {
	shards []flightShard
}

type flightShard struct {
	mu      sync.Mutex
	buckets map[int64]int64 // scheduled time / flightBucket -> attempts in flight
	n       int64
}

func newFlights(clients int) *flights {
	f := &flights{shards: make([]flightShard, max(clients, 1))}
	for i := range f.shards {
		f.shards[i].buckets = map[int64]int64{}
	}
	return f
}

func (f *flights) shard(client int) *flightShard {
	if client < 0 || client >= len(f.shards) {
		client = 0
	}
	return &f.shards[client]
}

// Started counts an attempt scheduled at `at` as in flight.
func (f *flights) Started(client int, at time.Duration) {
	s := f.shard(client)
	s.mu.Lock()
	s.buckets[int64(at/flightBucket)]++
	s.n++
	s.mu.Unlock()
}

// Ended counts it out again.
func (f *flights) Ended(client int, at time.Duration) {
	s := f.shard(client)
	k := int64(at / flightBucket)
	s.mu.Lock()
	if c := s.buckets[k]; c > 1 {
		s.buckets[k] = c - 1
	} else if c == 1 {
		delete(s.buckets, k)
	}
	if s.n > 0 {
		s.n--
	}
	s.mu.Unlock()
}

// state returns the attempts in flight and the age, at now (run time), of
// the oldest of them; age 0 when none is in flight.
func (f *flights) state(now time.Duration) (n int64, oldestAge float64) {
	oldest := int64(math.MaxInt64)
	for i := range f.shards {
		s := &f.shards[i]
		s.mu.Lock()
		n += s.n
		for k := range s.buckets {
			oldest = min(oldest, k)
		}
		s.mu.Unlock()
	}
	if n == 0 || oldest == math.MaxInt64 {
		return n, 0
	}
	return n, max(0, (now - time.Duration(oldest)*flightBucket).Seconds())
}
