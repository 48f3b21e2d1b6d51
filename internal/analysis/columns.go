package analysis

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"

	"github.com/faultbench/faultbench/internal/record"
)

// readRequests streams the requests of dir to fn. Only StartS, LatencyS and
// Outcome are set: they are all analysis reads. For requests.parquet it
// decodes just those three columns, page by page (three pages of memory at
// a time), which is several times faster than reconstructing whole rows;
// files whose columns are not the recorder's plain required types, and
// requests.csv, go through record.ReadRequests. fn must not keep r.
func readRequests(dir string, fn func(r *record.Request) error) (err error) {
	path := filepath.Join(dir, record.RequestsFile)
	// The Parquet decoder is third-party code fed whatever file the user
	// points at; a panic on a malformed file is that file's fault, so it
	// becomes a bad-input error instead of a crash.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: malformed Parquet file: %v", path, p)
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return record.ReadRequests(dir, func(r record.Request) error { return fn(&r) })
		}
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	pf, err := parquet.OpenFile(f, info.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return fmt.Errorf("%s: not a readable Parquet file (was the run killed before it could close it?): %w", path, err)
	}
	cols, ok := narrowColumns(pf)
	if !ok {
		return record.ReadRequests(dir, func(r record.Request) error { return fn(&r) })
	}
	const batch = 4096
	starts, lats := make([]float64, batch), make([]float64, batch)
	outs := make([]record.Outcome, batch)
	values := make([]parquet.Value, batch)
	var row int64
	for _, rg := range pf.RowGroups() {
		chunks := rg.ColumnChunks()
		start := newColumnCursor(chunks[cols[0]])
		lat := newColumnCursor(chunks[cols[1]])
		out := newColumnCursor(chunks[cols[2]])
		err := func() error {
			defer start.close()
			defer lat.close()
			defer out.close()
			for left := rg.NumRows(); left > 0; {
				n := int(min(left, batch))
				if err := start.doubles(starts[:n], values); err != nil {
					return err
				}
				if err := lat.doubles(lats[:n], values); err != nil {
					return err
				}
				if err := out.outcomes(outs[:n], values); err != nil {
					return fmt.Errorf("row %d: %w", row+1, err)
				}
				r := record.Request{}
				for i := 0; i < n; i++ {
					row++
					r.StartS, r.LatencyS, r.Outcome = starts[i], lats[i], outs[i]
					if err := fn(&r); err != nil {
						return err
					}
				}
				left -= int64(n)
			}
			return nil
		}()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
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

// columnCursor reads one column chunk's values across its pages.
type columnCursor struct {
	pages parquet.Pages
	page  parquet.Page
	vals  parquet.ValueReader
}

func newColumnCursor(c parquet.ColumnChunk) *columnCursor { return &columnCursor{pages: c.Pages()} }

func (c *columnCursor) close() {
	if c.page != nil {
		parquet.Release(c.page)
	}
	c.pages.Close()
}

func (c *columnCursor) next() error {
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
	c.page, c.vals = p, p.Values()
	return nil
}

// doubles fills dst completely; scratch is used when the page offers no
// typed reader.
func (c *columnCursor) doubles(dst []float64, scratch []parquet.Value) error {
	for len(dst) > 0 {
		if c.vals == nil {
			if err := c.next(); err != nil {
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

// outcomes fills dst with parsed outcome names.
func (c *columnCursor) outcomes(dst []record.Outcome, scratch []parquet.Value) error {
	for len(dst) > 0 {
		if c.vals == nil {
			if err := c.next(); err != nil {
				return err
			}
		}
		n, err := c.vals.ReadValues(scratch[:min(len(dst), len(scratch))])
		for i := 0; i < n; i++ {
			o, ok := outcomeOf(scratch[i].ByteArray())
			if !ok {
				return fmt.Errorf("unknown outcome %q (want one of ok, conn_error, conn_abort, timeout, http_error, data_error)", scratch[i].ByteArray())
			}
			dst[i] = o
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
