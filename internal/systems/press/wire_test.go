package press

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

func sampleMessages() []Message {
	return []Message{
		{Type: MsgHello, From: 1, Inc: 7, Seq: 0, View: 1},
		{Type: MsgHeartbeat, From: 2, Inc: 9, Seq: 3, Load: 12, View: 4},
		{Type: MsgJoin, From: 3, Inc: 1, Seq: 1},
		{Type: MsgView, From: 1, Seq: 9, View: 5, Members: []uint16{1, 2, 4}},
		{Type: MsgFailed, From: 4, Seq: 2, View: 6, Node: 3},
		{Type: MsgCached, From: 2, Seq: 10, File: 17999},
		{Type: MsgEvicted, From: 2, Seq: 11, File: 3},
		{Type: MsgSync, From: 3, Seq: 12, Files: []uint32{1, 5, 9}},
		{Type: MsgForward, From: 1, Seq: 13, ReqID: 1 << 40, File: 44},
		{Type: MsgFile, From: 2, Seq: 14, ReqID: 1 << 40, File: 44, OK: true, Data: []byte("<!-- page -->")},
		{Type: MsgFile, From: 2, Seq: 15, ReqID: 2, File: 45, OK: false, Data: []byte{}},
	}
}

func encodeAll(t testing.TB, ms []Message) []byte {
	var b []byte
	for i := range ms {
		var err error
		if b, err = AppendFrame(b, &ms[i]); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func TestWireRoundTrip(t *testing.T) {
	ms := sampleMessages()
	stream := encodeAll(t, ms)
	for _, checksum := range []bool{false, true} {
		d := NewDecoder(bytes.NewReader(stream), checksum)
		for i, want := range ms {
			got, err := d.Next()
			if err != nil {
				t.Fatalf("checksum=%v message %d: %v", checksum, i, err)
			}
			if !reflect.DeepEqual(normal(got), normal(want)) {
				t.Fatalf("checksum=%v message %d:\n got %+v\nwant %+v", checksum, i, got, want)
			}
		}
		if _, err := d.Next(); err != io.EOF {
			t.Fatalf("after the last frame: %v, want EOF", err)
		}
	}
}

// A wrong size desynchronises a byte stream for good but costs a
// checksummed stream only the damaged frame (Nagaraja et al. 2002, §5.5, §7).
func TestWrongSizeSpreadsInStreamAndIsContainedWithChecksums(t *testing.T) {
	ms := sampleMessages()
	var stream []byte
	for i := range ms {
		f, _ := AppendFrame(nil, &ms[i])
		if i == 5 { // bad-param-size: 7 bytes short
			f = f[:len(f)-7]
		}
		stream = append(stream, f...)
	}
	plain := NewDecoder(bytes.NewReader(stream), false)
	n := 0
	var err error
	for ; n < len(ms); n++ {
		if _, err = plain.Next(); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrCorrupt) || n > 6 {
		t.Fatalf("byte stream: %d messages then %v; want corruption at or right after frame 5", n, err)
	}
	robust := NewDecoder(bytes.NewReader(stream), true)
	var got []MsgType
	for {
		m, err := robust.Next()
		if err != nil {
			break
		}
		got = append(got, m.Type)
	}
	if len(got) != len(ms)-1 || robust.Dropped != 1 {
		t.Fatalf("checksummed: got %d messages %v, dropped %d; want all but one", len(got), got, robust.Dropped)
	}
}

func TestOffsetCorruptsPayloadOnlyChecksumCatchesIt(t *testing.T) {
	f := newCommFaults(1)
	if _, err := f.add(FaultSpec{Type: BadParamOffset, Duration: "1m", N: 5}); err != nil {
		t.Fatal(err)
	}
	m := Message{Type: MsgFile, From: 2, ReqID: 9, File: 3, OK: true, Data: []byte("<!-- faultbench page 3 -->abcdefgh")}
	frame, _ := AppendFrame(nil, &m)
	bad, _ := f.onSend(frame)
	got, err := NewDecoder(bytes.NewReader(bad), false).Next()
	if err != nil || got.ReqID != 9 || bytes.Equal(got.Data, m.Data) || !bytes.Equal(got.Data[:10], m.Data[5:15]) {
		t.Fatalf("byte stream should deliver the shifted page as if fine: %+v, %v", got, err)
	}
	d := NewDecoder(bytes.NewReader(bad), true)
	if _, err := d.Next(); err != io.EOF || d.Dropped != 1 {
		t.Fatalf("checksummed: %v, dropped %d; want the frame dropped", err, d.Dropped)
	}
}

func FuzzDecode(f *testing.F) {
	stream := encodeAll(f, sampleMessages())
	f.Add(stream, false)
	f.Add(stream, true)
	f.Add(stream[:30], false)
	f.Add(append([]byte{0xFB, 0x5E, 0xFF}, stream...), true)
	f.Fuzz(func(t *testing.T, data []byte, checksum bool) {
		d := NewDecoder(bytes.NewReader(data), checksum)
		for i := 0; ; i++ {
			if i > len(data) {
				t.Fatal("decoder returned more messages than input bytes")
			}
			m, err := d.Next()
			if err != nil {
				return
			}
			// Whatever decodes must re-encode to a frame that decodes the same.
			frame, err := AppendFrame(nil, &m)
			if err != nil {
				t.Fatalf("decoded %+v does not re-encode: %v", m, err)
			}
			again, err := decodeFrame(frame)
			if err != nil || !reflect.DeepEqual(normal(again), normal(m)) {
				t.Fatalf("re-decode mismatch: %+v vs %+v (%v)", again, m, err)
			}
		}
	})
}

func normal(m Message) Message {
	if len(m.Data) == 0 {
		m.Data = nil
	}
	if len(m.Members) == 0 {
		m.Members = nil
	}
	if len(m.Files) == 0 {
		m.Files = nil
	}
	return m
}
