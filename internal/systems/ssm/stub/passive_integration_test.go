package stub_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/systems/ssm/brick"
	"github.com/faultbench/faultbench/internal/systems/ssm/stub"
	"github.com/faultbench/faultbench/internal/systems/ssm/wire"
)

// startPassive starts n passive bricks that know each other, shipping
// every interval.
func startPassive(t *testing.T, n int, interval time.Duration) ([]*brick.Brick, []string) {
	t.Helper()
	var lns []net.Listener
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	var bricks []*brick.Brick
	for i, ln := range lns {
		cfg := brick.DefaultConfig()
		cfg.ID, cfg.Seed = uint16(i+1), 1
		cfg.Passive, cfg.Degree, cfg.BackupInterval = true, n, interval
		cfg.Replicas = slices.Delete(slices.Clone(addrs), i, i+1)
		b, err := brick.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = b.Serve(ln) }()
		t.Cleanup(func() { b.Close() })
		bricks = append(bricks, b)
	}
	return bricks, addrs
}

// waitFor polls cond until it holds (bounded: the test fails after 10 s).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPassiveFailoverOverTCP: real passive bricks and a stub. A write the
// primary shipped survives its death (the promoted brick 2 answers it); a
// write it never shipped is lost — the read says so, it never returns
// another value.
func TestPassiveFailoverOverTCP(t *testing.T) {
	passive := func(c *stub.Config) { c.Style, c.Timeout = stub.Passive, time.Second }
	ctx := context.Background()
	v := []byte("session value")

	t.Run("shipped", func(t *testing.T) {
		bricks, addrs := startPassive(t, 3, 5*time.Millisecond)
		s := startStub(t, addrs, passive)
		ck, err := s.Write(ctx, wire.Key{1}, v, time.Now().Add(time.Minute))
		if err != nil || !slices.Equal(ck.Bricks, []uint16{1}) {
			t.Fatalf("write: %+v, %v; want brick 1's acknowledgement", ck, err)
		}
		waitFor(t, "the backups to hold the write", func() bool {
			return bricks[1].Stats().NumElements == 1 && bricks[2].Stats().NumElements == 1
		})
		if bricks[1].Stats().NumWrites != 0 {
			t.Fatal("a backup got the stub's write itself")
		}
		bricks[0].Close()
		waitFor(t, "brick 1 to be taken for dead", func() bool { return !slices.Contains(s.Live(), 1) })
		got, err := s.Read(ctx, ck)
		if err != nil || string(got) != string(v) {
			t.Fatalf("read after failover: %q, %v", got, err)
		}
		if bricks[1].Stats().NumReads != 1 || bricks[2].Stats().NumReads != 0 {
			t.Fatal("the read did not go to brick 2, the promoted primary, alone")
		}
	})
	t.Run("unshipped", func(t *testing.T) {
		bricks, addrs := startPassive(t, 3, time.Minute) // never ships within the test
		s := startStub(t, addrs, passive)
		ck, err := s.Write(ctx, wire.Key{1}, v, time.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.Read(ctx, ck); err != nil || string(got) != string(v) {
			t.Fatalf("read from the primary: %q, %v", got, err)
		}
		bricks[0].Close()
		waitFor(t, "brick 1 to be taken for dead", func() bool { return !slices.Contains(s.Live(), 1) })
		if got, err := s.Read(ctx, ck); !errors.Is(err, stub.ErrStateLost) {
			t.Fatalf("read of the unshipped write after failover: %q, %v; want ErrStateLost", got, err)
		}
	})
}
