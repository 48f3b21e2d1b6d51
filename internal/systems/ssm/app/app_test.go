package app

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/systems/ssm/brick"
	"github.com/faultbench/faultbench/internal/systems/ssm/stub"
)

func TestSessionVerify(t *testing.T) {
	v := NewSession("alice", 7, 100)
	if err := VerifySession(v, "alice", 7); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		user string
		seq  uint64
		want error
	}{
		"stale": {"alice", 8, ErrSessionStale},
		"ahead": {"alice", 6, ErrSessionAhead},
		"user":  {"bob", 7, ErrSessionWrongUser},
	} {
		if err := VerifySession(v, tc.user, tc.seq); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Every single-bit flip anywhere in the value is caught.
	for i := range v {
		for bit := range 8 {
			d := append([]byte(nil), v...)
			d[i] ^= 1 << bit
			if err := VerifySession(d, "alice", 7); err == nil {
				t.Fatalf("flip of byte %d bit %d not detected", i, bit)
			}
		}
	}
	if err := VerifySession(v[:len(v)-1], "alice", 7); !errors.Is(err, ErrSessionCorrupt) {
		t.Fatalf("truncated: %v", err)
	}
}

func FuzzParseSession(f *testing.F) {
	f.Add(NewSession("u", 1, 10))
	f.Add([]byte("FBSS1 user=u seq=1 size=0 crc=00000000\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSession(b)
		if err != nil {
			if !errors.Is(err, ErrSessionCorrupt) {
				t.Fatalf("error %v is not ErrSessionCorrupt", err)
			}
			return
		}
		if string(NewSession(s.User, s.Seq, s.Size)) != string(b) {
			t.Fatalf("accepted a value NewSession would not produce: %q", b)
		}
	})
}

type client struct {
	t testing.TB
	h http.Handler
}

func (c client) do(method, user, cookie, query string) *httptest.ResponseRecorder {
	c.t.Helper()
	r := httptest.NewRequest(method, "/session/"+user+query, nil)
	if cookie != "" {
		r.Header.Set(HeaderCookie, cookie)
	}
	w := httptest.NewRecorder()
	c.h.ServeHTTP(w, r)
	return w
}

// expectOK checks a 200 carries session seq of user and returns its cookie.
func (c client) expectOK(w *httptest.ResponseRecorder, user string, seq uint64) string {
	c.t.Helper()
	if w.Code != 200 {
		c.t.Fatalf("status %d %s: %s", w.Code, w.Header().Get(HeaderError), w.Body)
	}
	if err := VerifySession(w.Body.Bytes(), user, seq); err != nil {
		c.t.Fatal(err)
	}
	if got := w.Header().Get(HeaderSeq); got != strconv.FormatUint(seq, 10) {
		c.t.Fatalf("%s = %q, want %d", HeaderSeq, got, seq)
	}
	return w.Header().Get(HeaderCookie)
}

func (c client) expectErr(w *httptest.ResponseRecorder, status int, code string) {
	c.t.Helper()
	if w.Code != status || w.Header().Get(HeaderError) != code {
		c.t.Fatalf("got %d %q, want %d %q (%s)", w.Code, w.Header().Get(HeaderError), status, code, w.Body)
	}
}

// protocol runs the session protocol against one backend; restart returns
// the backend a restarted front end would have.
func protocol(t *testing.T, b Backend, restart func() Backend, survives bool) {
	cfg := DefaultConfig()
	c := client{t, Handler(b, cfg)}
	ck1 := c.expectOK(c.do("POST", "alice", "", ""), "alice", 1)
	c.expectOK(c.do("GET", "alice", ck1, ""), "alice", 1)
	ck2 := c.expectOK(c.do("POST", "alice", ck1, "?size=100"), "alice", 2)
	c.expectOK(c.do("GET", "alice", ck2, ""), "alice", 2)
	// The old cookie names a value that has been overwritten: the memory
	// and file backends find a value that fails the cookie's checksum, the
	// bricks find none under the old expiry. Both are 410.
	if w := c.do("GET", "alice", ck1, ""); w.Code != 410 {
		t.Fatalf("stale cookie: %d %s", w.Code, w.Body)
	}
	c.expectErr(c.do("GET", "bob", ck2, ""), 400, "cookie-user")
	c.expectErr(c.do("GET", "alice", ck2[:len(ck2)-2]+"AA", ""), 410, "cookie-corrupt")
	c.expectErr(c.do("GET", "alice", "", ""), 400, "missing-cookie")
	c.expectErr(c.do("GET", "al!ce", ck2, ""), 400, "bad-user")
	c.expectErr(c.do("POST", "alice", ck2, "?size=-1"), 400, "bad-size")
	c = client{t, Handler(restart(), cfg)}
	if survives {
		c.expectOK(c.do("GET", "alice", ck2, ""), "alice", 2)
	} else {
		c.expectErr(c.do("GET", "alice", ck2, ""), 410, "state-lost")
		c.expectErr(c.do("POST", "alice", ck2, ""), 410, "state-lost")
	}
}

func TestMemoryBackend(t *testing.T) {
	protocol(t, NewMemory(), func() Backend { return NewMemory() }, false)
}

func TestFileBackend(t *testing.T) {
	dir := t.TempDir()
	b, err := NewFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	protocol(t, b, func() Backend { b, _ := NewFile(dir); return b }, true)
}

func TestSSMBackend(t *testing.T) {
	var addrs []string
	for id := 1; id <= 3; id++ {
		cfg := brick.DefaultConfig()
		cfg.ID = uint16(id)
		b, err := brick.Start(cfg, "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		addrs = append(addrs, b.Addr())
	}
	newStub := func() Backend {
		cfg := stub.DefaultConfig()
		cfg.Bricks = addrs
		cfg.Timeout = 500 * time.Millisecond
		s, err := stub.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.WaitLive(ctx, 3); err != nil {
			t.Fatal(err)
		}
		return SSM{Stub: s}
	}
	// A restarted front end finds the sessions on the bricks.
	protocol(t, newStub(), newStub, true)
}

func TestErrorCodes(t *testing.T) {
	for err, want := range map[error]int{
		stub.ErrOverloaded: 503, stub.ErrTimeout: 503, stub.ErrUnavailable: 503,
		stub.ErrStateLost: 410, stub.ErrStateCorrupt: 410, stub.ErrStateExpired: 410, stub.ErrCookieCorrupt: 410,
		ErrCookieUser: 400, errors.New("disk on fire"): 500,
	} {
		if got, _ := ErrorCode(err); got != want {
			t.Errorf("%v: %d, want %d", err, got, want)
		}
	}
}

// TestUserAgainstBackends drives the protocol with User, the client half a
// workload driver uses, and checks its verdicts on good and bad answers.
func TestUserAgainstBackends(t *testing.T) {
	mem := NewMemory()
	h := Handler(mem, DefaultConfig())
	send := func(u *User) (string, *httptest.ResponseRecorder) {
		method, path, cookie := u.Next()
		r := httptest.NewRequest(method, path, nil)
		if cookie != "" {
			r.Header.Set(HeaderCookie, cookie)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return method, w
	}
	u := &User{Name: "erin"}
	var methods []string
	for range 6 {
		method, w := send(u)
		methods = append(methods, method)
		if v := u.Judge(method, w.Code, w.Header(), w.Body.Bytes()); v != VerdictOK {
			t.Fatalf("%s: %v (%d %s)", method, v, w.Code, w.Body)
		}
	}
	if got := strings.Join(methods, " "); got != "POST GET POST GET POST GET" || u.Seq() != 3 {
		t.Fatalf("sequence %q, seq %d", got, u.Seq())
	}
	// The front end restarts and loses its memory: the next request (a
	// POST with the cookie) is a data error and the user starts over with
	// a POST without cookie.
	h = Handler(NewMemory(), DefaultConfig())
	method, w := send(u)
	if v := u.Judge(method, w.Code, w.Header(), w.Body.Bytes()); v != VerdictDataError {
		t.Fatalf("after losing state: %s %v", method, v)
	}
	if m, _, c := u.Next(); m != "POST" || c != "" {
		t.Fatalf("did not start over: %s %q", m, c)
	}
	// A stale body (an older session) with status 200 is a data error.
	u2 := &User{Name: "erin"}
	method, w = send(u2)
	u2.Judge(method, w.Code, w.Header(), w.Body.Bytes())
	if v := u2.Judge("GET", 200, nil, NewSession("erin", 0, 10)); v != VerdictDataError {
		t.Fatalf("stale body: %v", v)
	}
	if v := u2.Judge("POST", 503, nil, nil); v != VerdictHTTPError || u2.Seq() != 0 {
		t.Fatalf("503 on POST: %v seq %d", v, u2.Seq())
	}
}
