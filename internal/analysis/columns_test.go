package analysis

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/faultbench/faultbench/internal/record"
)

// FuzzReadParquet: whatever bytes requests.parquet holds, reading it ends in
// rows or an error, never a panic or a hang.
func FuzzReadParquet(f *testing.F) {
	dir := f.TempDir()
	pw, err := record.CreateParquet(filepath.Join(dir, record.RequestsFile))
	if err != nil {
		f.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		pw.Write(record.Request{StartS: float64(i), LatencyS: 0.01, Outcome: record.Outcome(i % record.NumOutcomes), Target: "/p/1"})
	}
	if err := pw.Close(); err != nil {
		f.Fatal(err)
	}
	valid, _ := os.ReadFile(filepath.Join(dir, record.RequestsFile))
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add(bytes.Replace(valid, []byte("timeout"), []byte("timeoux"), 1))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, record.RequestsFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		n := 0
		_ = readRequests(d, func(r *record.Request) error {
			n++
			return nil
		})
	})
}

func TestReadParquetBadOutcome(t *testing.T) {
	dir := t.TempDir()
	pw, _ := record.CreateParquet(filepath.Join(dir, record.RequestsFile))
	pw.Write(record.Request{StartS: 1, LatencyS: 0.01, Outcome: record.Timeout})
	pw.Close()
	b, _ := os.ReadFile(filepath.Join(dir, record.RequestsFile))
	os.WriteFile(filepath.Join(dir, record.RequestsFile), bytes.Replace(b, []byte("timeout"), []byte("timeoux"), -1), 0o644)
	err := readRequests(dir, func(*record.Request) error { return nil })
	if err == nil {
		t.Fatal("a corrupted outcome was accepted")
	}
}

// TestNarrowReaderMatchesRows: the column-by-column reader, cutting row
// groups into units at page boundaries, gives every request the values
// record's row reader gives it, generator columns and all.
func TestNarrowReaderMatchesRows(t *testing.T) {
	for _, segments := range []bool{false, true} {
		dir := writeScanRun(t, segments)
		var want []record.Request
		if err := record.ReadRequests(dir, func(r record.Request) error {
			want = append(want, record.Request{StartS: r.StartS, LatencyS: r.LatencyS, Outcome: r.Outcome, SendLagS: r.SendLagS,
				Refused: r.Refused, CutShort: r.CutShort, Check: r.Check})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		i := 0
		err := readBatches(dir, func(b *requestBatch) error {
			if b.row != int64(i) {
				t.Fatalf("segments=%v: batch at row %d, want %d", segments, b.row, i)
			}
			for k := 0; k < b.n; k++ {
				if got := b.request(k); i >= len(want) || got != want[i] {
					t.Fatalf("segments=%v: request %d = %+v, want %+v", segments, i+1, got, want[min(i, len(want)-1)])
				}
				i++
			}
			return nil
		})
		if err != nil || i != len(want) {
			t.Fatalf("segments=%v: read %d requests of %d: %v", segments, i, len(want), err)
		}
	}
}
