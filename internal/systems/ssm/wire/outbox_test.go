package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// tcpPair is a connected loopback TCP pair: the outbox's direct writes
// need a real socket.
func tcpPair(t testing.TB) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// Frames from many senders all arrive, whole, each sender's in its order.
func TestOutboxDeliversInOrder(t *testing.T) {
	for name, pair := range map[string]func(testing.TB) (net.Conn, net.Conn){
		"tcp":  tcpPair,
		"pipe": func(testing.TB) (net.Conn, net.Conn) { return net.Pipe() },
	} {
		t.Run(name, func(t *testing.T) {
			c, srv := pair(t)
			o := NewOutbox(c, 1<<20, 5*time.Second)
			go o.Run()
			const senders, each = 4, 500
			var wg sync.WaitGroup
			for s := range senders {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						m := Msg{Type: TReadReply, ID: uint64(s)<<32 | uint64(i), Value: bytes.Repeat([]byte{byte(i)}, i%300)}
						if !o.SendMsg(&m) {
							t.Error("send refused below the limit")
							return
						}
						o.Flush()
					}
				}()
			}
			br := bufio.NewReader(srv)
			next := make([]uint64, senders)
			for range senders * each {
				b, err := ReadFrame(br, 1<<20)
				if err != nil {
					t.Fatal(err)
				}
				m, err := Decode(b)
				if err != nil {
					t.Fatal(err)
				}
				s, i := m.ID>>32, m.ID&(1<<32-1)
				if i != next[s] || len(m.Value) != int(i%300) {
					t.Fatalf("sender %d: frame %d (%d bytes), want frame %d", s, i, len(m.Value), next[s])
				}
				next[s]++
			}
			wg.Wait()
			o.Close()
		})
	}
}

// A peer that stops reading fills the outbox; then Send refuses at once
// instead of blocking — the backpressure point.
func TestOutboxRefusesWhenFull(t *testing.T) {
	c, _ := tcpPair(t) // the server side never reads
	o := NewOutbox(c, 8, time.Minute)
	go o.Run()
	defer o.Close()
	frame := Append(nil, &Msg{Type: TReadReply, Value: make([]byte, 64<<10)})
	refused := false
	for range 10_000 { // far more than the socket buffers hold
		done := make(chan bool)
		go func() { done <- o.Send(frame) }()
		select {
		case ok := <-done:
			if !ok {
				refused = true
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Send blocked")
		}
		if refused {
			break
		}
		o.Flush()
	}
	if !refused {
		t.Fatal("a full outbox accepted every frame")
	}
	if n := o.Len(); n > 8 {
		t.Fatalf("%d frames queued, limit 8", n)
	}
}

// CloseAfterFlush writes what was queued, then closes; Close refuses more.
func TestOutboxCloseAfterFlush(t *testing.T) {
	c, srv := tcpPair(t)
	o := NewOutbox(c, 16, 5*time.Second)
	for i := range 3 {
		o.SendMsg(&Msg{Type: TWriteAck, ID: uint64(i)})
	}
	o.CloseAfterFlush()
	if o.SendMsg(&Msg{Type: TWriteAck, ID: 9}) {
		t.Error("send accepted after CloseAfterFlush")
	}
	o.Run() // returns once written and closed
	all, err := io.ReadAll(srv)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(bytes.NewReader(all))
	for i := range 3 {
		b, err := ReadFrame(br, 1<<10)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if m, _ := Decode(b); m.ID != uint64(i) {
			t.Fatalf("frame %d has id %d", i, m.ID)
		}
	}
	if _, err := ReadFrame(br, 1<<10); !errors.Is(err, io.EOF) {
		t.Fatalf("after the queued frames: %v, want EOF", err)
	}
	o.Close() // twice is fine
	if o.Send([]byte("x")) {
		t.Error("send accepted after Close")
	}
}

func TestReadFrameIntoReuses(t *testing.T) {
	var stream []byte
	for i := range 3 {
		stream = Append(stream, &Msg{Type: TReadReply, ID: uint64(i), Value: make([]byte, 100*i)})
	}
	br := bufio.NewReader(bytes.NewReader(stream))
	buf := make([]byte, 0, 150)
	for i := range 3 {
		b, err := ReadFrameInto(br, 1<<10, buf)
		if err != nil {
			t.Fatal(err)
		}
		if fits := HeaderLen-4+1+100*i <= cap(buf); fits != (&b[0] == &buf[:1][0]) {
			t.Errorf("frame %d of %d bytes: in buf = %v, want %v", i, len(b), !fits, fits)
		}
		if m, err := Decode(b); err != nil || m.ID != uint64(i) {
			t.Fatalf("frame %d: %+v, %v", i, m, err)
		}
	}
}

// BenchmarkOutbox8K is one 8 KB frame queued and flushed onto loopback
// TCP, as a stub sends a write: copied once, no allocation.
func BenchmarkOutbox8K(b *testing.B) {
	c, srv := tcpPair(b)
	go func() { _, _ = io.Copy(io.Discard, srv) }()
	o := NewOutbox(c, 4096, 5*time.Second)
	go o.Run()
	defer o.Close()
	frame := Append(nil, &Msg{Type: TWrite, Key: make([]byte, KeyLen), Value: make([]byte, 8192)})
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			for !o.Send(frame) {
				time.Sleep(time.Microsecond) // full: the writer is behind
			}
			o.Flush()
		}
	})
}

// BenchmarkReadFrameInto8K reads 8 KB frames into one reused buffer, as
// the stub's stream reader does.
func BenchmarkReadFrameInto8K(b *testing.B) {
	frame := Append(nil, &Msg{Type: TReadReply, Value: make([]byte, 8192)})
	r := bytes.NewReader(nil)
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(frame)
		br.Reset(r)
		f, err := ReadFrameInto(br, 1<<20, buf)
		if err != nil {
			b.Fatal(err)
		}
		buf = f
	}
}
