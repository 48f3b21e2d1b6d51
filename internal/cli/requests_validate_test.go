package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateRequests: a template that does not parse, a JSON path that
// cannot match, a CA file that is not a certificate and a HAR file that is
// not HAR are bad input naming file:line and key, before anything runs.
func TestValidateRequests(t *testing.T) {
	cases := []struct {
		name     string
		workload string
		files    map[string]string
		want     string
	}{
		{"unknown template variable", `requests: [{path: "/u/{{usr}}"}]`,
			nil, `:3: workload.requests[0].path: bad request: template line 1 col 6: unknown variable "usr"`},
		{"unclosed block", `requests: [{path: /, body: "{{base64}}x"}]`,
			nil, `:3: workload.requests[0].body: bad request: template line 1 col 1: block opened here has no {{end}}`},
		{"JSON path without $", `requests: [{path: /, expect: {json: {"kvs[0]": 1}}}]`,
			nil, `:3: workload.requests[0].expect.json.kvs[0]: bad request: bad JSON path "kvs[0]" at column 1`},
		{"CA file not a certificate", `requests: [{path: /}], tls: {ca_file: ca.pem}`,
			map[string]string{"ca.pem": "hello\n"}, `:3: workload.tls.ca_file: bad tls: `},
		{"HAR not HAR", `trace: "har:x.har"`,
			map[string]string{"x.har": "{\"log\": {\"entries\": [\n{\"request\": {\"method\": \"GET\", \"url\": \"nope\"}}]}}"},
			`:3: workload.trace: x.har:2: not a usable HAR file: entry 1: request.url "nope" is not an absolute URL`},
		{"requests and trace", `trace: "zipf:10:1", requests: [{path: /}]`, nil, `:3: workload.trace: give requests or a trace, not both`},
		{"requests for the ssm driver", `driver: ssm, requests: [{path: /}]`, nil, `:3: workload.driver: requests, tls and max_body are for driver http`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "s.yaml")
			if err := os.WriteFile(path, fmt.Appendf(nil, validScenario, "rate: 50, window: 1s, "+tc.workload, ""), 0o644); err != nil {
				t.Fatal(err)
			}
			for name, body := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, stderr, code := run(t, "validate", path)
			if code != ExitBadInput || !strings.Contains(stderr, path+tc.want) {
				t.Fatalf("validate: exit %d, stderr:\n%s\nwant exit %d and %q", code, stderr, ExitBadInput, path+tc.want)
			}
		})
	}
}
