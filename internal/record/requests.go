package record

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/parquet-go/parquet-go"
)

// requestRow is the Parquet row of requests.parquet; column names are the contract.
type requestRow struct {
	TStartS  float64 `parquet:"t_start_s"`
	LatencyS float64 `parquet:"latency_s"`
	Outcome  string  `parquet:"outcome,dict"`
	Node     int32   `parquet:"node"`
	Client   int32   `parquet:"client"`
	Bytes    int64   `parquet:"bytes"`
	Status   int32   `parquet:"status"`
	Target   string  `parquet:"target,dict"`
	// GeneratorColumns; absent from files written before them, which read
	// as zero values (sent on time, not refused, not cut short).
	SendLagS   float64 `parquet:"send_lag_s"`
	GenRefused string  `parquet:"gen_refused,dict"`
	CutShort   bool    `parquet:"cut_short"`
	Check      string  `parquet:"check,dict"`
}

func toRow(r Request) requestRow {
	return requestRow{r.StartS, r.LatencyS, r.Outcome.String(), int32(r.Node), int32(r.Client), r.Bytes, int32(r.Status), r.Target,
		r.SendLagS, r.Refused.String(), r.CutShort, r.Check}
}

func fromRow(row requestRow) (Request, error) {
	o, err := ParseOutcome(row.Outcome)
	if err != nil {
		return Request{}, err
	}
	refused, err := ParseRefusal(row.GenRefused)
	if err != nil {
		return Request{}, err
	}
	return Request{StartS: row.TStartS, LatencyS: row.LatencyS, Outcome: o, Node: int(row.Node), Client: int(row.Client), Bytes: row.Bytes,
		Status: int(row.Status), Target: row.Target, SendLagS: row.SendLagS, Refused: refused, CutShort: row.CutShort, Check: row.Check}, nil
}

// ParquetWriter writes one Parquet file of request rows in batches. It is
// not safe for concurrent use; the Recorder serialises calls. Nothing it
// writes is readable before Close writes the footer: the Recorder keeps
// files short (segments) so that a killed run loses only the last one.
//
// A writer of a running record's segments (createSegment) encodes in the
// background: Write only copies the row into the open batch, and a full
// batch is encoded by a goroutine of the writer's own (encode), started
// with the first one, while the next batch fills. Encoding 8192 rows took
// 2–4 ms, which Write used to spend on the caller's goroutine, under the
// Recorder's lock: a client's attempt, on a generator pinned to one core
// (one P), with every other goroutine of the run waiting behind it, its
// send lag among them. The encoder parks between slices of encodeRows
// (writeSliced), so a waiting goroutine runs within one slice. At most
// one full batch waits for it: a Write that finds it still busy with two
// waits (the memory stays bounded however slow the disk). drain, and so
// Close and a segment's seal, write the open batch in the same slices.
// Other writers (CreateParquet) encode each full batch at once, in Write:
// parking would only slow a loop that writes rows as fast as it can.
type ParquetWriter struct {
	f     *os.File
	w     *parquet.GenericWriter[requestRow]
	batch []requestRow
	rows  int64

	background bool              // encode full batches in encode, not in Write
	full       chan []requestRow // batches for encode; nil until the first
	free       chan []requestRow // batches encode is done with
	done       chan error        // encode's first error, sent when full is closed
	poke       chan struct{}     // Write's sign, every encodeRows rows, that rows still come (pause)
	pauseTimer *time.Timer
	// blocked is set while a Write waits for encode (handOff): pausing
	// then would only make the writer, and all that waits on it, wait.
	blocked atomic.Bool
}

// batchRows is how many rows are buffered before they are handed to the
// encoder, which writes them into the row group (in memory until Close).
const batchRows = 8192

// encodeRows is the slice of a batch encode writes before it parks: 64
// slices a batch, about 85 µs each on average here; the longest seen over
// hundreds of batches, a slice that fills every column's page at once or
// meets the collector, took 2–3 ms (BenchmarkEncodeBatch, slice-max-ns).
const encodeRows = 128

// segmentPageBuffer is the page buffer of segments. Pages are compressed
// when they fill, so small ones spread that work over encode's slices
// instead of leaving it to Close, which a seal cannot slice: a batch's
// Close took 2.4 ms with parquet-go's default of 256 KiB and 0.4 ms with
// this, for a file a third larger and encoding a quarter dearer in all
// (BenchmarkEncodeBatch). The merged requests.parquet keeps the default,
// larger pages, smaller and cheaper to read.
const segmentPageBuffer = 8 << 10

// CreateParquet creates path and returns a writer for request rows; meta
// goes into the file footer's key/value metadata.
func CreateParquet(path string, meta ...map[string]string) (*ParquetWriter, error) {
	return createParquet(path, 0, meta...)
}

// createSegment is CreateParquet for a running record's segment: small
// pages, full batches encoded in the background.
func createSegment(path string, meta map[string]string) (*ParquetWriter, error) {
	w, err := createParquet(path, segmentPageBuffer, meta)
	if w != nil {
		w.background = true
		w.poke = make(chan struct{}, 1)
		w.pauseTimer = time.NewTimer(time.Hour)
		w.pauseTimer.Stop()
	}
	return w, err
}

// createParquet is CreateParquet with a page buffer size (0: the default).
func createParquet(path string, pageBuffer int, meta ...map[string]string) (*ParquetWriter, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	opts := []parquet.WriterOption{parquet.Compression(&parquet.Snappy), parquet.MaxRowsPerRowGroup(1 << 20)}
	if pageBuffer > 0 {
		opts = append(opts, parquet.PageBufferSize(pageBuffer))
	}
	for _, m := range meta {
		for k, v := range m {
			opts = append(opts, parquet.KeyValueMetadata(k, v))
		}
	}
	w := parquet.NewGenericWriter[requestRow](f, opts...)
	return &ParquetWriter{f: f, w: w, batch: make([]requestRow, 0, batchRows)}, nil
}

// Write buffers one request.
func (p *ParquetWriter) Write(r Request) error {
	p.batch = append(p.batch, toRow(r))
	p.rows++
	if p.background && p.rows%encodeRows == 0 {
		select { // a slice's worth of rows came since the last
		case p.poke <- struct{}{}:
		default:
		}
	}
	if len(p.batch) == cap(p.batch) {
		if !p.background {
			_, err := p.w.Write(p.batch)
			p.batch = p.batch[:0]
			return err
		}
		p.handOff()
	}
	return nil
}

// setMeta adds kv to the footer's key/value metadata. Not while encode
// runs: only before the first full batch, or on a writer that encodes in
// Write.
func (p *ParquetWriter) setMeta(kv map[string]string) {
	for k, v := range kv {
		p.w.SetKeyValueMetadata(k, v)
	}
}

// Rows is the number of rows written so far.
func (p *ParquetWriter) Rows() int64 { return p.rows }

// handOff gives the full batch to encode and takes an empty one.
func (p *ParquetWriter) handOff() {
	if p.full == nil {
		p.full, p.free, p.done = make(chan []requestRow, 1), make(chan []requestRow, 2), make(chan error, 1)
		p.free <- make([]requestRow, 0, batchRows)
		go p.encode()
	}
	p.blocked.Store(true)
	select { // end a pause under way: the writer now waits on encode
	case p.poke <- struct{}{}:
	default:
	}
	p.full <- p.batch
	p.batch = (<-p.free)[:0]
	p.blocked.Store(false)
}

// encode writes each batch handed to it into the row group until full is
// closed; then it sends its first error on done.
func (p *ParquetWriter) encode() {
	var err error
	for b := range p.full {
		if err == nil {
			err = p.writeSliced(b)
		}
		p.free <- b
	}
	p.done <- err
}

// writeSliced writes rows into the row group encodeRows at a time and
// pauses after each slice (pause).
func (p *ParquetWriter) writeSliced(rows []requestRow) error {
	for i := 0; i < len(rows); i += encodeRows {
		if _, err := p.w.Write(rows[i:min(i+encodeRows, len(rows))]); err != nil {
			return err
		}
		p.pause()
	}
	return nil
}

// pause parks the encoding goroutine until the next Write or, when none
// comes, a timer. Parking, not runtime.Gosched: a yielding goroutine goes
// back on the run queue, and the scheduler polls the network only when
// that queue is empty, so the attempts waiting for their answers would
// still wait for the whole batch. Parked, it lets the scheduler run what
// is ready and poll. Every encodeRows-th Write wakes it, so encoding
// keeps pace with a writer that writes rows as fast as it can; the timer
// ends a pause with no Write to wake it (a seal's drain, a quiet run) at
// the scheduler's next look at its timers, within a millisecond.
func (p *ParquetWriter) pause() {
	if p.blocked.Load() {
		return
	}
	p.pauseTimer.Reset(time.Microsecond)
	select {
	case <-p.poke:
		p.pauseTimer.Stop()
	case <-p.pauseTimer.C:
	}
}

// drain waits for encode to finish the batches handed to it, ends it, and
// writes the open batch itself: after it, p.w holds every row and may be
// used directly (copySegment). A later full batch starts a new encode.
func (p *ParquetWriter) drain() error {
	var err error
	if p.full != nil {
		close(p.full)
		err = <-p.done
		p.full, p.free, p.done = nil, nil, nil
	}
	switch {
	case len(p.batch) == 0:
	case p.background:
		err = errors.Join(err, p.writeSliced(p.batch))
	default:
		_, werr := p.w.Write(p.batch)
		err = errors.Join(err, werr)
	}
	p.batch = p.batch[:0]
	return err
}

// Close writes the remaining rows and the file footer.
func (p *ParquetWriter) Close() error {
	err := p.drain()
	err = errors.Join(err, p.w.Close())
	return errors.Join(err, p.f.Close())
}

// ReadRequests streams every request of a results directory to fn, in
// record order, from whichever form the directory holds (see RequestFiles):
// requests.parquet, the segments requests/part-*.parquet of a run that did
// not end cleanly, or requests.csv. It stops at the first error fn returns.
func ReadRequests(dir string, fn func(Request) error) error {
	files, err := RequestFiles(dir)
	if err != nil {
		return err
	}
	if files == nil {
		csvPath := filepath.Join(dir, RequestsCSV)
		f, err := os.Open(csvPath)
		if err != nil {
			return err
		}
		defer f.Close()
		return ReadCSV(f, csvPath, fn)
	}
	for _, path := range files {
		if err := ReadParquetFile(path, fn); err != nil {
			return err
		}
	}
	return nil
}

// ReadParquetFile streams the requests of one Parquet file of a record
// (requests.parquet or one segment) to fn.
func ReadParquetFile(path string, fn func(Request) error) (err error) {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	pf, err := parquet.OpenFile(f, info.Size())
	if err != nil {
		return fmt.Errorf("%s: not a readable Parquet file: %w", path, err)
	}
	for _, col := range Columns {
		if _, ok := pf.Schema().Lookup(col); !ok {
			return fmt.Errorf("%s: column %q missing", path, col)
		}
	}
	r := parquet.NewGenericReader[requestRow](f)
	defer r.Close()
	rows := make([]requestRow, 4096)
	var row int64
	for {
		n, rerr := r.Read(rows)
		for i := 0; i < n; i++ {
			row++
			req, err := fromRow(rows[i])
			if err != nil {
				return fmt.Errorf("%s: row %d: %w", path, row, err)
			}
			if err := fn(req); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("%s: row %d: %w", path, row, rerr)
		}
	}
}

// CSVWriter writes requests as CSV with a header row (export --csv, requests.csv).
type CSVWriter struct {
	w   *bufio.Writer
	buf []byte
}

// NewCSVWriter writes the header row and returns the writer.
func NewCSVWriter(w io.Writer) (*CSVWriter, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	cw := csv.NewWriter(bw)
	if err := cw.Write(append(append([]string{}, Columns...), GeneratorColumns...)); err != nil {
		return nil, err
	}
	cw.Flush()
	return &CSVWriter{w: bw}, cw.Error()
}

// Write appends one request row.
func (c *CSVWriter) Write(r Request) error {
	b := c.buf[:0]
	b = strconv.AppendFloat(b, r.StartS, 'f', 6, 64)
	b = append(b, ',')
	b = strconv.AppendFloat(b, r.LatencyS, 'f', 6, 64)
	b = append(b, ',')
	b = append(b, r.Outcome.String()...)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.Node), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.Client), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, r.Bytes, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = append(b, ',')
	b = appendCSVField(b, r.Target)
	b = append(b, ',')
	b = strconv.AppendFloat(b, r.SendLagS, 'f', 6, 64)
	b = append(b, ',')
	b = append(b, r.Refused.String()...)
	b = append(b, ',')
	if r.CutShort {
		b = append(b, '1')
	} else {
		b = append(b, '0')
	}
	b = append(b, ',')
	b = appendCSVField(b, r.Check)
	b = append(b, '\n')
	c.buf = b
	_, err := c.w.Write(b)
	return err
}

// Flush writes buffered rows.
func (c *CSVWriter) Flush() error { return c.w.Flush() }

func appendCSVField(b []byte, s string) []byte {
	needQuote := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', ',', '\n', '\r':
			needQuote = true
		}
	}
	if !needQuote {
		return append(b, s...)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

// ReadCSV streams request rows from CSV with a header naming at least the
// columns of Columns (in any order; others are ignored) and, optionally,
// those of GeneratorColumns (cut_short is 0/1 or false/true). name is used
// in errors, which give the line and column.
func ReadCSV(r io.Reader, name string, fn func(Request) error) error {
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<16))
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err == io.EOF {
		return fmt.Errorf("%s: empty file: want a header row %v", name, Columns)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	idx := make([]int, len(Columns))
	for i := range idx {
		idx[i] = -1
	}
	for j, h := range header {
		for i, c := range Columns {
			if h == c {
				idx[i] = j
			}
		}
	}
	for i, c := range Columns {
		if idx[i] < 0 {
			return fmt.Errorf("%s:1: header has no column %q (want %v)", name, c, Columns)
		}
	}
	genIdx := []int{-1, -1, -1, -1}
	for j, h := range header {
		for i, c := range GeneratorColumns {
			if h == c {
				genIdx[i] = j
			}
		}
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		req, err := parseCSVRecord(rec, idx)
		if err == nil {
			err = parseGeneratorFields(&req, rec, genIdx)
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if err := fn(req); err != nil {
			return err
		}
	}
}

func parseCSVRecord(rec []string, idx []int) (Request, error) {
	var req Request
	field := func(i int) (string, error) {
		if idx[i] >= len(rec) {
			return "", fmt.Errorf("column %q missing (row has %d fields)", Columns[i], len(rec))
		}
		return rec[idx[i]], nil
	}
	parseF := func(i int) (float64, error) {
		s, err := field(i)
		if err != nil {
			return 0, err
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v != v || v < 0 || v > 1e12 {
			return 0, fmt.Errorf("column %q: %q is not a non-negative number of seconds", Columns[i], s)
		}
		return v, nil
	}
	parseI := func(i int) (int64, error) {
		s, err := field(i)
		if err != nil {
			return 0, err
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("column %q: %q is not a non-negative integer", Columns[i], s)
		}
		return v, nil
	}
	var err error
	if req.StartS, err = parseF(0); err != nil {
		return req, err
	}
	if req.LatencyS, err = parseF(1); err != nil {
		return req, err
	}
	s, err := field(2)
	if err != nil {
		return req, err
	}
	if req.Outcome, err = ParseOutcome(s); err != nil {
		return req, fmt.Errorf("column \"outcome\": %w", err)
	}
	var v int64
	if v, err = parseI(3); err != nil {
		return req, err
	}
	req.Node = int(v)
	if v, err = parseI(4); err != nil {
		return req, err
	}
	req.Client = int(v)
	if req.Bytes, err = parseI(5); err != nil {
		return req, err
	}
	if v, err = parseI(6); err != nil {
		return req, err
	}
	req.Status = int(v)
	if req.Target, err = field(7); err != nil {
		return req, err
	}
	return req, nil
}

// parseGeneratorFields sets the GeneratorColumns present (genIdx[i] >= 0).
func parseGeneratorFields(req *Request, rec []string, genIdx []int) error {
	field := func(i int) (string, bool, error) {
		j := genIdx[i]
		if j < 0 {
			return "", false, nil
		}
		if j >= len(rec) {
			return "", false, fmt.Errorf("column %q missing (row has %d fields)", GeneratorColumns[i], len(rec))
		}
		return rec[j], true, nil
	}
	s, ok, err := field(0)
	if err != nil {
		return err
	}
	if ok && s != "" {
		v, perr := strconv.ParseFloat(s, 64)
		if perr != nil || v != v || v < 0 || v > 1e12 {
			return fmt.Errorf("column %q: %q is not a non-negative number of seconds", GeneratorColumns[0], s)
		}
		req.SendLagS = v
	}
	if s, ok, err = field(1); err != nil {
		return err
	} else if ok {
		if req.Refused, err = ParseRefusal(s); err != nil {
			return fmt.Errorf("column %q: %w", GeneratorColumns[1], err)
		}
	}
	if s, ok, err = field(2); err != nil {
		return err
	} else if ok && s != "" {
		v, perr := strconv.ParseBool(s)
		if perr != nil {
			return fmt.Errorf("column %q: %q is not 0 or 1", GeneratorColumns[2], s)
		}
		req.CutShort = v
	}
	if s, ok, err = field(3); err != nil {
		return err
	} else if ok {
		req.Check = s
	}
	return nil
}
