package torture

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/faultbench/faultbench/internal/record"
)

// The record is checked with a Parquet implementation that shares no code
// with the one that wrote it (parquet-go): Apache Arrow's. A file both
// read the same way could still be one only parquet-go understands;
// Spark, DuckDB and pandas read Parquet through Arrow's C++ twin of it.

// fileTotals is what a reader made of one Parquet file of the record.
type fileTotals struct {
	rows       int64
	latencySum float64 // sum of latency_s, in row order
	nodeSum    int64   // sum of node
}

func (a fileTotals) agrees(b fileTotals) bool {
	return a.rows == b.rows && a.nodeSum == b.nodeSum &&
		math.Abs(a.latencySum-b.latencySum) <= 1e-9*math.Max(1, math.Abs(a.latencySum))
}

func (a fileTotals) String() string {
	return fmt.Sprintf("%d rows, sum(latency_s) %.6f, sum(node) %d", a.rows, a.latencySum, a.nodeSum)
}

// arrowTotals reads path with Arrow's low-level Parquet reader: every row
// group, the latency_s and node columns by name.
func arrowTotals(path string) (fileTotals, error) {
	var tot fileTotals
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		return tot, err
	}
	defer r.Close()
	sch := r.MetaData().Schema
	latCol, nodeCol := sch.ColumnIndexByName("latency_s"), sch.ColumnIndexByName("node")
	if latCol < 0 || nodeCol < 0 {
		return tot, fmt.Errorf("no latency_s or node column (columns %d, %d)", latCol, nodeCol)
	}
	for g := 0; g < r.NumRowGroups(); g++ {
		rg := r.RowGroup(g)
		n := rg.NumRows()
		tot.rows += n
		cc, err := rg.Column(latCol)
		if err != nil {
			return tot, err
		}
		lat, ok := cc.(*file.Float64ColumnChunkReader)
		if !ok {
			return tot, fmt.Errorf("latency_s is %v, want DOUBLE", cc.Type())
		}
		vals := make([]float64, 4096)
		for read := int64(0); read < n; {
			k, got, err := lat.ReadBatch(min(int64(len(vals)), n-read), vals, nil, nil)
			if err != nil {
				return tot, fmt.Errorf("latency_s: %w", err)
			}
			if k == 0 {
				return tot, fmt.Errorf("latency_s: row group %d ends after %d of %d rows", g, read, n)
			}
			for _, v := range vals[:got] {
				tot.latencySum += v
			}
			read += k
		}
		cc, err = rg.Column(nodeCol)
		if err != nil {
			return tot, err
		}
		node, ok := cc.(*file.Int32ColumnChunkReader)
		if !ok {
			return tot, fmt.Errorf("node is %v, want INT32", cc.Type())
		}
		ints := make([]int32, 4096)
		for read := int64(0); read < n; {
			k, got, err := node.ReadBatch(min(int64(len(ints)), n-read), ints, nil, nil)
			if err != nil {
				return tot, fmt.Errorf("node: %w", err)
			}
			if k == 0 {
				return tot, fmt.Errorf("node: row group %d ends after %d of %d rows", g, read, n)
			}
			for _, v := range ints[:got] {
				tot.nodeSum += int64(v)
			}
			read += k
		}
	}
	if r.NumRows() != tot.rows {
		return tot, fmt.Errorf("footer says %d rows, the row groups hold %d", r.NumRows(), tot.rows)
	}
	return tot, nil
}

// parquetGoTotals is faultbench's own reading of path (parquet-go).
func parquetGoTotals(path string) (fileTotals, error) {
	var tot fileTotals
	err := record.ReadParquetFile(path, func(q record.Request) error {
		tot.rows++
		tot.latencySum += q.LatencyS
		tot.nodeSum += int64(q.Node)
		return nil
	})
	return tot, err
}

// recordFiles lists every Parquet file of the record as a Parquet consumer
// would find it: requests.parquet, and every segment of requests/ except
// hidden (in-progress) ones, which Arrow, Spark and DuckDB skip.
func recordFiles(dir string) (merged string, segments []string) {
	if _, err := os.Stat(filepath.Join(dir, record.RequestsFile)); err == nil {
		merged = filepath.Join(dir, record.RequestsFile)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, record.SegmentDir))
	for _, e := range entries {
		if n := e.Name(); !strings.HasPrefix(n, ".") && strings.HasSuffix(n, ".parquet") {
			segments = append(segments, filepath.Join(dir, record.SegmentDir, n))
		}
	}
	return merged, segments
}

// independentRowCount reads every Parquet file of the record (the merged
// file and every closed segment) with Arrow and checks, file by file, that
// its row count and column sums agree with parquet-go's reading; when both
// a merged file and segments are left (a cut between the merge's rename
// and the removal of requests/), the merge holds at least the rows of the
// segments not yet removed. It returns the record's rows as
// readers take them: the merged file, else the segments together.
func independentRowCount(t *testing.T, dir string) int64 {
	t.Helper()
	merged, segments := recordFiles(dir)
	read := func(path string) fileTotals {
		a, err := arrowTotals(path)
		if err != nil {
			t.Errorf("Arrow cannot read %s: %v", path, err)
			return a
		}
		p, err := parquetGoTotals(path)
		if err != nil {
			t.Errorf("parquet-go cannot read %s: %v", path, err)
			return a
		}
		if !a.agrees(p) {
			t.Errorf("%s: Arrow reads %v, parquet-go %v", path, a, p)
		}
		return a
	}
	var seg fileTotals
	for _, path := range segments {
		s := read(path)
		seg.rows += s.rows
		seg.latencySum += s.latencySum
		seg.nodeSum += s.nodeSum
	}
	if merged == "" {
		t.Logf("Arrow read %d segment(s): %v", len(segments), seg)
		return seg.rows
	}
	m := read(merged)
	t.Logf("Arrow read %s: %v; %d segment(s) left: %v", record.RequestsFile, m, len(segments), seg)
	if m.rows < seg.rows {
		t.Errorf("the merged %s (%v) holds fewer rows than the %d segments left beside it (%v)", record.RequestsFile, m, len(segments), seg)
	}
	return m.rows
}
