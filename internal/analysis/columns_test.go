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
