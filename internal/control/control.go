package control

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// NewToken draws a run's control token: 128 bits from crypto/rand, hex
// encoded, so no other local process can guess it.
func NewToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("control token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Authorized reports whether r carries "Authorization: Bearer token". It
// compares in constant time, and is false for an empty token: a node
// started without one has its endpoint disabled (each system says how).
func Authorized(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(strings.TrimSpace(r.Header.Get("Authorization")), "Bearer ")
	return ok && token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// ErrNoAnswer is wrapped (together with the transport's own error, so
// errors.As still finds a *net.OpError) by a request that got no HTTP
// answer at all: the node is down, restarting or stopped.
var ErrNoAnswer = errors.New("node did not answer")

// StatusError is an answer that is not 2xx. Body is the answer's body (at
// most MaxBody bytes) for the system to decode its own error format.
type StatusError struct {
	Method, URL string
	Status      int
	Body        []byte
}

func (e *StatusError) Error() string {
	msg := strings.TrimSpace(string(e.Body))
	if len(msg) > 512 {
		msg = msg[:512] + "..."
	}
	return fmt.Sprintf("control %s %s: %d %s: %s", e.Method, e.URL, e.Status, http.StatusText(e.Status), msg)
}

// MaxBody bounds the answer a Client reads.
const MaxBody = 16 << 20

// Client calls one node's control endpoint. It is safe for concurrent use.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// NewClient returns a client for the endpoint listening on addr
// (host:port), sending token, giving up on a request after timeout.
func NewClient(addr, token string, timeout time.Duration) *Client {
	return &Client{base: "http://" + addr, token: token, http: &http.Client{Timeout: timeout}}
}

// Do sends in (JSON, none when nil) to path with method and decodes a 2xx
// answer into out (ignored when nil). It returns a *StatusError for a non-2xx
// answer, an error wrapping ErrNoAnswer when there was none, and an error
// for a 2xx answer out cannot hold. It blocks for at most the client's
// timeout or until ctx is done.
//
// A DELETE may be resent by the transport on a fresh connection when a
// pooled one turns out dead (the node restarted): control endpoints make
// their DELETEs idempotent.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	url := c.base + path
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if method == http.MethodDelete {
		// Marks the request idempotent for the transport's retry; an empty
		// key is not sent.
		req.Header["Idempotency-Key"] = nil
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("control %s %s: %w: %w", method, url, ErrNoAnswer, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody))
	if err != nil {
		return fmt.Errorf("control %s %s: reading the answer: %w", method, url, err)
	}
	if resp.StatusCode/100 != 2 {
		return &StatusError{Method: method, URL: url, Status: resp.StatusCode, Body: data}
	}
	if out == nil || len(bytes.TrimSpace(data)) == 0 && resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("control %s %s: bad answer: %w", method, url, err)
	}
	return nil
}
