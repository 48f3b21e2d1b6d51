package local

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/node"
)

// mute listens on --listen, accepts, and never answers: a node whose
// readiness check times out on every try.
func mute(ctx context.Context, cfg node.Config) error {
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	go func() { <-ctx.Done(); ln.Close() }()
	var held []net.Conn
	for {
		c, err := ln.Accept()
		if err != nil {
			return nil
		}
		held = append(held, c) // never answered, closed at exit
	}
}

func init() { node.Register("mute", mute) }

func TestReadyTimeoutSaysSoInOneLine(t *testing.T) {
	spec := Spec{System: "mute", Nodes: 1, Dir: t.TempDir(), ReadyTimeout: 1500 * time.Millisecond,
		StopGrace: 200 * time.Millisecond, Executable: os.Args[0], FirstHost: 41}
	_, err := Start(context.Background(), spec, nil)
	if err == nil {
		t.Fatal("a node that never answers started")
	}
	msg := err.Error()
	for _, want := range []string{"node 1: not ready", "GET http://127.0.0.41:", "/health", "within 1.5s", "last try: no answer within 1s"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "\n") || strings.Contains(msg, "Client.Timeout") || strings.Contains(msg, "deadline exceeded") {
		t.Errorf("error is not one plain line: %q", msg)
	}

	// Nothing listening: the last try says refused.
	_, refused := net.Dial("tcp", "127.0.0.1:1")
	if got := lastTry(refused); !strings.Contains(got, "refused") {
		t.Errorf("refused: %q", got)
	}
}
