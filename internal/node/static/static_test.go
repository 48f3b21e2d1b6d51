package static

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/faultbench/faultbench/internal/node"
	"github.com/faultbench/faultbench/internal/pageset"
)

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(Handler(node.Config{Pages: 10, PageSize: 1000}))
	defer srv.Close()
	get := func(path string) (int, []byte) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if code, _ := get("/health"); code != 200 {
		t.Fatalf("/health: %d", code)
	}
	code, body := get("/p/9")
	if code != 200 || !pageset.Verify("/p/9", body) {
		t.Fatalf("/p/9: %d, verified %v", code, pageset.Verify("/p/9", body))
	}
	if code, _ := get("/p/10"); code != 404 {
		t.Fatalf("/p/10: %d, want 404", code)
	}
}
