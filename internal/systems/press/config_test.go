package press

import (
	"errors"
	"io"
	"strings"
	"testing"

	nodeprog "github.com/faultbench/faultbench/internal/node"
)

func TestConfigErrors(t *testing.T) {
	good := func() Config {
		c := DefaultConfig()
		c.Node, c.HTTPAddr, c.IntraAddr = 1, "127.0.0.1:1", "127.0.0.1:2"
		c.Peers = map[int]string{2: "127.0.0.1:3"}
		return c
	}
	if err := good().Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		edit func(*Config)
		want error
		says string
	}{
		{"bad mode", func(c *Config) { c.Mode = 9 }, ErrBadMode, "perf, ha, robust, via0, via3 or via5"},
		{"one node", func(c *Config) { c.Peers = nil }, ErrTooFewNodes, "at least 2"},
		{"self as peer", func(c *Config) { c.Peers[1] = "x:1" }, ErrConfig, "itself"},
		{"control without token", func(c *Config) { c.ControlAddr = "127.0.0.1:4" }, ErrConfig, "token"},
		{"tiny page", func(c *Config) { c.PageSize = 3 }, ErrConfig, "page size"},
		{"no http", func(c *Config) { c.HTTPAddr = "" }, ErrConfig, "http"},
	}
	for _, tc := range cases {
		c := good()
		tc.edit(&c)
		err := c.Validate()
		if !errors.Is(err, tc.want) || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want %v mentioning %q", tc.name, err, tc.want, tc.says)
		}
	}
	if _, err := ParseMode("fast"); !errors.Is(err, ErrBadMode) || !errors.Is(err, ErrConfig) {
		t.Errorf("ParseMode(fast) = %v", err)
	}
}

func TestConfigFromNode(t *testing.T) {
	nc := nodeprog.Config{Listen: "127.0.0.12:8080", Node: 2, Mode: "robust",
		Peers:   []string{"127.0.0.11:8080", "127.0.0.12:8080", "127.0.0.13:8080"},
		Options: map[string]string{"peer.3": "127.0.0.1:7000", "heartbeat": "50ms", "events": "none"}}
	cfg, err := ConfigFromNode(nc, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.IntraAddr != "127.0.0.12:9080" || cfg.Peers[1] != "127.0.0.11:9080" || cfg.Peers[3] != "127.0.0.1:7000" ||
		cfg.Heartbeat.Milliseconds() != 50 || cfg.Mode != Robust || len(cfg.Peers) != 2 {
		t.Fatalf("config %+v", cfg)
	}
	nc.Options["colour"] = "blue"
	if _, err := ConfigFromNode(nc, io.Discard, io.Discard); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "colour") {
		t.Fatalf("unknown option: %v", err)
	}
	nc.Mode = "fast"
	if _, err := ConfigFromNode(nc, io.Discard, io.Discard); !errors.Is(err, ErrBadMode) {
		t.Fatalf("bad mode: %v", err)
	}
	nc.Mode, nc.Peers = "ha", nc.Peers[:1]
	if _, err := ConfigFromNode(nc, io.Discard, io.Discard); !errors.Is(err, ErrTooFewNodes) {
		t.Fatalf("one node: %v", err)
	}
}
