package ssm

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/systems/ssm/app"
	"github.com/faultbench/faultbench/internal/systems/ssm/stub"
)

// TestBitflipTargets is deliverable 5's bitflip in a stored value or in a
// structure (Ling, Kiciman and Fox 2004, §5.6) through the nodes' real control endpoints: for
// each target, a flip in one copy of a session leaves it readable and
// verified (the stub takes the other copy), and a flip in every copy the
// cookie names makes the read a 410 — never a 200 with damaged data.
func TestBitflipTargets(t *testing.T) {
	bricks, appAddr, stop := startNodes(t, map[string]string{"state_size": "1024"})
	do := func(method, user, cookie string) (int, http.Header, []byte) {
		t.Helper()
		for range 100 { // 503 until the stub has heard the bricks' beacons
			req, _ := http.NewRequest(method, "http://"+appAddr+"/session/"+user, nil)
			if cookie != "" {
				req.Header.Set(app.HeaderCookie, cookie)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 503 {
				return resp.StatusCode, resp.Header, body
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("%s %s: 503 for a second", method, user)
		return 0, nil, nil
	}
	flip := func(brick uint16, target string) {
		t.Helper()
		controlPost(t, bricks[brick-1], fmt.Sprintf(`{"action":"bitflip","target":%q,"which":"latest"}`, target))
	}
	for _, tc := range []struct{ target, allDamaged string }{
		{"value", "state-corrupt"},
		{"checksum", "state-corrupt"},
		{"expiry", "state-corrupt"}, // the entry's guard finds it
		{"key", "state-lost"},       // filed under another key: unreachable
	} {
		user := "u-" + tc.target
		code, hdr, body := do("POST", user, "")
		if code != 200 || app.VerifySession(body, user, 1) != nil {
			t.Fatalf("%s: POST %d %s", tc.target, code, hdr.Get(app.HeaderError))
		}
		cookie := hdr.Get(app.HeaderCookie)
		ck, err := stub.ParseCookie(cookie)
		if err != nil || len(ck.Bricks) != 2 {
			t.Fatalf("%s: cookie %+v %v", tc.target, ck, err)
		}
		// The session was the last write on every brick it went to, so
		// "latest" damages its copy there.
		flip(ck.Bricks[0], tc.target)
		for range 3 {
			code, hdr, body = do("GET", user, cookie)
			if code != 200 || app.VerifySession(body, user, 1) != nil {
				t.Fatalf("%s in one copy: GET %d %s, want the other copy", tc.target, code, hdr.Get(app.HeaderError))
			}
		}
		flip(ck.Bricks[1], tc.target)
		code, hdr, _ = do("GET", user, cookie)
		if code != 410 || hdr.Get(app.HeaderError) != tc.allDamaged {
			t.Fatalf("%s in every copy: GET %d %q, want 410 %s", tc.target, code, hdr.Get(app.HeaderError), tc.allDamaged)
		}
	}
	stop()
}
