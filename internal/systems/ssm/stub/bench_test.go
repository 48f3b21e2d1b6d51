package stub_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/benchcpu"
	"github.com/faultbench/faultbench/internal/systems/ssm/stub"
	"github.com/faultbench/faultbench/internal/systems/ssm/wire"
)

// The stub's hot paths over real loopback TCP to 3 in-process bricks, with
// the paper's settings (W=3, WQ=2, R=2, 8 KB values). The timeout is raised
// to 1 s so a busy shared machine measures cost, not rejections.
func benchStub(b *testing.B) *stub.Stub {
	_, addrs := startBricks(b, 3, nil)
	return startStub(b, addrs, func(c *stub.Config) { c.Timeout = time.Second })
}

// BenchmarkStubWrite8K and BenchmarkStubRead8K run GOMAXPROCS callers;
// the Callers16 variants run 16, as bench/ssm does, where one caller's
// Flush can carry the frames of the others it let run first.
func BenchmarkStubWrite8K(b *testing.B)          { benchWrite(b, 1) }
func BenchmarkStubWrite8KCallers16(b *testing.B) { benchWrite(b, 16) }
func BenchmarkStubRead8K(b *testing.B)           { benchRead(b, 1) }
func BenchmarkStubRead8KCallers16(b *testing.B)  { benchRead(b, 16) }

// callers sets RunParallel's goroutines: GOMAXPROCS for 1, else n in all.
func callers(b *testing.B, n int) {
	if n > 1 {
		b.SetParallelism((n + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	}
}

func benchWrite(b *testing.B, n int) {
	s := benchStub(b)
	v := make([]byte, 8192)
	var keys atomic.Uint64
	b.SetBytes(int64(len(v)))
	b.ReportAllocs()
	callers(b, n)
	b.ResetTimer()
	defer benchcpu.PerOp(b)()
	defer benchcpu.WritesPerOp(b)()
	b.RunParallel(func(pb *testing.PB) {
		key := wire.Key{byte(keys.Add(1))}
		for pb.Next() {
			if _, err := s.Write(context.Background(), key, v, time.Now().Add(time.Minute)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func benchRead(b *testing.B, n int) {
	s := benchStub(b)
	v := make([]byte, 8192)
	var keys atomic.Uint64
	b.SetBytes(int64(len(v)))
	b.ReportAllocs()
	callers(b, n)
	b.ResetTimer()
	defer benchcpu.PerOp(b)()
	defer benchcpu.WritesPerOp(b)()
	b.RunParallel(func(pb *testing.PB) {
		ck, err := s.Write(context.Background(), wire.Key{byte(keys.Add(1))}, v, time.Now().Add(time.Minute))
		if err != nil {
			b.Error(err)
			return
		}
		for pb.Next() {
			if _, err := s.Read(context.Background(), ck); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkCoreWriteRead is the protocol alone: one write to W=3 bricks
// acknowledged, one read answered, no sockets.
func BenchmarkCoreWriteRead(b *testing.B) {
	cfg := stub.DefaultConfig()
	c := stub.NewCore(cfg)
	now := time.Unix(1_700_000_000, 0)
	for id := uint16(1); id <= 3; id++ {
		c.Beacon(now, id, 1)
	}
	v := make([]byte, 8192)
	exp := now.Add(time.Hour)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		id, out, err := c.Write(now, wire.Key{1}, v, exp)
		if err != nil {
			b.Fatal(err)
		}
		var ck stub.Cookie
		for _, s := range out {
			for _, r := range c.Receive(now, s.Brick, &wire.Msg{Type: wire.TWriteAck, ID: id}) {
				ck = r.Cookie
			}
		}
		rid, rout, err := c.Read(now, ck)
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range rout {
			c.Receive(now, s.Brick, &wire.Msg{Type: wire.TReadReply, ID: rid, Value: v})
		}
	}
}
