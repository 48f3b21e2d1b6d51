package workload

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/record"
)

// echoHandler answers every request with a JSON document describing it:
// {"method", "path", "ctype", "body": <the request body as JSON, or null>}.
// /status/N answers status N; /big answers 100 kB.
func echoHandler(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	switch {
	case strings.HasPrefix(r.URL.Path, "/status/"):
		var code int
		_ = json.Unmarshal([]byte(strings.TrimPrefix(r.URL.Path, "/status/")), &code)
		w.WriteHeader(code)
		return
	case r.URL.Path == "/big":
		w.Write([]byte(`{"pad":"` + strings.Repeat("x", 100_000) + `","ok":true}`))
		return
	}
	var parsed any
	if json.Unmarshal(body, &parsed) != nil {
		parsed = nil
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Served-By", "echo")
	json.NewEncoder(w).Encode(map[string]any{"method": r.Method, "path": r.URL.Path, "ctype": r.Header.Get("Content-Type"), "body": parsed})
}

func driverFor(t *testing.T, specs []RequestSpec, mutate func(*DriverConfig)) *HTTPDriver {
	t.Helper()
	set, err := CompileRequests(specs)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DriverConfig{ConnectTimeout: 2 * time.Second, ResponseTimeout: 5 * time.Second, Keepalive: true, Requests: set, Seed: 7}
	if mutate != nil {
		mutate(&cfg)
	}
	d := NewHTTPDriver(cfg)
	t.Cleanup(func() { d.Close() })
	return d
}

func attempt(srv *httptest.Server) Attempt {
	host := strings.TrimPrefix(strings.TrimPrefix(srv.URL, "http://"), "https://")
	return Attempt{Scheduled: time.Now(), Addr: host, Host: host}
}

func TestRequestsAndChecks(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(echoHandler))
	defer srv.Close()
	post := RequestSpec{Name: "create", Method: "POST", Path: "/items/{{user}}/{{seq}}",
		Headers: map[string]string{"Content-Type": "application/json"},
		Body:    `{"id":{{seq}},"key":"{{base64}}k{{key zipf:100:1.1}}{{end}}","data":"{{payload 1000}}"}`}
	cases := []struct {
		name    string
		expect  ExpectSpec
		path    string
		outcome record.Outcome
		check   string
	}{
		{"all pass", ExpectSpec{Status: []int{200}, Headers: map[string]string{"Content-Type": "application/json"},
			HeaderPresent: []string{"X-Served-By"}, BodyContains: `"method":"POST"`, BodyRegex: `"path":"/items/3/\d+"`,
			JSON: map[string]string{"$.body.id": "{{seq}}", "$.ctype": "application/json", "$.method": "POST"}, MaxLatency: time.Minute},
			"", record.OK, ""},
		{"status", ExpectSpec{Status: []int{201}}, "", record.HTTPError, "create: status"},
		{"default status needs 2xx", ExpectSpec{}, "/status/503", record.HTTPError, "create: status"},
		{"expected non-2xx is ok", ExpectSpec{Status: []int{404}}, "/status/404", record.OK, ""},
		{"header equal", ExpectSpec{Headers: map[string]string{"X-Served-By": "other"}}, "", record.DataError, "create: header:X-Served-By"},
		{"header present", ExpectSpec{HeaderPresent: []string{"X-Missing"}}, "", record.DataError, "create: header:X-Missing"},
		{"contains", ExpectSpec{BodyContains: "nope"}, "", record.DataError, "create: body_contains"},
		{"regex", ExpectSpec{BodyRegex: `^\[`}, "", record.DataError, "create: body_regex"},
		{"json value", ExpectSpec{JSON: map[string]string{"$.body.id": "{{seq}}0"}}, "", record.DataError, "create: json:$.body.id"},
		{"json missing", ExpectSpec{JSON: map[string]string{"$.body.nothing": "1"}}, "", record.DataError, "create: json:$.body.nothing"},
		{"latency", ExpectSpec{MaxLatency: time.Nanosecond}, "", record.DataError, "create: max_latency"},
		{"truncated", ExpectSpec{JSON: map[string]string{"$.ok": "true"}}, "/big", record.DataError, "create: json:$.ok (body over max_body)"},
		{"big within bound", ExpectSpec{JSON: map[string]string{"$.ok": "true"}, BodyContains: "xxx"}, "/big?bound", record.OK, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := post
			spec.Expect = c.expect
			if c.path != "" {
				spec.Path = strings.TrimSuffix(c.path, "?bound")
			}
			d := driverFor(t, []RequestSpec{spec}, func(cfg *DriverConfig) {
				cfg.Client = 3
				cfg.MaxBody = 10_000
				if strings.HasSuffix(c.path, "?bound") {
					cfg.MaxBody = 200_000
				}
			})
			for range 3 { // three requests on one kept connection
				r := d.Do(context.Background(), attempt(srv))
				if r.Outcome != c.outcome || r.Check != c.check {
					t.Fatalf("outcome %v check %q, want %v %q (status %d)", r.Outcome, r.Check, c.outcome, c.check, r.Status)
				}
				if !strings.HasPrefix(r.Target, spec.Path[:2]) {
					t.Fatalf("target %q is not the rendered path", r.Target)
				}
			}
		})
	}
}

func TestRequestsWeighted(t *testing.T) {
	var gets, posts int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "GET" {
			gets++
		} else {
			posts++
		}
	}))
	defer srv.Close()
	d := driverFor(t, []RequestSpec{{Path: "/g", Weight: 1}, {Path: "/p", Body: "x", Weight: 3}}, func(c *DriverConfig) { c.Keepalive = false })
	for range 400 {
		if r := d.Do(context.Background(), attempt(srv)); r.Outcome != record.OK {
			t.Fatalf("outcome %v", r.Outcome)
		}
	}
	// Weight 3:1 over 400 draws: posts near 300; 200 is > 8σ away.
	if posts < 200 || gets < 40 {
		t.Fatalf("weights 1:3 gave %d GETs, %d POSTs", gets, posts)
	}
}

// writeCA writes srv's certificate as a PEM CA file.
func writeCA(t *testing.T, srv *httptest.Server) string {
	name := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(name, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(echoHandler))
	defer srv.Close()
	ca := writeCA(t, srv)
	spec := []RequestSpec{{Path: "/secure", Expect: ExpectSpec{JSON: map[string]string{"$.path": "/secure"}}}}
	cases := []struct {
		name    string
		tls     TLSSpec
		outcome record.Outcome
	}{
		{"ca file", TLSSpec{CAFile: ca, ServerName: "example.com"}, record.OK},
		{"insecure", TLSSpec{Insecure: true}, record.OK},
		{"system roots reject a test certificate", TLSSpec{}, record.ConnError},
		{"wrong server name", TLSSpec{CAFile: ca, ServerName: "wrong.invalid"}, record.ConnError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tc, err := LoadTLS(c.tls, "")
			if err != nil {
				t.Fatal(err)
			}
			d := driverFor(t, spec, func(cfg *DriverConfig) { cfg.TLS = tc })
			a := attempt(srv)
			r := d.Do(context.Background(), a)
			if r.Outcome != c.outcome {
				t.Fatalf("outcome %v (check %q), want %v", r.Outcome, r.Check, c.outcome)
			}
			if !r.End.After(a.Scheduled) {
				t.Fatal("the handshake must count in the latency")
			}
		})
	}
}

func TestTLSHandshakeToSilentServer(t *testing.T) {
	// A server that accepts but never answers the ClientHello: the
	// handshake runs out of connect time, so the user was never connected.
	release := make(chan struct{})
	defer close(release)
	s := newServer(t, func(c net.Conn) { <-release; c.Close() })
	tc, _ := LoadTLS(TLSSpec{Insecure: true}, "")
	d := driverFor(t, []RequestSpec{{Path: "/"}}, func(cfg *DriverConfig) { cfg.TLS, cfg.ConnectTimeout = tc, testConnect })
	a := Attempt{Scheduled: time.Now(), Addr: s.addr(), Host: s.addr()}
	r := d.Do(context.Background(), a)
	if r.Outcome != record.ConnAbort || !r.End.Equal(a.Scheduled.Add(testConnect)) {
		t.Fatalf("outcome %v at %v, want conn_abort at the connect deadline", r.Outcome, r.End.Sub(a.Scheduled))
	}
}

func TestLoadTLSErrors(t *testing.T) {
	dir := t.TempDir()
	notCert := filepath.Join(dir, "ca.pem")
	os.WriteFile(notCert, []byte("this is not a certificate\n"), 0o600)
	cases := []struct {
		spec TLSSpec
		key  string
		msg  string
	}{
		{TLSSpec{CAFile: notCert}, "ca_file", "holds no PEM certificate"},
		{TLSSpec{CAFile: filepath.Join(dir, "missing.pem")}, "ca_file", "no such file"},
		{TLSSpec{CertFile: notCert}, "cert_file", "needs both"},
		{TLSSpec{CertFile: notCert, KeyFile: notCert}, "cert_file", "client certificate"},
	}
	for _, c := range cases {
		_, err := LoadTLS(c.spec, "")
		var te *TLSError
		if !errors.As(err, &te) || te.Key != c.key || !strings.Contains(err.Error(), c.msg) || !errors.Is(err, ErrTLS) && c.msg != "no such file" {
			t.Errorf("LoadTLS(%+v) = %v, want a %s error containing %q", c.spec, err, c.key, c.msg)
		}
	}
}

func TestCompileRequestsErrors(t *testing.T) {
	specs := []RequestSpec{
		{Path: "/ok"},
		{Path: "/u/{{usr}}"},
		{Path: "nopath"},
		{Path: "/", Method: "GE T"},
		{Path: "/", Headers: map[string]string{"Host": "x"}},
		{Path: "/", Expect: ExpectSpec{JSON: map[string]string{"kvs[0]": "1"}}},
		{Path: "/", Expect: ExpectSpec{BodyRegex: "("}},
		{Path: "/", Body: "{{payload}}"},
		{Path: "/", Weight: -1},
		{Path: "/a b/{{seq}}"},
		{Path: "/", Headers: map[string]string{"X-A": "a\r\nInjected: 1"}},
	}
	_, err := CompileRequests(specs)
	want := []string{
		`requests[1].[path]: bad request: template line 1 col 6: unknown variable "usr"`,
		`requests[2].[path]`, `requests[3].[method]`, `requests[4].[headers Host]`,
		`requests[5].[expect json kvs[0]]: bad request: bad JSON path`,
		`requests[6].[expect body_regex]`, `requests[7].[body]`, `requests[8].[weight]`,
		`requests[9].[path]: bad request: path "/a b/1" holds a space`, `requests[10].[headers X-A]: bad request: header X-A renders a line break`,
	}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v\nlacks %q", err, w)
		}
	}
}

// TestRunRequests drives the generator end to end with workload.requests:
// every record carries the rendered path as its target and, when a check
// failed, the check's name; a har: trace replays its entries in order.
func TestRunRequests(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(echoHandler))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	cfg := Config{
		Rate: 300, Clients: 2, Seed: 3, Keepalive: true,
		Targets: []Target{{1, host}},
		Requests: []RequestSpec{
			{Name: "put", Path: "/kv/{{key uniform:10}}", Method: "PUT", Body: `{"v":{{seq}}}`,
				Expect: ExpectSpec{JSON: map[string]string{"$.body.v": "{{seq}}"}}},
			{Name: "bad", Path: "/status/500"},
		},
	}
	sink := &sliceSink{}
	if err := Run(context.Background(), cfg, time.Now(), 300*time.Millisecond, sink); err != nil {
		t.Fatal(err)
	}
	var puts, bads int
	for _, r := range sink.sorted() {
		switch {
		case strings.HasPrefix(r.Target, "/kv/") && r.Outcome == record.OK && r.Check == "":
			puts++
		case r.Target == "/status/500" && r.Outcome == record.HTTPError && r.Check == "bad: status":
			bads++
		default:
			t.Fatalf("unexpected record %+v", r)
		}
	}
	if puts == 0 || bads == 0 {
		t.Fatalf("%d puts, %d bads: want both", puts, bads)
	}

	har := filepath.Join(t.TempDir(), "s.har")
	os.WriteFile(har, []byte(strings.ReplaceAll(sampleHAR, "https://shop.example/items", "http://x/status/200")), 0o600)
	cfg.Requests, cfg.Trace = nil, "har:"+har
	sink = &sliceSink{}
	if err := Run(context.Background(), cfg, time.Now(), 200*time.Millisecond, sink); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range sink.sorted() {
		seen[r.Target+" "+r.Outcome.String()+" "+r.Check] = true
	}
	// The echo answers /cart with 200 where the HAR recorded 201.
	if !seen["/status/200?page=2 ok "] || !seen["/cart http_error POST /cart: status"] || len(seen) != 2 {
		t.Fatalf("har replay records: %v", seen)
	}
}

func TestValidateRequestsConfig(t *testing.T) {
	base := Config{Rate: 10, Targets: []Target{{1, "127.0.0.1:1"}}, Requests: []RequestSpec{{Path: "/"}}}
	cases := []struct {
		mutate func(*Config)
		want   string
	}{
		{func(c *Config) {}, ""},
		{func(c *Config) { c.Trace = "zipf:10:1" }, "give requests or a trace"},
		{func(c *Config) { c.Driver = "ssm" }, "for driver http"},
		{func(c *Config) { c.Requests = []RequestSpec{{Path: "/{{nope}}"}} }, `unknown variable "nope"`},
		{func(c *Config) { c.MaxBody = -1 }, "max_body -1"},
		{func(c *Config) { c.Requests, c.Trace = nil, "har:x.har" }, ""},
		{func(c *Config) { c.TLS = &TLSSpec{}; c.Driver = "session" }, "tls is for driver http"},
	}
	for _, c := range cases {
		cfg := base
		c.mutate(&cfg)
		err := Validate(WithDefaults(cfg))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Validate: %v, want %q", err, c.want)
		}
	}
}
