package app

import (
	"net/http"
	"strconv"
)

// Verdict is how a client judges one response of the session protocol; a
// workload driver maps it onto its outcomes.
type Verdict int

// Verdicts.
const (
	VerdictOK        Verdict = iota // 200 and the body is exactly the session expected
	VerdictDataError                // 410, or a 200 that fails VerifySession: stale, lost or corrupt
	VerdictHTTPError                // any other status (503 when shedding load, 400, 500)
)

func (v Verdict) String() string {
	switch v {
	case VerdictOK:
		return "ok"
	case VerdictDataError:
		return "data_error"
	}
	return "http_error"
}

// User is one emulated user of the session protocol, the client side of
// docs/ssm.md's rules: it says what to send next (a POST to start or
// modify the session, then alternately GET and POST — Ling, Kiciman and Fox's (2004)
// "hyperactive users") and judges each answer. A User makes one request at
// a time and is not safe for concurrent use; a driver keeps a pool of them.
type User struct {
	Name   string // must satisfy ValidUser
	cookie string
	seq    uint64
	getNow bool
}

// Next returns the request to send: method, path (with query) and the
// value for the X-Session-Cookie header ("" for none).
func (u *User) Next() (method, path, cookie string) {
	if u.cookie == "" || !u.getNow {
		return http.MethodPost, "/session/" + u.Name, u.cookie
	}
	return http.MethodGet, "/session/" + u.Name, u.cookie
}

// Judge classifies the response to the request Next returned and advances
// the user: after an ok POST it keeps the new cookie and sequence number;
// after a POST that was not ok it starts over (the stored value is unknown);
// after a 410 it starts over too (the session is gone).
func (u *User) Judge(method string, status int, header http.Header, body []byte) Verdict {
	switch {
	case status == http.StatusOK:
		want := u.seq
		if method == http.MethodPost {
			want++
		}
		if VerifySession(body, u.Name, want) != nil {
			u.reset()
			return VerdictDataError
		}
		if method == http.MethodPost {
			u.cookie, u.seq = header.Get(HeaderCookie), want
			if got := header.Get(HeaderSeq); got != strconv.FormatUint(want, 10) || u.cookie == "" {
				u.reset()
				return VerdictDataError
			}
		}
		u.getNow = method == http.MethodPost
		return VerdictOK
	case status == http.StatusGone:
		u.reset()
		return VerdictDataError
	default:
		if method == http.MethodPost {
			u.reset()
		}
		return VerdictHTTPError
	}
}

// Abandon records that the request Next returned got no response at all
// (connection error, timeout). After a POST the stored value is unknown,
// so the user starts over; after a GET nothing changes.
func (u *User) Abandon(method string) {
	if method == http.MethodPost {
		u.reset()
	}
}

// Seq is the sequence number of the last session the user wrote (0: none).
func (u *User) Seq() uint64 { return u.seq }

func (u *User) reset() { u.cookie, u.seq, u.getNow = "", 0, false }
