package kvcheck

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// BenchmarkChecker feeds b.N operations of 256 users on 16 keys each (half
// puts, half gets, 1% of reads stale) and reports the heap the checker holds
// at the end: run with -benchtime=10000000x for the 10 M operations of
// docs/benchmarks.md.
func BenchmarkChecker(b *testing.B) {
	const users, keys = 256, 16
	rng := rand.New(rand.NewPCG(1, 2))
	c, _ := New(Config{WindowS: 5, Spans: []Span{{60, 120}}})
	var st [users * keys]uint64
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		u := rng.Uint32N(users)
		k := rng.Uint32N(keys)
		op := Op{StartS: float64(i) / 10000, User: u, Key: k}
		op.EndS = op.StartS
		s := &st[u*keys+k]
		if i%2 == 0 {
			*s++
			op.Kind, op.Version, op.Result = Put, *s, Acked
		} else {
			op.Kind, op.Version, op.Result = Get, *s, Found
			if rng.IntN(100) == 0 && *s > 0 {
				op.Version--
			}
		}
		if err := c.Add(op); err != nil {
			b.Fatal(err)
		}
	}
	r := c.Close()
	b.StopTimer()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "heap-bytes")
	if r.Total.Reads == 0 && b.N > 1 {
		b.Fatal("no reads classified")
	}
	runtime.KeepAlive(c)
}

// BenchmarkParseLine is the decoder's cost per history line.
func BenchmarkParseLine(b *testing.B) {
	line := string(AppendLine(nil, Op{StartS: 12.5, EndS: 12.51, Client: 3, User: 17, Key: 5, Kind: Get, Version: 1234, Result: Found}))
	line = line[:len(line)-1]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseLine(line); err != nil {
			b.Fatal(err)
		}
	}
}
