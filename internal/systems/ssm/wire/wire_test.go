package wire

import (
	"bufio"
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func roundTrip(t *testing.T, m Msg) Msg {
	t.Helper()
	frame := Append(nil, &m)
	b, err := ReadFrame(bufio.NewReader(bytes.NewReader(frame)), 1<<20)
	if err != nil {
		t.Fatalf("ReadFrame(%v): %v", m.Type, err)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode(%v): %v", m.Type, err)
	}
	return got
}

func TestRoundTrip(t *testing.T) {
	key := bytes.Repeat([]byte{7}, KeyLen)
	cases := []Msg{
		{Type: TWrite, ID: 1, Key: key, Expiry: 1700000000000, Checksum: 0xdeadbeef, Budget: 60000, Sent: 1700000000000123, Value: []byte("hello")},
		{Type: TRead, ID: 2, Key: key, Expiry: -1, Checksum: 9, Budget: 1},
		{Type: TWriteAck, ID: 3, Status: TooLarge},
		{Type: TReadReply, ID: 4, Status: OK, Value: []byte("v")},
		{Type: TBeacon, ID: 0, Brick: 12, Incarnation: 1 << 40},
		{Type: TError, ID: 5, Status: BadKey, Text: "key of 3 bytes"},
		{Type: TBackup, ID: 6, Key: key, Expiry: 1700000000001, Checksum: 7, Sent: 1700000000000456, Value: []byte("copy")},
	}
	for _, m := range cases {
		got := roundTrip(t, m)
		if m.Value == nil && got.Value != nil && len(got.Value) == 0 {
			got.Value = nil
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("round trip of %v:\n got %+v\nwant %+v", m.Type, got, m)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":         {},
		"unknown type":  append([]byte{99}, make([]byte, 8)...),
		"short write":   append([]byte{byte(TWrite)}, make([]byte, 9)...),
		"read trailing": Append(nil, &Msg{Type: TRead, Key: make([]byte, KeyLen)})[4:],
		"ack long":      append([]byte{byte(TWriteAck)}, make([]byte, 10)...),
	} {
		if name == "read trailing" {
			b = append(b, 1)
		}
		if _, err := Decode(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

func TestReadFrameLimit(t *testing.T) {
	frame := Append(nil, &Msg{Type: TWrite, Key: make([]byte, KeyLen), Value: make([]byte, 1000)})
	if _, err := ReadFrame(bufio.NewReader(bytes.NewReader(frame)), 100); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	// A short frame is malformed but skipped: the next frame reads fine.
	ok := Append(nil, &Msg{Type: TBeacon, Brick: 7})
	br := bufio.NewReader(bytes.NewReader(append([]byte{0, 0, 0, 2, 1, 1}, ok...)))
	if _, err := ReadFrame(br, 100); !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v, want ErrMalformed", err)
	}
	b, err := ReadFrame(br, 100)
	if err != nil {
		t.Fatalf("frame after a short one: %v", err)
	}
	if m, err := Decode(b); err != nil || m.Type != TBeacon || m.Brick != 7 {
		t.Fatalf("frame after a short one: %+v %v", m, err)
	}
}

// FuzzDecode: Decode never panics, and whatever it accepts re-encodes to the
// same bytes (so no field is silently dropped).
func FuzzDecode(f *testing.F) {
	key := make([]byte, KeyLen)
	for _, m := range []Msg{
		{Type: TWrite, ID: 1, Key: key, Value: []byte("abc")},
		{Type: TRead, ID: 2, Key: key},
		{Type: TWriteAck, Status: OK},
		{Type: TReadReply, Value: []byte("x")},
		{Type: TBeacon, Brick: 3},
		{Type: TError, Text: "no"},
	} {
		f.Add(Append(nil, &m)[4:])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		again := Append(nil, &m)[4:]
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", b, again)
		}
	})
}
