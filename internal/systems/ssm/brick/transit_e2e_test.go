package brick

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/systems/ssm/wire"
)

// TestLateRequestDropped: a request whose stub gave up while it was in
// transit (§5.7's lossy link) is discarded unprocessed and counted in
// NumDropped; requests on time around it are answered. The brick's clock
// need not agree with the stub's: every Sent here is 1 h off.
func TestLateRequestDropped(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ID = 1
	b, err := Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	conn, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write([]byte(wire.Preface)); err != nil {
		t.Fatal(err)
	}
	const skew = time.Hour
	read := func(id uint64, inTransit time.Duration) {
		t.Helper()
		m := wire.Msg{Type: wire.TRead, ID: id, Key: make([]byte, wire.KeyLen), Expiry: time.Now().Add(time.Minute).UnixMilli(),
			Budget: uint32((60 * time.Millisecond).Microseconds()), Sent: time.Now().Add(-skew - inTransit).UnixMicro()}
		if _, err := conn.Write(wire.Append(nil, &m)); err != nil {
			t.Fatal(err)
		}
	}
	read(1, 0)
	read(2, time.Second) // held a second on its way: its stub gave up long ago
	read(3, 0)
	br := bufio.NewReader(conn)
	var got []uint64
	for len(got) < 2 {
		f, err := wire.ReadFrame(br, 1<<20)
		if err != nil {
			t.Fatalf("after replies %v: %v", got, err)
		}
		m, err := wire.Decode(f)
		if err != nil {
			t.Fatal(err)
		}
		if m.Type == wire.TReadReply {
			got = append(got, m.ID)
		}
	}
	if got[0] != 1 || got[1] != 3 {
		t.Fatalf("replies to %v, want [1 3] (request 2 dropped)", got)
	}
	if s := b.Stats(); s.NumDropped != 1 || s.NumReads != 2 {
		t.Fatalf("stats %+v: want 1 dropped, 2 reads", s)
	}
}
