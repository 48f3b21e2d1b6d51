package lb

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/node"
)

func TestPoolRiseFallAndRoundRobin(t *testing.T) {
	p := NewPool(2, 2)
	p.Resolved([]string{"a:1", "b:1"})
	if _, ok := p.Next(""); ok {
		t.Fatal("a backend never checked is up")
	}
	p.Checked("a:1", true)
	if len(p.Up()) != 0 {
		t.Fatal("up after one check with rise 2")
	}
	p.Checked("a:1", true)
	p.Checked("b:1", true)
	p.Checked("b:1", true)
	var got []string
	for range 4 {
		a, _ := p.Next("")
		got = append(got, a)
	}
	if strings.Join(got, " ") != "a:1 b:1 a:1 b:1" {
		t.Errorf("round robin %v", got)
	}
	p.Checked("a:1", false)
	if !slices.Equal(p.Up(), []string{"a:1", "b:1"}) {
		t.Errorf("down after one failure with fall 2: %v", p.Up())
	}
	p.Checked("a:1", false)
	if !slices.Equal(p.Up(), []string{"b:1"}) {
		t.Errorf("up %v after two failures of a", p.Up())
	}
	// A failed connection takes a backend down at once; avoid skips one.
	p.Failed("b:1")
	if _, ok := p.Next(""); ok {
		t.Error("a backend whose connection failed is still picked")
	}
	p.Checked("a:1", true)
	p.Checked("a:1", true)
	if a, ok := p.Next("a:1"); ok {
		t.Errorf("Next avoiding the only healthy backend gave %s", a)
	}
	// A replica gone from DNS is forgotten; a new one starts down.
	p.Resolved([]string{"a:1", "c:1"})
	if !slices.Equal(p.Up(), []string{"a:1"}) {
		t.Errorf("up %v after b went and c came", p.Up())
	}
}

func backend(t *testing.T, name string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, name+" "+r.URL.Path)
	}))
	t.Cleanup(s.Close)
	return s
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

// Two replicas behind one name, as a compose service's: requests
// alternate; a replica that stops accepting is skipped without an error
// for the client (the retry), and with none left the answer is 503.
func TestBalancerFollowsItsReplicas(t *testing.T) {
	one, two := backend(t, "one"), backend(t, "two")
	addrs := []string{one.Listener.Addr().String(), two.Listener.Addr().String()}
	// Both replicas listen on 127.0.0.1, each on its own port: two
	// backends, each resolving to itself.
	b := New(Config{Backends: addrs, Health: "/health", Interval: time.Second, Timeout: time.Second, Rise: 1, Fall: 1})
	b.resolve = func(_ context.Context, host string) ([]string, error) { return []string{host}, nil }
	b.Round(context.Background())
	if len(b.Pool().Up()) != 2 {
		t.Fatalf("up after a round: %v", b.Pool().Up())
	}
	var seen []string
	for range 4 {
		code, body := get(t, b, "/p/7")
		if code != 200 {
			t.Fatalf("status %d: %s", code, body)
		}
		seen = append(seen, body)
	}
	if strings.Join(seen, ",") != "one /p/7,two /p/7,one /p/7,two /p/7" {
		t.Errorf("answers %v", seen)
	}
	one.Close()
	for range 3 {
		if code, body := get(t, b, "/p/1"); code != 200 || body != "two /p/1" {
			t.Errorf("with one replica gone: %d %q", code, body)
		}
	}
	if !slices.Equal(b.Pool().Up(), []string{addrs[1]}) {
		t.Errorf("up %v: the refused replica is still up", b.Pool().Up())
	}
	two.Close()
	b.Round(context.Background())
	if code, _ := get(t, b, "/p/1"); code != http.StatusServiceUnavailable {
		t.Errorf("no replica: status %d, want 503", code)
	}
}

func TestConfigOf(t *testing.T) {
	cfg, err := ConfigOf(node.Config{Peers: []string{"web:8000"}, Options: map[string]string{"interval": "250ms", "fall": "3"}})
	if err != nil || cfg.Interval.String() != "250ms" || cfg.Fall != 3 || cfg.Health != "/health" || cfg.Rise != 1 {
		t.Errorf("ConfigOf = %+v, %v", cfg, err)
	}
	for _, c := range []node.Config{
		{},
		{Peers: []string{"web"}},
		{Peers: []string{"web:8000"}, Options: map[string]string{"interval": "soon"}},
		{Peers: []string{"web:8000"}, Options: map[string]string{"rise": "0"}},
		{Peers: []string{"web:8000"}, Options: map[string]string{"weight": "2"}},
	} {
		if _, err := ConfigOf(c); !errors.Is(err, node.ErrConfig) {
			t.Errorf("ConfigOf(%+v) = %v, want a config error", c, err)
		}
	}
}

// Serve balances on its listen address until its context ends.
func TestServe(t *testing.T) {
	one := backend(t, "one")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, node.Config{Listen: addr, Peers: []string{one.Listener.Addr().String()}, Options: map[string]string{"interval": "10ms"}})
	}()
	var body string
	for try := 0; try < 500 && body != "one /health"; try++ {
		time.Sleep(5 * time.Millisecond)
		if resp, err := http.Get("http://" + addr + "/health"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
		}
	}
	if body != "one /health" {
		t.Errorf("through the balancer: %q", body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}
