package record

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/benchcpu"
)

// BenchmarkRecord is the recorder's hot path, one goroutine per P, in the
// crash-safe segment mode and the single-file mode it replaced. cpu-ns/op
// counts the encoding too, wherever it runs, and the final Close: segments
// encode in the background (ParquetWriter), so ns/op alone would miss it.
func BenchmarkRecord(b *testing.B) {
	for _, mode := range []struct {
		name   string
		single bool
	}{{"segments", false}, {"single-file", true}} {
		b.Run(mode.name, func(b *testing.B) {
			rec, err := NewRecorderWith(b.TempDir(), Options{WindowS: 1, HorizonS: 10, SingleFile: mode.single})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			cpu := benchcpu.PerOp(b)
			b.RunParallel(func(pb *testing.PB) {
				r := Request{Outcome: OK, Node: 1, Bytes: 2048, Status: 200, Target: "/p/1"}
				i := 0
				for pb.Next() {
					i++
					r.StartS = float64(i) * 1e-5
					r.LatencyS = 0.001 + float64(i%97)*1e-5
					rec.Record(r)
				}
			})
			b.StopTimer()
			if _, _, err := rec.Close(0); err != nil {
				b.Fatal(err)
			}
			cpu()
		})
	}
}

// BenchmarkEncodeBatch is the work of one full batch (batchRows rows),
// which Record used to do inside the recorder's lock and a segment's
// encoder now does in the background: the rows written into a new file's
// row group in encodeRows slices, and its Close, with the default pages
// and with a segment's. One op is one batch. It also reports the longest
// slice (slice-max-ns: how long the encoder can hold the processor between
// pauses), the Close alone (close-ns/op: the part a seal cannot slice) and
// the file's size (bytes/file).
func BenchmarkEncodeBatch(b *testing.B) {
	rows := make([]requestRow, batchRows)
	for i := range rows {
		rows[i] = toRow(Request{StartS: float64(i) / 20000, LatencyS: 0.0001 + float64(i%97)*1e-6, Outcome: OK, Node: 1, Client: i % 2,
			Bytes: 26624, Status: 200, Target: "/page.html", SendLagS: 1e-5 * float64(i%13)})
	}
	for _, c := range []struct {
		name string
		page int
	}{{"default-pages", 0}, {"segment-pages", segmentPageBuffer}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			path := filepath.Join(b.TempDir(), "x.parquet")
			var sliceMax, closing time.Duration
			var size int64
			for b.Loop() {
				w, err := createParquet(path, c.page)
				if err != nil {
					b.Fatal(err)
				}
				for i := 0; i < len(rows); i += encodeRows {
					t := time.Now()
					if _, err := w.w.Write(rows[i : i+encodeRows]); err != nil {
						b.Fatal(err)
					}
					sliceMax = max(sliceMax, time.Since(t))
				}
				t := time.Now()
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				closing += time.Since(t)
				if fi, err := os.Stat(path); err == nil {
					size = fi.Size()
				}
			}
			b.ReportMetric(float64(sliceMax.Nanoseconds()), "slice-max-ns")
			b.ReportMetric(float64(closing.Nanoseconds())/float64(b.N), "close-ns/op")
			b.ReportMetric(float64(size), "bytes/file")
		})
	}
}
