package record

import (
	"testing"

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
