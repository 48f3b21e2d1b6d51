//go:build !linux

package workload

import (
	"context"
	"net"
	"time"
)

// dialTCP connects to addr by connectBy or until ctx ends (net.Dialer's
// dial; Linux has a cheaper one, dial_linux.go).
func dialTCP(ctx context.Context, addr string, connectBy time.Time) (net.Conn, error) {
	return stdDial(ctx, addr, connectBy)
}
