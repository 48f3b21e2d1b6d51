package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	ctl "github.com/faultbench/faultbench/internal/control"
)

// Errors a Client returns (wrapped in *APIError), by HTTP status.
var (
	ErrUnauthorized = errors.New("unauthorized")          // 401, 403
	ErrNotFound     = errors.New("not found")             // 404
	ErrConflict     = errors.New("not possible in state") // 409
)

// APIError is a non-2xx answer of the control API.
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string { return fmt.Sprintf("raid control: %d: %s", e.Status, e.Message) }

// Is matches the sentinel of the status class.
func (e *APIError) Is(target error) bool {
	switch e.Status {
	case http.StatusBadRequest:
		return target == ErrBadRequest
	case http.StatusUnauthorized, http.StatusForbidden:
		return target == ErrUnauthorized
	case http.StatusNotFound:
		return target == ErrNotFound
	case http.StatusConflict:
		return target == ErrConflict
	}
	return false
}

// Client calls one raid node's control API. It is safe for concurrent use.
type Client struct {
	c *ctl.Client
}

// NewClient returns a client for the node listening on addr (host:port).
func NewClient(addr, token string) *Client {
	return &Client{c: ctl.NewClient(addr, token, 10*time.Second)}
}

// do calls the API; a non-2xx answer is an *APIError with the node's
// ErrorBody message. A DELETE is idempotent — a repeat gets 404, and ids
// are unique across node restarts, so it cannot clear another fault — so
// the transport may resend it when a pooled connection turns out dead.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	err := c.c.Do(ctx, method, path, in, out)
	var se *ctl.StatusError
	if errors.As(err, &se) {
		var eb ErrorBody
		if json.Unmarshal(se.Body, &eb) != nil || eb.Error == "" {
			eb.Error = string(bytes.TrimSpace(se.Body))
		}
		return &APIError{Status: se.Status, Message: eb.Error}
	}
	if err != nil {
		return fmt.Errorf("raid control: %w", err)
	}
	return nil
}

// InjectFault injects a disk fault and returns its id.
func (c *Client) InjectFault(ctx context.Context, req FaultRequest) (int, error) {
	var resp FaultResponse
	err := c.do(ctx, http.MethodPost, "/control/fault", req, &resp)
	return resp.ID, err
}

// RevertFault reverts fault id (ends a hang, reinserts a pulled disk, ...).
// It returns an error matching ErrNotFound for an unknown id: one already
// reverted, or injected into an earlier run of a node that restarted since
// (ids are unique across restarts).
func (c *Client) RevertFault(ctx context.Context, id int) error {
	return c.do(ctx, http.MethodDelete, "/control/fault/"+strconv.Itoa(id), nil, nil)
}

// Maintenance performs an operator action.
func (c *Client) Maintenance(ctx context.Context, req MaintenanceRequest) (MaintenanceResponse, error) {
	var resp MaintenanceResponse
	err := c.do(ctx, http.MethodPost, "/control/maintenance", req, &resp)
	return resp, err
}

// Status returns the array's state, redundancy and reconstruction progress.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	err := c.do(ctx, http.MethodGet, "/control/status", nil, &st)
	return st, err
}

// Events returns the events with a sequence number above after, and the
// value to pass next time. Events older than the node's buffer are gone;
// the node's event file keeps them all.
func (c *Client) Events(ctx context.Context, after int64) ([]Event, int64, error) {
	var resp EventsResponse
	err := c.do(ctx, http.MethodGet, "/control/events?after="+strconv.FormatInt(after, 10), nil, &resp)
	return resp.Events, resp.Next, err
}
