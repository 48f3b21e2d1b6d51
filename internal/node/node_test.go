package node

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A node without --listen is a bad configuration, not a server on some
// default address: addresses come from the backend's plan.
func TestRunNeedsListen(t *testing.T) {
	called := false
	Register("test-needs-listen", func(context.Context, Config) error { called = true; return nil })
	err := Run(context.Background(), "test-needs-listen", Config{Node: 1})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "--listen is required") {
		t.Fatalf("want ErrConfig naming --listen, got %v", err)
	}
	if called {
		t.Fatal("the kind ran without an address")
	}
	if err := Run(context.Background(), "test-needs-listen", Config{Node: 1, Listen: "host:1"}); err != nil || !called {
		t.Fatalf("with --listen: err %v, called %v", err, called)
	}
}
