//go:build !unix

package wire

import "net"

// direct never writes here: Run writes every batch.
type direct struct{}

func newDirect(net.Conn) *direct { return &direct{} }

func (*direct) write([]byte) (int, bool) { return 0, false }
