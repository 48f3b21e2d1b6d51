package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/record"
)

// TestHTTPPostJSONExample runs examples/http-post-json.yaml against
// Debian's nginx: templated POSTs and GETs whose answers are checked.
// Every answer must pass its content checks (nginx echoes what each
// request sent), and the only failures the app-hang may cause are late
// answers, counted per check in summary.json.
func TestHTTPPostJSONExample(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nginx")
	}
	if _, err := exec.LookPath("nginx"); err != nil {
		t.Skip("nginx is not installed (apt-get install nginx-light); CI installs it")
	}
	dir := filepath.Join(t.TempDir(), "out")
	if _, stderr, code := run(t, "run", "../../examples/http-post-json.yaml", "--time-scale", "0.5", "--quiet", "-o", dir); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	okBy := map[string]int{}
	err := record.ReadRequests(dir, func(r record.Request) error {
		kind := "read"
		if strings.Count(r.Target, "/") == 4 { // /api/items/USER/SEQ
			kind = "create"
		}
		switch {
		case r.Outcome == record.OK:
			okBy[kind]++
		case r.Check != "" && r.Check != "create: max_latency":
			t.Errorf("check %q failed (%s %s): nginx echoes what was sent, only lateness may fail", r.Check, r.Outcome, r.Target)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if okBy["create"] == 0 || okBy["read"] == 0 {
		t.Fatalf("ok answers by request: %v, want both", okBy)
	}
	body, err := os.ReadFile(filepath.Join(dir, record.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var s analysis.Summary
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatal(err)
	}
	if s.Phases["fault"].CheckFailures["create: max_latency"] == 0 {
		t.Fatalf("the 1.5 s hang of node 1 left no late POST in the fault phase: %+v", s.Phases["fault"].CheckFailures)
	}
}

// TestHTTPPostJSONTLSExample validates and runs
// examples/http-post-json-tls.yaml: every nginx node makes its own
// self-signed certificate with openssl at start, the clients accept it
// (tls.insecure) and pay a handshake per request (keepalive: false).
// Every answer must pass its content checks over TLS, as over plain HTTP.
func TestHTTPPostJSONTLSExample(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nginx")
	}
	for _, bin := range []string{"nginx", "openssl"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed (apt-get install nginx-light openssl); CI installs them", bin)
		}
	}
	body, err := os.ReadFile("../../examples/http-post-json-tls.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// A port of the test's own on both nodes' hosts, so parallel suites
	// and a developer's nginx do not collide.
	port := freePort(t, "127.0.0.11", "127.0.0.12")
	text := strings.Replace(string(body), "port: 18153", "port: "+port, 1)
	if !strings.Contains(text, "port: "+port) {
		t.Fatal("the example no longer has the port this test replaces")
	}
	p := filepath.Join(t.TempDir(), "http-post-json-tls.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := run(t, "validate", p); code != ExitOK {
		t.Fatalf("validate: exit %d: %s", code, stderr)
	}
	dir := filepath.Join(t.TempDir(), "out")
	if _, stderr, code := run(t, "run", p, "--time-scale", "0.5", "--quiet", "-o", dir); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	okBy := map[string]int{}
	err = record.ReadRequests(dir, func(r record.Request) error {
		kind := "read"
		if strings.Count(r.Target, "/") == 4 { // /api/items/USER/SEQ
			kind = "create"
		}
		switch {
		case r.Outcome == record.OK:
			okBy[kind]++
		case r.Check != "" && r.Check != "create: max_latency":
			t.Errorf("check %q failed (%s %s): nginx echoes what was sent, only lateness may fail", r.Check, r.Outcome, r.Target)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if okBy["create"] == 0 || okBy["read"] == 0 {
		t.Fatalf("ok answers by request over TLS: %v, want both", okBy)
	}
	raw, err := os.ReadFile(filepath.Join(dir, record.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var s analysis.Summary
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	// Before the fault every handshake succeeded: a refused certificate
	// would be a conn_error in the warm-up.
	if w := s.Phases["warmup"]; w.Attempts == 0 || w.Outcomes["conn_error"] != 0 {
		t.Errorf("warm-up: %d attempts, %d conn_error: want attempts and no failed handshake", w.Attempts, w.Outcomes["conn_error"])
	}
}
