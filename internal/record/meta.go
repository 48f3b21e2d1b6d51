package record

import "maps"

// SetMeta adds key/value pairs to the record's Parquet footer metadata:
// every segment opened from now on, the open one while it holds no row,
// and the merged requests.parquet carry them (the runner stores the run's
// provenance there, set at t = 0 before the first request). A key set
// twice keeps its last value; after Close it does nothing. ReadMeta reads
// them back.
func (r *Recorder) SetMeta(kv map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	m := maps.Clone(r.opt.Meta)
	if m == nil {
		m = make(map[string]string, len(kv))
	}
	maps.Copy(m, kv)
	r.opt.Meta = m
	if r.seg != nil {
		r.seg.meta = m
		if r.seg.cur != nil && r.seg.rows() == 0 {
			// Opened before this call (NewRecorderWith opens the first):
			// no row, so no encoder, yet.
			r.seg.cur.w.setMeta(kv)
		}
	}
	if r.single != nil {
		r.single.setMeta(kv)
	}
}
