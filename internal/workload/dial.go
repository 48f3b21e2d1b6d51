package workload

import (
	"context"
	"net"
	"time"
)

// stdDial is net.Dialer's dial, for the addresses and systems dialTCP
// does not handle itself.
func stdDial(ctx context.Context, addr string, connectBy time.Time) (net.Conn, error) {
	d := net.Dialer{Deadline: connectBy}
	return d.DialContext(ctx, "tcp", addr)
}
