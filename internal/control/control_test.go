package control

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// server is a control endpoint guarded by token: POST /echo answers its
// body, GET /fail answers 409, DELETE /gone answers 204.
func server(t *testing.T, token string) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		var v map[string]any
		if err := json.NewDecoder(r.Body).Decode(&v); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(v)
	})
	mux.HandleFunc("GET /fail", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"not now"}`, http.StatusConflict)
	})
	mux.HandleFunc("DELETE /gone", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Authorized(r, token) {
			http.Error(w, "missing or wrong token", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestClientTokenAccepted(t *testing.T) {
	addr := server(t, "s3cret")
	c := NewClient(addr, "s3cret", 5*time.Second)
	var out map[string]any
	if err := c.Do(context.Background(), http.MethodPost, "/echo", map[string]int{"n": 7}, &out); err != nil {
		t.Fatal(err)
	}
	if out["n"] != 7.0 {
		t.Fatalf("echo %v", out)
	}
	if err := c.Do(context.Background(), http.MethodDelete, "/gone", nil, &out); err != nil {
		t.Fatalf("204: %v", err)
	}
	err := c.Do(context.Background(), http.MethodGet, "/fail", nil, nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Status != http.StatusConflict || !strings.Contains(string(se.Body), "not now") {
		t.Fatalf("409: %v", err)
	}
}

func TestClientTokenRefused(t *testing.T) {
	addr := server(t, "s3cret")
	for _, tok := range []string{"", "guess", "s3cre", "S3CRET"} {
		err := NewClient(addr, tok, 5*time.Second).Do(context.Background(), http.MethodPost, "/echo", map[string]int{}, nil)
		var se *StatusError
		if !errors.As(err, &se) || se.Status != http.StatusUnauthorized {
			t.Errorf("token %q: %v, want 401", tok, err)
		}
	}
}

func TestAuthorized(t *testing.T) {
	for _, tc := range []struct {
		header, token string
		ok            bool
	}{
		{"Bearer abc", "abc", true},
		{"  Bearer abc  ", "abc", true},
		{"Bearer abd", "abc", false},
		{"abc", "abc", false},
		{"Basic abc", "abc", false},
		{"", "abc", false},
		{"Bearer ", "", false}, // no token configured: nothing is authorized
	} {
		r := httptest.NewRequest(http.MethodPost, "/control", nil)
		r.Header.Set("Authorization", tc.header)
		if got := Authorized(r, tc.token); got != tc.ok {
			t.Errorf("header %q token %q: %v, want %v", tc.header, tc.token, got, tc.ok)
		}
	}
}

// A node that is not there gives ErrNoAnswer, with the transport's error
// still reachable.
func TestClientNoAnswer(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	err := NewClient(addr, "x", 5*time.Second).Do(context.Background(), http.MethodGet, "/", nil, nil)
	var oe *net.OpError
	if !errors.Is(err, ErrNoAnswer) || !errors.As(err, &oe) {
		t.Fatalf("%v, want ErrNoAnswer wrapping a *net.OpError", err)
	}
}

func TestNewToken(t *testing.T) {
	a, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewToken()
	if len(a) != 32 || a == b {
		t.Fatalf("tokens %q %q: want two different 128-bit hex strings", a, b)
	}
}
