package local

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"time"
)

// notReady is the one line a readiness check that never passed ends with:
// which node, what was asked of which address, how long it waited and what
// the last try got — not Go's "context deadline exceeded (Client.Timeout
// exceeded while awaiting headers)".
func (c *Processes) notReady(node int, addr string, waited time.Duration, last error) error {
	what := "GET http://" + addr + c.readyPath()
	if c.readyPath() == "" {
		what = "TCP connect to " + addr
	}
	return fmt.Errorf("node %d: not ready: %s did not succeed within %v (ready timeout; cluster.ready_timeout raises it); last try: %s",
		node, what, waited.Round(time.Millisecond), lastTry(last))
}

// readyPath is the HTTP path of the readiness check, "" for a TCP connect.
func (c *Processes) readyPath() string {
	if c.spec.Ready == "" && c.spec.System != CommandSystem {
		return "/health"
	}
	return c.spec.Ready
}

// lastTry says in a few words why one readiness try failed.
func lastTry(err error) string {
	var ne net.Error
	var ue *url.Error
	switch {
	case err == nil:
		return "none"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused (nothing listens there yet)"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("no answer within %v", readyTryTimeout)
	case errors.Is(err, errNotReady):
		return err.Error()
	case errors.As(err, &ue):
		return ue.Err.Error()
	}
	return err.Error()
}

// readyTryTimeout bounds one readiness try.
const readyTryTimeout = time.Second
