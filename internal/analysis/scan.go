package analysis

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
)

// A scan is one pass over the record, split between goroutines: what does
// not depend on the order of the requests (counts, histograms, extremes)
// is done by the goroutines that decode the units, each into its own
// accumulators, added up at the end; what does (Welford's moments, the
// checks' first-seen names, which late attempts a window's percentiles no
// longer take) is done in record order by the caller's goroutine. Its
// result is therefore the same, to the bit, whatever the number of
// goroutines, and the same as one goroutine reading the record in order.
type scan struct {
	// workers is how many goroutines decode; 1 decodes in the caller's.
	workers int
	// local is called for every batch by the goroutine that decoded it,
	// worker being that goroutine's number (0..workers-1); it may only
	// change that worker's state. It may use b's scratch columns.
	local func(worker int, b *requestBatch) error
	// ordered, when set, is then called for the batch in the caller's
	// goroutine, every batch in record order.
	ordered func(b *requestBatch) error
}

// scanWorkers is the number of goroutines a scan decodes with (tests set
// it to compare results).
var scanWorkers = func() int { return runtime.GOMAXPROCS(0) }

var errScanStopped = errors.New("scan stopped")

// run scans dir's record. The error is the first in record order:
// decoding's, local's or ordered's.
func (s scan) run(dir string) error {
	units, err := recordUnits(dir)
	if err != nil {
		return err
	}
	return s.runUnits(units)
}

// runUnits scans the record made of units (recordUnits), which it does
// not change: two scans of the same record share its list.
func (s scan) runUnits(units []unit) error {
	workers := min(s.workers, len(units))
	if workers <= 1 {
		var dec groupDecoder
		defer dec.close()
		b := newRequestBatch()
		for _, u := range units {
			if err := u.read(&dec, b, func(b *requestBatch) (*requestBatch, error) { return b, s.apply(0, b) }); err != nil {
				return err
			}
		}
		return nil
	}

	// Each unit's batches go, in order, through its own queue to the
	// caller's goroutine, which empties the queues in unit order and gives
	// every batch back to the pool of the goroutine that decoded it. A
	// queue holds at most that goroutine's batches and an error, so
	// sending never blocks; a goroutine ahead of the aggregation waits for
	// a free batch instead.
	type item struct {
		b   *requestBatch
		err error
	}
	// A decoding goroutine holds at most a little more than a unit's
	// batches (decoded, not yet aggregated in order), so that one decoding
	// the unit after the one being aggregated rarely waits.
	batchesPerWorker := int(unitRows/batchRows) + 4
	queues := make([]chan item, len(units))
	for i := range queues {
		queues[i] = make(chan item, batchesPerWorker+1)
	}
	stop := make(chan struct{})
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pool := make(chan *requestBatch, batchesPerWorker)
			made := 0
			get := func() *requestBatch {
				select {
				case b := <-pool:
					return b
				default:
				}
				if made < batchesPerWorker {
					made++
					b := newRequestBatch()
					b.pool = pool
					return b
				}
				select {
				case b := <-pool:
					return b
				case <-stop:
					return nil
				}
			}
			var dec groupDecoder
			defer dec.close()
			var spare *requestBatch // the batch being filled, not yet sent
			for {
				k := int(next.Add(1)) - 1
				if k >= len(units) {
					return
				}
				q := queues[k]
				if spare == nil {
					if spare = get(); spare == nil {
						return
					}
				}
				err := units[k].read(&dec, spare, func(b *requestBatch) (*requestBatch, error) {
					if err := s.local(w, b); err != nil {
						return nil, err
					}
					q <- item{b: b}
					if spare = get(); spare == nil {
						return nil, errScanStopped
					}
					return spare, nil
				})
				if errors.Is(err, errScanStopped) {
					return
				}
				if err != nil {
					q <- item{err: err}
				}
				close(q)
			}
		}()
	}
	defer wg.Wait()
	defer close(stop)
	for _, q := range queues {
		for it := range q {
			if it.err != nil {
				return it.err
			}
			if s.ordered != nil {
				if err := s.ordered(it.b); err != nil {
					return err
				}
			}
			it.b.pool <- it.b
		}
	}
	return nil
}

// apply is local then ordered, for one goroutine scanning alone.
func (s scan) apply(worker int, b *requestBatch) error {
	if err := s.local(worker, b); err != nil {
		return err
	}
	if s.ordered != nil {
		return s.ordered(b)
	}
	return nil
}
