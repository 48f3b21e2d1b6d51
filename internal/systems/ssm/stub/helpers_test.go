package stub_test

import (
	"bufio"
	"net"
	"testing"

	"github.com/faultbench/faultbench/internal/systems/ssm/wire"
)

type frameReader struct{ r *bufio.Reader }

func newFrameReader(c net.Conn) *frameReader { return &frameReader{bufio.NewReader(c)} }

func (f *frameReader) next(t *testing.T) wire.Msg {
	t.Helper()
	b, err := wire.ReadFrame(f.r, 1<<20)
	if err != nil {
		t.Fatalf("read frame: %v", err)
	}
	m, err := wire.Decode(b)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return m
}
