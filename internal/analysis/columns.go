package analysis

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/parquet-go/parquet-go"

	"github.com/faultbench/faultbench/internal/record"
)

// batchRows is how many requests a requestBatch holds: enough that the
// per-batch costs vanish, few enough that a batch (about 350 KB) stays in
// a core's cache between its decoding and its aggregation.
const batchRows = 8192

// requestBatch is up to batchRows consecutive requests of the record,
// column by column: only the columns analysis reads (record.Request's
// StartS, LatencyS, Outcome, SendLagS, Refused, CutShort and Check; the
// generator's are zero where the file predates them).
type requestBatch struct {
	n    int
	row  int64 // record row (0-based, across files) of the first request
	unit int   // index of the unit it comes from (unit.index)
	// lagZero is set when every send lag of the batch is +0 (the column
	// absent, or all its values' bits zero), which lets the scans count
	// the lags of the whole batch at once.
	lagZero bool
	// Set by pass 1's local step for its ordered step: the largest start
	// time of the batch, and its window.
	maxStart float64
	maxWin   int
	pool     chan *requestBatch // where the batch goes back after a scan's ordered step
	start    []float64
	lat      []float64
	lag      []float64
	out      []record.Outcome
	ref      []record.Refusal
	cut      []bool
	// check is read only when checks is set: a file without failed checks
	// (the common case) gives batches none, and no memory for them.
	check  []string
	checks bool
	// Filled in by a scan's local step for its ordered step: each
	// request's phase and window, and the requests whose check the
	// ordered step counts.
	phase   []int32
	win     []int32
	pending []int32
}

func newRequestBatch() *requestBatch {
	return &requestBatch{start: make([]float64, batchRows), lat: make([]float64, batchRows), lag: make([]float64, batchRows),
		out: make([]record.Outcome, batchRows), ref: make([]record.Refusal, batchRows), cut: make([]bool, batchRows),
		phase: make([]int32, batchRows), win: make([]int32, batchRows), pending: make([]int32, 0, batchRows)}
}

// request returns the i-th request of b (only the columns b holds).
func (b *requestBatch) request(i int) record.Request {
	return record.Request{StartS: b.start[i], LatencyS: b.lat[i], Outcome: b.out[i], SendLagS: b.lag[i], Refused: b.ref[i], CutShort: b.cut[i], Check: b.checkAt(i)}
}

// checkAt is the i-th request's check.
func (b *requestBatch) checkAt(i int) string {
	if !b.checks {
		return ""
	}
	return b.check[i]
}

// withChecks makes b hold a check column, empty for its first n requests.
func (b *requestBatch) withChecks(n int) {
	if b.check == nil {
		b.check = make([]string, batchRows)
	}
	if !b.checks {
		clear(b.check[:n])
		b.checks = true
	}
}

// set stores r as the i-th request of b, the (i+1)-th since b was emptied.
func (b *requestBatch) set(i int, r *record.Request) {
	b.start[i], b.lat[i], b.out[i] = r.StartS, r.LatencyS, r.Outcome
	b.lag[i], b.ref[i], b.cut[i] = r.SendLagS, r.Refused, r.CutShort
	if i == 0 {
		b.checks = false
	}
	if r.Check != "" {
		b.withChecks(i)
	}
	if b.checks {
		b.check[i] = r.Check
	}
}

// readRequests streams the requests of dir to fn, one at a time, in record
// order; readBatches is the same, a batch at a time. fn must not keep r.
func readRequests(dir string, fn func(r *record.Request) error) error {
	return readBatches(dir, func(b *requestBatch) error {
		for i := 0; i < b.n; i++ {
			r := b.request(i)
			if err := fn(&r); err != nil {
				return err
			}
		}
		return nil
	})
}

// readBatches streams the requests of dir to fn in record order, in
// batches that fn must not keep. The record is requests.parquet, or the
// segments requests/part-*.parquet of a run that did not end cleanly
// (record.RequestFiles), or requests.csv. Parquet files with the
// recorder's column layout are decoded column by column, only the columns
// analysis needs, page by page (a few pages of memory at a time), which is
// several times faster than reconstructing whole rows; other Parquet files
// and requests.csv go through record's row readers.
func readBatches(dir string, fn func(b *requestBatch) error) error {
	units, err := recordUnits(dir)
	if err != nil {
		return err
	}
	var dec groupDecoder
	defer dec.close()
	b := newRequestBatch()
	for _, u := range units {
		if err := u.read(&dec, b, func(b *requestBatch) (*requestBatch, error) { return b, fn(b) }); err != nil {
			return err
		}
	}
	return nil
}

// A unit is a piece of the record that one goroutine decodes: a run of
// rows of a row group of a Parquet file in the recorder's layout, or a
// whole file read row by row (any other Parquet file, or requests.csv).
// Units list the record in order.
type unit struct {
	index  int // in the list of units of the record
	path   string
	narrow bool // decoded column by column; else the whole file through record's row readers
	// skip are columns a scan does not need from this unit (narrow units
	// only): they are not decoded, and the batches' slices for them hold
	// whatever an earlier unit left. Empty: every column.
	skip     columnSet
	cols     [3]int // t_start_s, latency_s, outcome, when narrow
	gen      [4]int // record.GeneratorColumns; -1 where the file predates them
	group    int    // row group of the file
	from, to int64  // rows [from, to) of the row group
	fileRow  int64  // row of the file (0-based) where the unit starts
	row      int64  // row of the record (0-based) where the unit starts
	csvDir   string // the results directory, for requests.csv
}

// unitRows is about how many rows a unit holds when a row group is split
// (at page boundaries of t_start_s, so that few pages are decoded twice):
// enough that a unit's fixed costs vanish, few enough that goroutines
// decoding units ahead of the one being aggregated hold little memory.
// Tests lower it to make many units of a small record.
var unitRows int64 = 1 << 17

// recordUnits lists the units of dir's record in order. It opens each file
// in turn, for its metadata, and closes it: a killed run may have left
// thousands of segments, more than a process may hold open.
func recordUnits(dir string) (units []unit, err error) {
	files, err := record.RequestFiles(dir)
	if err != nil {
		return nil, err
	}
	if files == nil {
		return []unit{{csvDir: dir}}, nil
	}
	defer func() {
		for i := range units {
			units[i].index = i
		}
	}()
	var row int64
	for _, path := range files {
		nf, rows, err := openNarrow(path)
		if err != nil {
			return nil, err
		}
		if nf == nil {
			units = append(units, unit{path: path, row: row})
			row += rows
			continue
		}
		var fileRow int64
		for g, rg := range nf.pf.RowGroups() {
			for _, span := range splitGroup(rg, nf.cols[0]) {
				units = append(units, unit{path: path, narrow: true, cols: nf.cols, gen: nf.gen, group: g, from: span[0], to: span[1],
					fileRow: fileRow + span[0], row: row + span[0]})
			}
			fileRow += rg.NumRows()
			row += rg.NumRows()
		}
		nf.f.Close()
	}
	return units, nil
}

// splitGroup cuts a row group into spans of rows of about unitRows, at
// the page boundaries of column col; the whole group when its offset index
// (which says where pages start) is missing.
func splitGroup(rg parquet.RowGroup, col int) [][2]int64 {
	total := rg.NumRows()
	whole := [][2]int64{{0, total}}
	if total <= unitRows {
		return whole
	}
	oi, err := rg.ColumnChunks()[col].OffsetIndex()
	if err != nil {
		return whole
	}
	var spans [][2]int64
	from := int64(0)
	for p := 0; p < oi.NumPages(); p++ {
		if first := oi.FirstRowIndex(p); first-from >= unitRows && first < total {
			spans = append(spans, [2]int64{from, first})
			from = first
		}
	}
	return append(spans, [2]int64{from, total})
}

// read decodes u into b, handing every full batch to fn, which returns the
// batch to fill next (b itself, or another).
func (u unit) read(dec *groupDecoder, b *requestBatch, fn func(*requestBatch) (*requestBatch, error)) (err error) {
	if u.narrow {
		return dec.readGroup(u, b, fn)
	}
	// Rows one at a time, gathered into batches.
	if u.csvDir == "" {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("%s: malformed Parquet file: %v", u.path, p)
			}
		}()
	}
	b.n, b.row, b.unit = 0, u.row, u.index
	n := int64(0)
	add := func(r record.Request) error {
		b.set(b.n, &r)
		b.n++
		n++
		if b.n < batchRows {
			return nil
		}
		b.lagZero = readShortcuts && allZero(b.lag[:b.n])
		var err error
		b, err = fn(b)
		if b != nil {
			b.n, b.row, b.unit = 0, u.row+n, u.index
		}
		return err
	}
	if u.csvDir != "" {
		err = record.ReadRequests(u.csvDir, add)
	} else {
		err = record.ReadParquetFile(u.path, add)
	}
	if err == nil && b.n > 0 {
		b.lagZero = readShortcuts && allZero(b.lag[:b.n])
		_, err = fn(b)
	}
	return err
}

// readShortcuts enables what spares the scans work without changing
// their results: lags counted a batch at once when all are zero, a lag
// column whose statistics say all are zero left unread, and pass 2's
// plans (secondPass.planUnits). Tests turn it off to check that.
var readShortcuts = true

// allZero reports whether every value of x is +0 (all bits zero).
func allZero(x []float64) bool {
	var bits uint64
	for _, v := range x {
		bits |= math.Float64bits(v)
	}
	return bits == 0
}

// A columnSet is a set of the columns analysis reads.
type columnSet uint8

const (
	colStart columnSet = 1 << iota
	colLatency
	colOutcome
	colLag
	colCheck
	colMeasured // gen_refused and cut_short
)

func (s columnSet) has(c columnSet) bool { return s&c != 0 }

// narrowFile is an open Parquet file of the record in the recorder's
// layout, and where its columns are.
type narrowFile struct {
	path string
	f    *os.File
	pf   *parquet.File
	cols [3]int // t_start_s, latency_s, outcome
	gen  [4]int // record.GeneratorColumns; -1 where the file predates them
}

// openNarrow opens path; it returns nil (and closes the file) when its
// columns are not the recorder's plain required types, and the number of
// rows it holds.
func openNarrow(path string) (nf *narrowFile, rows int64, err error) {
	// The Parquet decoder is third-party code fed whatever file the user
	// points at; a panic on a malformed file is that file's fault, so it
	// becomes a bad-input error instead of a crash.
	defer func() {
		if p := recover(); p != nil {
			nf, err = nil, fmt.Errorf("%s: malformed Parquet file: %v", path, p)
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	pf, err := parquet.OpenFile(f, info.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("%s: not a readable Parquet file: %w", path, err)
	}
	cols, ok := narrowColumns(pf)
	gen, genOK := generatorColumns(pf)
	if !ok || !genOK {
		f.Close()
		return nil, pf.NumRows(), nil
	}
	return &narrowFile{path: path, f: f, pf: pf, cols: cols, gen: gen}, pf.NumRows(), nil
}

// groupDecoder decodes units; it belongs to one goroutine, and keeps the
// file of its last unit open for the next, which is usually in the same
// file. close closes it.
type groupDecoder struct {
	scratch []parquet.Value
	names   map[string]string // check names, interned: a run has few
	file    *narrowFile
}

// open returns the open file of unit u.
func (d *groupDecoder) open(u unit) (*narrowFile, error) {
	if d.file != nil && d.file.path == u.path {
		return d.file, nil
	}
	d.close()
	nf, _, err := openNarrow(u.path)
	if err != nil {
		return nil, err
	}
	if nf == nil || nf.cols != u.cols || nf.gen != u.gen {
		if nf != nil {
			nf.f.Close()
		}
		return nil, fmt.Errorf("%s: changed while it was read", u.path)
	}
	d.file = nf
	return nf, nil
}

func (d *groupDecoder) close() {
	if d.file != nil {
		d.file.f.Close()
		d.file = nil
	}
}

// readGroup decodes the rows of unit u into b, handing every full batch to
// fn, which returns the batch to fill next.
func (d *groupDecoder) readGroup(u unit, b *requestBatch, fn func(*requestBatch) (*requestBatch, error)) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: malformed Parquet file: %v", u.path, p)
		}
	}()
	nf, err := d.open(u)
	if err != nil {
		return err
	}
	if u.group >= len(nf.pf.RowGroups()) || u.to > nf.pf.RowGroups()[u.group].NumRows() {
		return fmt.Errorf("%s: changed while it was read", u.path)
	}
	if d.scratch == nil {
		d.scratch = make([]parquet.Value, batchRows)
		d.names = map[string]string{}
	}
	chunks := nf.pf.RowGroups()[u.group].ColumnChunks()
	cursor := func(col int) (*columnCursor, error) {
		c := &columnCursor{pages: chunks[col].Pages()}
		if u.from > 0 {
			// Through the offset index when the file has one (pages are
			// then skipped unread), else by decoding the pages before.
			_, _ = chunks[col].OffsetIndex()
			if err := c.pages.SeekToRow(u.from); err != nil {
				c.close()
				return nil, fmt.Errorf("%s: seeking row %d of row group %d: %w", nf.path, u.from, u.group, err)
			}
		}
		return c, nil
	}
	var cols [3]*columnCursor
	for i, col := range nf.cols {
		if u.skip.has([]columnSet{colStart, colLatency, colOutcome}[i]) {
			continue
		}
		if cols[i], err = cursor(col); err != nil {
			return err
		}
		defer cols[i].close()
	}
	start, lat, out := cols[0], cols[1], cols[2]
	// The generator's columns: absent from older files; a column chunk
	// whose statistics say every value is the default (sent on time, not
	// refused, not cut short, no failed check: the common case) is not read.
	var gen [4]*columnCursor
	skipLag := u.skip.has(colLag)
	for i, c := range nf.gen {
		if c < 0 {
			continue
		}
		var skip bool
		switch i {
		case 0:
			skip = skipLag || (readShortcuts && allZeroLags(chunks[c]))
		case 1, 2:
			skip = u.skip.has(colMeasured) || allDefault(chunks[c])
		case 3:
			skip = u.skip.has(colCheck) || allDefault(chunks[c])
		}
		if skip {
			continue
		}
		if gen[i], err = cursor(c); err != nil {
			return err
		}
		defer gen[i].close()
	}
	total := u.to - u.from
	for n := int64(0); n < total; {
		k := int(min(total-n, batchRows))
		b.n, b.row, b.unit = k, u.row+n, u.index
		rowErr := func(err error) error {
			var re rowError
			if errors.As(err, &re) {
				return fmt.Errorf("%s: row %d: %w", nf.path, u.fileRow+n+int64(re.i)+1, re.err)
			}
			return fmt.Errorf("%s: %w", nf.path, err)
		}
		if start != nil {
			if err := start.doubles(b.start[:k], d.scratch); err != nil {
				return rowErr(err)
			}
		}
		if lat != nil {
			if err := lat.doubles(b.lat[:k], d.scratch); err != nil {
				return rowErr(err)
			}
		}
		if out != nil {
			if err := readCodes(out, b.out[:k], d, outcomeCode, unknownOutcome); err != nil {
				return rowErr(err)
			}
		}
		if c := gen[0]; c != nil {
			if err := c.doubles(b.lag[:k], d.scratch); err != nil {
				return rowErr(err)
			}
			b.lagZero = readShortcuts && allZero(b.lag[:k])
		} else if !skipLag {
			clear(b.lag[:k])
			b.lagZero = readShortcuts
		} else {
			b.lagZero = false
		}
		if c := gen[1]; c != nil {
			if err := readCodes(c, b.ref[:k], d, refusalCode, unknownRefusal); err != nil {
				return rowErr(err)
			}
		} else {
			clear(b.ref[:k])
		}
		if c := gen[2]; c != nil {
			if err := c.booleans(b.cut[:k], d.scratch); err != nil {
				return rowErr(err)
			}
		} else {
			clear(b.cut[:k])
		}
		if c := gen[3]; c != nil {
			b.checks = false
			b.withChecks(0)
			if err := c.strings(b.check[:k], d); err != nil {
				return rowErr(err)
			}
		} else {
			b.checks = false
		}
		n += int64(k)
		if b, err = fn(b); err != nil {
			return fmt.Errorf("%s: %w", nf.path, err)
		}
	}
	return nil
}

// allDefault reports whether chunk's statistics say every value is its
// column's zero value ("" or false), where the file has statistics.
func allDefault(chunk parquet.ColumnChunk) bool {
	s, ok := chunk.(interface {
		Bounds() (min, max parquet.Value, ok bool)
	})
	if !ok {
		return false
	}
	lo, hi, ok := s.Bounds()
	if !ok || lo.IsNull() || hi.IsNull() {
		return false
	}
	switch chunk.Type().Kind() {
	case parquet.Boolean:
		return !hi.Boolean()
	case parquet.ByteArray:
		return len(lo.ByteArray()) == 0 && len(hi.ByteArray()) == 0
	}
	return false
}

// allZeroLags reports whether chunk's statistics say every send lag is
// zero, the common case (the generator kept its schedule). The statistics
// do not tell +0 from −0, which no faultbench writer records (a lag is
// max(0, …) of a duration): such a chunk reads as +0, and only the sign of
// a zero largest lag could tell.
func allZeroLags(chunk parquet.ColumnChunk) bool {
	s, ok := chunk.(interface {
		Bounds() (min, max parquet.Value, ok bool)
	})
	if !ok || chunk.Type().Kind() != parquet.Double {
		return false
	}
	lo, hi, ok := s.Bounds()
	return ok && !lo.IsNull() && !hi.IsNull() && lo.Double() == 0 && hi.Double() == 0
}

// narrowColumns finds t_start_s, latency_s and outcome, and reports whether
// they have the recorder's layout (required, not repeated, double, double,
// byte array); otherwise the caller falls back to whole rows.
func narrowColumns(pf *parquet.File) ([3]int, bool) {
	var idx [3]int
	want := []struct {
		name string
		kind parquet.Kind
	}{{"t_start_s", parquet.Double}, {"latency_s", parquet.Double}, {"outcome", parquet.ByteArray}}
	for i, w := range want {
		leaf, ok := pf.Schema().Lookup(w.name)
		if !ok || leaf.MaxDefinitionLevel != 0 || leaf.MaxRepetitionLevel != 0 || leaf.Node.Type().Kind() != w.kind {
			return idx, false
		}
		idx[i] = leaf.ColumnIndex
	}
	return idx, true
}

// generatorColumns finds send_lag_s, gen_refused, cut_short and check,
// each -1 when the file predates it, and reports whether those present
// have the recorder's layout (required double, byte array, boolean, byte
// array).
func generatorColumns(pf *parquet.File) ([4]int, bool) {
	idx := [4]int{-1, -1, -1, -1}
	kinds := []parquet.Kind{parquet.Double, parquet.ByteArray, parquet.Boolean, parquet.ByteArray}
	for i, name := range record.GeneratorColumns {
		leaf, ok := pf.Schema().Lookup(name)
		if !ok {
			continue
		}
		if leaf.MaxDefinitionLevel != 0 || leaf.MaxRepetitionLevel != 0 || leaf.Node.Type().Kind() != kinds[i] {
			return idx, false
		}
		idx[i] = leaf.ColumnIndex
	}
	return idx, true
}

// rowError is an error about the i-th value a cursor call was filling.
type rowError struct {
	i   int
	err error
}

func (e rowError) Error() string { return fmt.Sprintf("value %d: %v", e.i, e.err) }
func (e rowError) Unwrap() error { return e.err }

// columnCursor reads one column chunk's values across its pages: typed
// (doubles, booleans) where the page offers it, through the page's
// dictionary for dictionary-encoded byte arrays (each dictionary entry
// is mapped once per page, not once per value), value by value otherwise.
type columnCursor struct {
	pages parquet.Pages
	page  parquet.Page
	vals  parquet.ValueReader // the page's values; nil when read to the end
	dict  parquet.Dictionary  // the page's dictionary, or nil
	idx   []int32             // the page's dictionary indexes, when dict is set
	off   int                 // how many of idx were read
	codes []uint8             // the page's dictionary mapped to outcomes or refusals
	strs  []string            // the page's dictionary mapped to interned check names
}

func (c *columnCursor) close() {
	if c.page != nil {
		parquet.Release(c.page)
	}
	c.pages.Close()
}

// next moves to the next page; byDict asks for its dictionary indexes
// rather than its values when it has a dictionary.
func (c *columnCursor) next(byDict bool) error {
	if c.page != nil {
		parquet.Release(c.page)
		c.page = nil
	}
	p, err := c.pages.ReadPage()
	if err != nil {
		if err == io.EOF {
			return io.ErrUnexpectedEOF // the row group promised more rows
		}
		return err
	}
	c.page, c.vals, c.dict, c.idx, c.off = p, nil, nil, nil, 0
	if d := p.Dictionary(); byDict && d != nil && p.NumNulls() == 0 {
		data := p.Data()
		c.dict, c.idx = d, data.Int32()
		return nil
	}
	c.vals = p.Values()
	return nil
}

// exhausted reports whether the current page has been read to its end.
func (c *columnCursor) exhausted() bool {
	if c.dict != nil {
		return c.off >= len(c.idx)
	}
	return c.vals == nil
}

// doubles fills dst completely; scratch is used when the page offers no
// typed reader.
func (c *columnCursor) doubles(dst []float64, scratch []parquet.Value) error {
	for len(dst) > 0 {
		if c.page == nil || c.exhausted() {
			if err := c.next(false); err != nil {
				return err
			}
		}
		var n int
		var err error
		if dr, ok := c.vals.(parquet.DoubleReader); ok {
			n, err = dr.ReadDoubles(dst)
		} else {
			n, err = c.vals.ReadValues(scratch[:min(len(dst), len(scratch))])
			for i := 0; i < n; i++ {
				dst[i] = scratch[i].Double()
			}
		}
		dst = dst[n:]
		if err == io.EOF {
			c.vals = nil
		} else if err != nil {
			return err
		}
	}
	return nil
}

// booleans fills dst completely.
func (c *columnCursor) booleans(dst []bool, scratch []parquet.Value) error {
	for len(dst) > 0 {
		if c.page == nil || c.exhausted() {
			if err := c.next(false); err != nil {
				return err
			}
		}
		var n int
		var err error
		if br, ok := c.vals.(parquet.BooleanReader); ok {
			n, err = br.ReadBooleans(dst)
		} else {
			n, err = c.vals.ReadValues(scratch[:min(len(dst), len(scratch))])
			for i := 0; i < n; i++ {
				dst[i] = scratch[i].Boolean()
			}
		}
		dst = dst[n:]
		if err == io.EOF {
			c.vals = nil
		} else if err != nil {
			return err
		}
	}
	return nil
}

// badCode marks a byte-array value that maps to no code.
const badCode = 0xff

// readCodes fills dst with code(v) for each byte-array value v of c; a
// value code maps to badCode is an error made by bad, at its index in dst.
func readCodes[T ~uint8](c *columnCursor, dst []T, d *groupDecoder, code func([]byte) uint8, bad func([]byte) error) error {
	for done := 0; done < len(dst); {
		if c.page == nil || c.exhausted() {
			if err := c.next(true); err != nil {
				return err
			}
			if c.dict != nil {
				c.codes = c.codes[:0]
				for i := range c.dict.Len() {
					c.codes = append(c.codes, code(c.dict.Index(int32(i)).ByteArray()))
				}
			}
		}
		if c.dict != nil {
			k := min(len(dst)-done, len(c.idx)-c.off)
			table := c.codes
			for i, x := range c.idx[c.off : c.off+k] {
				if uint32(x) >= uint32(len(table)) {
					return rowError{done + i, fmt.Errorf("dictionary index %d out of range (%d values)", x, len(table))}
				}
				v := table[x]
				if v == badCode {
					return rowError{done + i, bad(c.dict.Index(x).ByteArray())}
				}
				dst[done+i] = T(v)
			}
			c.off += k
			done += k
			continue
		}
		n, err := c.vals.ReadValues(d.scratch[:min(len(dst)-done, len(d.scratch))])
		for i := 0; i < n; i++ {
			b := d.scratch[i].ByteArray()
			v := code(b)
			if v == badCode {
				return rowError{done + i, bad(b)}
			}
			dst[done+i] = T(v)
		}
		done += n
		if err == io.EOF {
			c.vals = nil
		} else if err != nil {
			return err
		}
	}
	return nil
}

// strings fills dst with a byte-array column's values, interned in d.
func (c *columnCursor) strings(dst []string, d *groupDecoder) error {
	for done := 0; done < len(dst); {
		if c.page == nil || c.exhausted() {
			if err := c.next(true); err != nil {
				return err
			}
			if c.dict != nil {
				c.strs = c.strs[:0]
				for i := range c.dict.Len() {
					c.strs = append(c.strs, d.intern(c.dict.Index(int32(i)).ByteArray()))
				}
			}
		}
		if c.dict != nil {
			k := min(len(dst)-done, len(c.idx)-c.off)
			table := c.strs
			for i, x := range c.idx[c.off : c.off+k] {
				if uint32(x) >= uint32(len(table)) {
					return rowError{done + i, fmt.Errorf("dictionary index %d out of range (%d values)", x, len(table))}
				}
				dst[done+i] = table[x]
			}
			c.off += k
			done += k
			continue
		}
		n, err := c.vals.ReadValues(d.scratch[:min(len(dst)-done, len(d.scratch))])
		for i := 0; i < n; i++ {
			dst[done+i] = d.intern(d.scratch[i].ByteArray())
		}
		done += n
		if err == io.EOF {
			c.vals = nil
		} else if err != nil {
			return err
		}
	}
	return nil
}

// intern returns b as a string, the same string for the same bytes as long
// as few distinct names were seen (a run has few checks).
func (d *groupDecoder) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := d.names[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(d.names) < 4*maxCheckNames {
		d.names[s] = s
	}
	return s
}

func outcomeCode(b []byte) uint8 {
	o, ok := outcomeOf(b)
	if !ok {
		return badCode
	}
	return uint8(o)
}

func unknownOutcome(b []byte) error {
	return fmt.Errorf("unknown outcome %q (want one of ok, conn_error, conn_abort, timeout, http_error, data_error)", b)
}

func refusalCode(b []byte) uint8 {
	f, err := record.ParseRefusal(string(b))
	if err != nil {
		return badCode
	}
	return uint8(f)
}

func unknownRefusal(b []byte) error {
	_, err := record.ParseRefusal(string(b))
	return err
}

func outcomeOf(b []byte) (record.Outcome, bool) {
	switch string(b) {
	case "ok":
		return record.OK, true
	case "conn_error":
		return record.ConnError, true
	case "conn_abort":
		return record.ConnAbort, true
	case "timeout":
		return record.Timeout, true
	case "http_error":
		return record.HTTPError, true
	case "data_error":
		return record.DataError, true
	}
	return 0, false
}
