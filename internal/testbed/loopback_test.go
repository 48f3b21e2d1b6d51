package testbed_test

import (
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoLoopbackLiteralOutsideLocal keeps addresses where they belong:
// only the local backend (internal/testbed/local) may spell a loopback
// address in code; everything else takes hosts from the backend's plan
// (testbed.Plan), so another backend can put nodes elsewhere. Comments,
// tests and test-helper packages (a directory named *test, as
// net/http/httptest: internal/live/livetest starts a Prometheus on
// loopback for tests) are not code here. Neither is bench/: its programs
// start their peers (nginx, redis, wrk) on loopback on purpose, so that a
// benchmark can never send its load anywhere else.
func TestNoLoopbackLiteralOutsideLocal(t *testing.T) {
	root := filepath.Join("..", "..")
	allowed := filepath.Join(root, "internal", "testbed", "local") + string(filepath.Separator)
	files := 0
	for _, top := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path != root && strings.HasSuffix(d.Name(), "test") {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasPrefix(path, allowed) {
				return nil
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files++
			fset := token.NewFileSet()
			var s scanner.Scanner
			s.Init(fset.AddFile(path, -1, len(src)), src, nil, 0) // comments skipped
			// the two tokens before this one, to see net.IPv4 ( 127
			var last [2]string
			for {
				pos, tok, lit := s.Scan()
				if tok == token.EOF {
					break
				}
				if (tok == token.STRING || tok == token.CHAR) && strings.Contains(lit, "127.0.0.") && !proseExample(lit) {
					t.Errorf("%s: loopback literal %s outside internal/testbed/local: take the host from the backend's plan (testbed.Plan)", fset.Position(pos), lit)
				}
				if tok == token.INT && lit == "127" && last == [2]string{"IPv4", "("} {
					t.Errorf("%s: loopback address net.IPv4(127, ...) outside internal/testbed/local: take the host from the backend's plan (testbed.Plan)", fset.Position(pos))
				}
				text := lit
				if text == "" {
					text = tok.String()
				}
				last = [2]string{last[1], text}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 50 {
		t.Fatalf("scanned only %d files under %s: wrong root?", files, root)
	}
}

// proseExample reports whether every loopback address in lit is an example
// in a help or error text ("e.g. 127.0.0.1:9464", "use 127.0.0.1:PORT"),
// which names no host the code dials or listens on.
func proseExample(lit string) bool {
	rest := lit
	for {
		i := strings.Index(rest, "127.0.0.")
		if i < 0 {
			return true
		}
		before := rest[:i]
		if !strings.HasSuffix(before, "e.g. ") && !strings.HasSuffix(before, "e.g. http://") && !strings.HasSuffix(before, "use ") {
			return false
		}
		rest = rest[i+len("127.0.0."):]
	}
}
