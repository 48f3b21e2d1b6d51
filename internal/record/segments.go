package record

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// The request record on disk.
//
// While a run goes on, requests are written as a sequence of small Parquet
// files, segments, in SegmentDir: each is written as
// requests/.part-NNNNN.parquet.inprogress and renamed to
// requests/part-NNNNN.parquet once its footer is written, every few seconds.
// A killed controller therefore leaves every request recorded up to the last
// rename readable, by faultbench and by any Parquet reader (Spark, Arrow,
// DuckDB read a directory of part files as one table and skip names
// starting with a dot). At a clean end the segments are merged into
// requests.parquet (written as requests.parquet.tmp and renamed, so a kill
// during the merge leaves the segments, still whole) and SegmentDir is
// removed. Readers take requests.parquet when present, else the segments.
const (
	SegmentDir    = "requests"
	segmentPrefix = "part-"
	segmentSuffix = ".parquet"
	inProgress    = ".inprogress"
)

func segmentName(seq int) string { return fmt.Sprintf("%s%05d%s", segmentPrefix, seq, segmentSuffix) }

// RequestFiles lists the Parquet files that hold dir's request record, in
// record order: requests.parquet alone when present, else the closed
// segments of requests/ (possibly none, for a run killed before its first
// segment closed, or before the load started: events.jsonl and no record).
// It returns nil and no error when dir holds only
// requests.csv, and an error when it holds no request record at all.
func RequestFiles(dir string) ([]string, error) {
	single := filepath.Join(dir, RequestsFile)
	if _, err := os.Stat(single); err == nil {
		return []string{single}, nil
	}
	segDir := filepath.Join(dir, SegmentDir)
	entries, err := os.ReadDir(segDir)
	if err == nil {
		files := []string{}
		for _, e := range entries {
			if n := e.Name(); !e.IsDir() && strings.HasPrefix(n, segmentPrefix) && strings.HasSuffix(n, segmentSuffix) {
				files = append(files, filepath.Join(segDir, n))
			}
		}
		slices.Sort(files) // zero-padded sequence numbers sort in record order
		return files, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, RequestsCSV)); err == nil {
		return nil, nil
	}
	if _, err := os.Stat(filepath.Join(dir, EventsFile)); err == nil {
		// A run stopped before its load started (during cluster start-up)
		// recorded no request: an empty record, not a foreign directory.
		return []string{}, nil
	}
	return nil, fmt.Errorf("%s: no %s, %s/ or %s: not a results directory", dir, RequestsFile, SegmentDir, RequestsCSV)
}

// HoldsRun reports whether dir already holds a run's request record in
// any form.
func HoldsRun(dir string) bool {
	for _, n := range []string{RequestsFile, SegmentDir, RequestsCSV} {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

// segmentWriter writes the request record as segments. Write is called
// with the Recorder's lock held; cut hands the open segment to the caller,
// who closes it (sealSegment) outside the lock, so clients never wait for a
// footer to be written.
type segmentWriter struct {
	dir  string
	meta map[string]string
	seq  int
	cur  *openSegment
}

type openSegment struct {
	w    *ParquetWriter
	path string // final name; the file is path's in-progress twin until sealed
}

func newSegmentWriter(dir string, meta map[string]string) (*segmentWriter, error) {
	if err := os.MkdirAll(filepath.Join(dir, SegmentDir), 0o755); err != nil {
		return nil, err
	}
	return &segmentWriter{dir: filepath.Join(dir, SegmentDir), meta: meta}, nil
}

func inProgressPath(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+inProgress)
}

func (s *segmentWriter) Write(r Request) error {
	if err := s.open(); err != nil {
		return err
	}
	return s.cur.w.Write(r)
}

// open opens the next segment unless one is open. The Recorder opens the
// first when it is made, before the load starts, so that the run's first
// request does not wait, under the recorder's lock, for the file and its
// writer: a few milliseconds the first time, in which every client waits.
func (s *segmentWriter) open() error {
	if s.cur != nil {
		return nil
	}
	path := filepath.Join(s.dir, segmentName(s.seq))
	w, err := createSegment(inProgressPath(path), s.meta)
	if err != nil {
		return err
	}
	s.seq++
	s.cur = &openSegment{w: w, path: path}
	return nil
}

// rows is the number of rows in the open segment.
func (s *segmentWriter) rows() int64 {
	if s.cur == nil {
		return 0
	}
	return s.cur.w.Rows()
}

// cut detaches the open segment (nil when none, or when it holds no row:
// an empty one stays open); the next Write opens a new one.
func (s *segmentWriter) cut() *openSegment {
	if s.rows() == 0 {
		return nil
	}
	seg := s.cur
	s.cur = nil
	return seg
}

// discard closes and removes an open segment that holds no row, so a
// record ends with sealed segments only.
func (s *segmentWriter) discard() error {
	seg := s.cur
	if seg == nil || s.rows() > 0 {
		return nil
	}
	s.cur = nil
	return errors.Join(seg.w.Close(), os.Remove(inProgressPath(seg.path)))
}

// seal writes the segment's footer and gives it its final name.
func (seg *openSegment) seal() error {
	if err := seg.w.Close(); err != nil {
		return fmt.Errorf("%s: %w", seg.path, err)
	}
	return os.Rename(inProgressPath(seg.path), seg.path)
}

// MergeSegments merges the closed segments of dir/requests/ into
// dir/requests.parquet (meta in its footer) and removes requests/. The
// merged file appears at once, by rename, only when complete; a failure
// leaves the segments as they were. A directory without segments is left
// alone.
func MergeSegments(dir string, meta map[string]string) error {
	segDir := filepath.Join(dir, SegmentDir)
	if _, err := os.Stat(segDir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	files, err := RequestFiles(dir)
	if err != nil {
		return err
	}
	final := filepath.Join(dir, RequestsFile)
	if len(files) == 1 && files[0] == final {
		// A merge that renamed its file but was stopped before cleaning up.
		return os.RemoveAll(segDir)
	}
	tmp := final + ".tmp"
	w, err := CreateParquet(tmp, meta)
	if err != nil {
		return err
	}
	for _, path := range files {
		if err := copySegment(path, w); err != nil {
			w.Close()
			os.Remove(tmp)
			return err
		}
	}
	if err := w.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	return os.RemoveAll(segDir)
}

// copySegment appends a segment's rows to w as Parquet rows, without
// reconstructing Go values (several times faster than a typed copy). The
// segment was written by this package, so its columns are w's.
func copySegment(path string, w *ParquetWriter) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := w.drain(); err != nil {
		return err
	}
	r := parquet.NewReader(f)
	defer r.Close()
	n, err := parquet.CopyRows(w.w, r)
	w.rows += n
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// ReadMeta returns the key/value metadata of dir's request record: the
// footer of requests.parquet, or of the first closed segment. It is empty
// (not an error) for requests.csv or a record without any closed segment.
func ReadMeta(dir string) (map[string]string, error) {
	files, err := RequestFiles(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	if len(files) == 0 {
		return out, nil
	}
	f, err := os.Open(files[0])
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	pf, err := parquet.OpenFile(f, info.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("%s: not a readable Parquet file: %w", files[0], err)
	}
	for _, kv := range pf.Metadata().KeyValueMetadata {
		out[kv.Key] = kv.Value
	}
	return out, nil
}
