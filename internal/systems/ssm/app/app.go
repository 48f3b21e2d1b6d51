// Package app is the SSM session front end (`faultbench node ssm-app`): a
// stateless HTTP server whose every request reads a user's session, modifies
// it and writes it back (Ling, Kiciman and Fox 2004, §2's interaction model), through a Backend:
// SSM bricks via the stub, this process's memory, or fsync'd files.
//
// # HTTP protocol (what workload drivers speak)
//
//	POST /session/{user}[?size=N]   X-Session-Cookie: <cookie> (absent: new session)
//	GET  /session/{user}            X-Session-Cookie: <cookie> (required)
//	GET  /health
//
// user matches [A-Za-z0-9._-]{1,64}. A POST loads the session the cookie
// names (if any), increments its sequence number (a new session starts at 1),
// writes the new value (payload of N bytes, default the node's state_size)
// and answers 200 with the new value as body and headers X-Session-Seq and
// X-Session-Cookie (the cookie for the next request). A GET answers 200 with
// the stored value as body, unchanged.
//
// A client verifies every 200 body with VerifySession(body, user, seq): seq
// is its last written sequence number for GET and that plus one for POST.
// Errors carry X-Session-Error:
//
//	400 bad-user | bad-size | missing-cookie | cookie-user   the request was wrong
//	410 state-lost | state-corrupt | state-expired | cookie-corrupt
//	503 overloaded | timeout | unavailable                   (Retry-After: 1)
//	500 backend                                              (e.g. a disk error)
//
// A driver must count 410 as data_error (the service admits it lost or
// damaged the session) and a 200 that fails VerifySession as data_error, so
// that a stale, lost or corrupt session is never ok. After any failed POST
// the client no longer knows which value is stored; it should start the user
// over with a POST without cookie rather than count the next read.
package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/faultbench/faultbench/internal/systems/ssm/stub"
)

// Header names of the protocol.
const (
	HeaderCookie = "X-Session-Cookie"
	HeaderSeq    = "X-Session-Seq"
	HeaderError  = "X-Session-Error"
)

// Config configures the front end.
type Config struct {
	StateSize    int           // default payload bytes of a session; default 8 KiB
	MaxStateSize int           // largest ?size= accepted; default 256 KiB − 1 KiB
	TTL          time.Duration // session expiry after each write; default 30 min
}

// DefaultConfig returns the paper's 8 KB sessions.
func DefaultConfig() Config {
	return Config{StateSize: 8 << 10, MaxStateSize: 255 << 10, TTL: 30 * time.Minute}
}

// Validate reports an impossible setting.
func (c Config) Validate() error {
	switch {
	case c.StateSize < 0 || c.StateSize > c.MaxStateSize:
		return fmt.Errorf("ssm app: state_size %d must be in [0, %d]", c.StateSize, c.MaxStateSize)
	case c.TTL < time.Second:
		return fmt.Errorf("ssm app: session_ttl %v must be at least 1s", c.TTL)
	}
	return nil
}

// Handler serves the protocol over backend.
func Handler(backend Backend, cfg Config) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /session/{user}", func(w http.ResponseWriter, r *http.Request) {
		user := r.PathValue("user")
		if !ValidUser(user) {
			fail(w, http.StatusBadRequest, "bad-user", "user must match [A-Za-z0-9._-]{1,64}")
			return
		}
		cookie := r.Header.Get(HeaderCookie)
		if cookie == "" {
			fail(w, http.StatusBadRequest, "missing-cookie", "GET needs the "+HeaderCookie+" header of the last POST")
			return
		}
		v, err := backend.Load(r.Context(), user, cookie)
		if err != nil {
			failErr(w, err)
			return
		}
		if s, err := ParseSession(v); err == nil {
			w.Header().Set(HeaderSeq, strconv.FormatUint(s.Seq, 10))
		}
		w.Header().Set(HeaderCookie, cookie)
		writeValue(w, v)
	})
	mux.HandleFunc("POST /session/{user}", func(w http.ResponseWriter, r *http.Request) {
		user := r.PathValue("user")
		if !ValidUser(user) {
			fail(w, http.StatusBadRequest, "bad-user", "user must match [A-Za-z0-9._-]{1,64}")
			return
		}
		size := cfg.StateSize
		if q := r.URL.Query().Get("size"); q != "" {
			n, err := strconv.Atoi(q)
			if err != nil || n < 0 || n > cfg.MaxStateSize {
				fail(w, http.StatusBadRequest, "bad-size", fmt.Sprintf("size must be an integer in [0, %d]", cfg.MaxStateSize))
				return
			}
			size = n
		}
		var seq uint64
		if cookie := r.Header.Get(HeaderCookie); cookie != "" {
			old, err := backend.Load(r.Context(), user, cookie)
			if err != nil {
				failErr(w, err)
				return
			}
			s, err := ParseSession(old)
			if err == nil && s.User != user {
				err = fmt.Errorf("%w: stored session belongs to %q", ErrSessionWrongUser, s.User)
			}
			if err != nil {
				fail(w, http.StatusGone, "state-corrupt", err.Error())
				return
			}
			seq = s.Seq
		}
		seq++
		v := NewSession(user, seq, size)
		cookie, err := backend.Save(r.Context(), user, v, time.Now().Add(cfg.TTL))
		if err != nil {
			failErr(w, err)
			return
		}
		w.Header().Set(HeaderCookie, cookie)
		w.Header().Set(HeaderSeq, strconv.FormatUint(seq, 10))
		writeValue(w, v)
	})
	return mux
}

func writeValue(w http.ResponseWriter, v []byte) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(v)))
	_, _ = w.Write(v)
}

func fail(w http.ResponseWriter, status int, code, why string) {
	w.Header().Set(HeaderError, code)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "%s: %s\n", code, why)
}

// ErrorCode maps a backend error to its HTTP status and X-Session-Error code.
func ErrorCode(err error) (int, string) {
	switch {
	case errors.Is(err, stub.ErrOverloaded):
		return http.StatusServiceUnavailable, "overloaded"
	case errors.Is(err, stub.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "timeout"
	case errors.Is(err, stub.ErrUnavailable), errors.Is(err, stub.ErrClosed), errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable, "unavailable"
	case errors.Is(err, stub.ErrStateLost):
		return http.StatusGone, "state-lost"
	case errors.Is(err, stub.ErrStateCorrupt):
		return http.StatusGone, "state-corrupt"
	case errors.Is(err, stub.ErrStateExpired):
		return http.StatusGone, "state-expired"
	case errors.Is(err, stub.ErrCookieCorrupt):
		return http.StatusGone, "cookie-corrupt"
	case errors.Is(err, ErrCookieUser):
		return http.StatusBadRequest, "cookie-user"
	case errors.Is(err, stub.ErrBadRequest):
		return http.StatusBadRequest, "bad-request"
	}
	return http.StatusInternalServerError, "backend"
}

func failErr(w http.ResponseWriter, err error) {
	status, code := ErrorCode(err)
	fail(w, status, code, err.Error())
}
