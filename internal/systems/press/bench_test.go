package press

import (
	"testing"

	"github.com/faultbench/faultbench/internal/pageset"
)

// BenchmarkServeHit is the hot path of a warm cluster: a request whose page
// is in the node's own cache.
func BenchmarkServeHit(b *testing.B) {
	c := NewCore(CoreConfig{Node: 1, Mode: HA, Peers: []int{2, 3, 4}, Incarnation: 1, CachePages: 1024,
		MissedBeats: 3, BusyConns: 256, ReadPage: func(f uint32) []byte { return pageset.Body(int(f), 26*1024) }})
	c.Start()
	for f := range uint32(1024) {
		c.Serve(f)
	}
	c.Ready()
	b.SetBytes(26 * 1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, src, _, _ := c.Serve(uint32(i & 1023)); src != FromCache {
			b.Fatal("miss")
		}
	}
}

// BenchmarkEncodeFile is the cost of framing one 26 KiB file transfer.
func BenchmarkEncodeFile(b *testing.B) {
	m := Message{Type: MsgFile, From: 1, ReqID: 1, File: 1, OK: true, Data: pageset.Body(1, 26*1024)}
	buf := make([]byte, 0, maxFrame)
	b.SetBytes(int64(len(m.Data)))
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = AppendFrame(buf[:0], &m)
	}
}
