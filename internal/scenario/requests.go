package scenario

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// Request is one entry of workload.requests (docs/real-services.md): a
// templated HTTP request and what its answer must satisfy. Templates
// (path, header values, body, expect.json values) use reqtmpl's syntax;
// cli's validate parses them and names file:line for each error.
type Request struct {
	Name    string            `yaml:"name,omitempty"`   // names its checks in summary.json (default "METHOD PATH")
	Weight  float64           `yaml:"weight,omitempty"` // share of attempts relative to the others (default 1)
	Method  string            `yaml:"method,omitempty"` // default GET, POST with a body
	Path    string            `yaml:"path"`
	Headers map[string]string `yaml:"headers,omitempty"`
	Body    string            `yaml:"body,omitempty"`
	Expect  *Expect           `yaml:"expect,omitempty"`
}

// Expect is a request's expectations; each is one named check. Without
// status, any 2xx passes. MaxLatency is not scaled by --time-scale: it is
// the service's promise, not the experiment's length.
type Expect struct {
	Status        []int             `yaml:"status,omitempty,flow"`
	Headers       map[string]string `yaml:"headers,omitempty"`        // header equals the value
	HeaderPresent []string          `yaml:"header_present,omitempty"` // header is present
	BodyContains  string            `yaml:"body_contains,omitempty"`
	BodyRegex     string            `yaml:"body_regex,omitempty"`
	JSON          map[string]Scalar `yaml:"json,omitempty"` // JSON path -> expected value (a template)
	MaxLatency    Duration          `yaml:"max_latency,omitempty"`
}

// TLS is workload.tls: the targets speak HTTPS.
type TLS struct {
	CAFile     string `yaml:"ca_file,omitempty"`
	CertFile   string `yaml:"cert_file,omitempty"`
	KeyFile    string `yaml:"key_file,omitempty"`
	Insecure   bool   `yaml:"insecure,omitempty"`
	ServerName string `yaml:"server_name,omitempty"`
}

// Scalar is any YAML scalar read as its text, so that an expected JSON
// value may be written 42, true or "text" alike.
type Scalar string

// UnmarshalYAML takes any scalar's text.
func (s *Scalar) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &fieldError{line: n.Line, msg: "want a value (text, number or true/false), not a list or mapping"}
	}
	*s = Scalar(n.Value)
	return nil
}

// validateRequests checks what needs no parser of the workload package:
// the parsers (templates, JSON paths, regexes, the TLS and HAR files) run
// in cli's check, which can name file:line for each.
func (sc *Scenario) validateRequests(bad func(path []any, format string, args ...any)) {
	w := sc.Workload
	if len(w.Requests) > 0 || w.TLS != nil || w.MaxBody != 0 {
		if w.Driver != "http" {
			bad([]any{"workload", "driver"}, "requests, tls and max_body are for driver http, not %s", w.Driver)
		}
	}
	if len(w.Requests) > 0 && w.Trace != "" {
		bad([]any{"workload", "trace"}, "give requests or a trace, not both: the requests choose what to send (%s)", w.Trace)
	}
	if w.MaxBody < 0 || w.MaxBody > 1<<30 {
		bad([]any{"workload", "max_body"}, "%d: want the response bytes kept for checks, 1 to %d (default 1 MiB)", w.MaxBody, 1<<30)
	}
	for i, r := range w.Requests {
		if r.Path == "" {
			bad([]any{"workload", "requests", i}, "request %d has no path (e.g. path: /items/{{seq}})", i+1)
		}
	}
	if t := w.TLS; t != nil && (t.CertFile == "") != (t.KeyFile == "") {
		bad([]any{"workload", "tls"}, "a client certificate needs both cert_file and key_file")
	}
}

// String is for messages.
func (r Request) String() string { return fmt.Sprintf("%s %s", r.Method, r.Path) }
