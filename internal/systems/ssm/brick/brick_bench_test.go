package brick

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/systems/ssm/wire"
)

// benchStream runs one brick over loopback TCP and b.N requests through it
// from one stream, inFlight at a time as from a busy stub: the brick's
// whole request path — reader, inbox, processing goroutine, store, reply
// into the outbox and its flush. The client side's allocations count too
// (none per request). mk builds request i into dst.
func benchStream(b *testing.B, inFlight int, mk func(dst []byte, i uint64) []byte) {
	cfg := DefaultConfig()
	cfg.ID = 1
	br, err := Start(cfg, "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	conn, err := net.Dial("tcp", br.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(wire.Preface)); err != nil {
		b.Fatal(err)
	}
	r := bufio.NewReaderSize(conn, 64<<10)
	var buf, req []byte
	next := func() { // one reply (beacons skipped)
		for {
			f, err := wire.ReadFrameInto(r, 1<<20, buf)
			if err != nil {
				b.Fatal(err)
			}
			buf = f
			if wire.Type(f[0]) != wire.TBeacon {
				return
			}
		}
	}
	send := func(i uint64) {
		req = mk(req[:0], i)
		if _, err := conn.Write(req); err != nil {
			b.Fatal(err)
		}
	}
	send(0) // the store holds the key before the reads
	next()
	b.ReportAllocs()
	b.ResetTimer()
	sent := 0
	for ; sent < min(inFlight, b.N); sent++ {
		send(uint64(sent + 1))
	}
	for done := 0; done < b.N; done++ {
		next()
		if sent < b.N {
			send(uint64(sent + 1))
			sent++
		}
	}
}

func benchRequest(typ wire.Type, value []byte) func([]byte, uint64) []byte {
	expiry := time.Now().Add(time.Hour).UnixMilli()
	cs := wire.Checksum(value)
	key := make([]byte, wire.KeyLen)
	return func(dst []byte, id uint64) []byte {
		m := wire.Msg{Type: typ, ID: id, Key: key, Expiry: expiry, Checksum: cs, Budget: 10e6}
		if typ == wire.TWrite || id == 0 {
			m.Type, m.Value = wire.TWrite, value
		}
		return wire.Append(dst, &m)
	}
}

func BenchmarkBrickWrite8K(b *testing.B) {
	benchStream(b, 16, benchRequest(wire.TWrite, make([]byte, 8192)))
}

func BenchmarkBrickRead8K(b *testing.B) {
	benchStream(b, 16, benchRequest(wire.TRead, make([]byte, 8192)))
}
