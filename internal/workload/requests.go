package workload

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/reqtmpl"
)

// RequestSpec is one entry of workload.requests (docs/real-services.md):
// what to send and what the answer must look like. Path, header values,
// body and JSON expectations are reqtmpl templates.
type RequestSpec struct {
	Name    string            // names the request's checks in summary.json; default "METHOD PATH"
	Weight  float64           // relative share of attempts (default 1)
	Method  string            // default GET, or POST when there is a body
	Path    string            // template; must render to a path starting with /
	Headers map[string]string // name -> value template
	Body    string            // template
	Expect  ExpectSpec
}

// ExpectSpec is what a response must satisfy; each item is one named check.
type ExpectSpec struct {
	Status        []int             // allowed statuses; empty means any 2xx
	Headers       map[string]string // header must equal this value
	HeaderPresent []string          // header must be present
	BodyContains  string            // body must contain this text
	BodyRegex     string            // body must match (RE2 syntax)
	JSON          map[string]string // JSON path -> expected value template (see MatchJSON)
	MaxLatency    time.Duration     // latency from the scheduled time at most this
}

// ErrRequests is wrapped by every error CompileRequests returns.
var ErrRequests = errors.New("bad request")

// RequestError locates a CompileRequests error: the request's index and
// the key below it (e.g. "body", "expect.json.$.id"), so the scenario can
// name file:line.
type RequestError struct {
	Index int
	Key   []any // key path below the request, e.g. {"expect", "json", "$.id"}
	Err   error
}

func (e *RequestError) Error() string {
	return fmt.Sprintf("requests[%d].%v: %v", e.Index, e.Key, e.Err)
}

func (e *RequestError) Unwrap() error { return e.Err }

// RequestSet is a compiled workload.requests list (or a HAR file's
// entries): read-only, shared by every client.
type RequestSet struct {
	reqs     []compiledRequest
	cum      []float64 // cumulative weights, for a weighted draw
	sequence bool      // replay in order (HAR) instead of drawing by weight
}

type compiledRequest struct {
	name    string
	method  string
	path    *reqtmpl.Template
	headers []compiledHeader
	body    *reqtmpl.Template
	expect  []check
}

type compiledHeader struct {
	name  string
	value *reqtmpl.Template
}

const (
	maxRequests   = 10_000
	maxHAREntries = 1_000_000
)

// CompileRequests parses every template, regex and JSON path of specs.
// Errors are *RequestError, joined, each wrapping ErrRequests.
func CompileRequests(specs []RequestSpec) (*RequestSet, error) {
	if len(specs) > maxRequests {
		return nil, fmt.Errorf("%w: %d requests, at most %d", ErrRequests, len(specs), maxRequests)
	}
	set := &RequestSet{}
	var errs []error
	total := 0.0
	for i, s := range specs {
		c, err := compileRequest(s)
		for _, e := range err {
			e.Index = i
			errs = append(errs, e)
		}
		w := s.Weight
		if w == 0 {
			w = 1
		}
		if !(w > 0 && w < 1e9) {
			errs = append(errs, &RequestError{Index: i, Key: []any{"weight"}, Err: fmt.Errorf("%w: weight %v must be above 0", ErrRequests, s.Weight)})
		}
		total += w
		set.reqs = append(set.reqs, c)
		set.cum = append(set.cum, total)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(set.reqs) == 0 {
		return nil, fmt.Errorf("%w: the list is empty", ErrRequests)
	}
	return set, nil
}

func compileRequest(s RequestSpec) (compiledRequest, []*RequestError) {
	var errs []*RequestError
	bad := func(err error, key ...any) {
		if !errors.Is(err, ErrRequests) {
			err = fmt.Errorf("%w: %w", ErrRequests, err)
		}
		errs = append(errs, &RequestError{Key: key, Err: err})
	}
	tmpl := func(src string, key ...any) *reqtmpl.Template {
		t, err := reqtmpl.Parse(src)
		if err != nil {
			bad(err, key...)
		}
		return t
	}
	c := compiledRequest{method: s.Method, path: tmpl(s.Path, "path"), body: tmpl(s.Body, "body")}
	if c.method == "" {
		c.method = "GET"
		if s.Body != "" {
			c.method = "POST"
		}
	}
	if !isToken(c.method) {
		bad(fmt.Errorf("method %q is not an HTTP method token", s.Method), "method")
	}
	if !strings.HasPrefix(s.Path, "/") {
		bad(fmt.Errorf("path %q must start with /", s.Path), "path")
	}
	c.name = s.Name
	if c.name == "" {
		c.name = c.method + " " + s.Path
	}
	for _, name := range slices.Sorted(mapKeys(s.Headers)) {
		if !isToken(name) {
			bad(fmt.Errorf("header name %q is not a token", name), "headers", name)
		}
		switch http.CanonicalHeaderKey(name) {
		case "Host", "Content-Length", "Connection", "Transfer-Encoding":
			bad(fmt.Errorf("header %s is set by the driver", name), "headers", name)
		}
		c.headers = append(c.headers, compiledHeader{name: name, value: tmpl(s.Headers[name], "headers", name)})
	}
	if len(errs) == 0 {
		errs = append(errs, trialRender(c)...)
	}
	checks, cerrs := compileExpect(s.Expect)
	for _, e := range cerrs {
		errs = append(errs, e)
	}
	labelChecks(c.name, checks)
	c.expect = checks
	return c, errs
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// isToken reports whether s is an RFC 9110 token (method, header name).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// pick chooses the request of one attempt: by weight, or the n-th of a
// replayed sequence.
func (s *RequestSet) pick(rng *rand.Rand, n uint64) *compiledRequest {
	if s.sequence {
		return &s.reqs[n%uint64(len(s.reqs))]
	}
	if len(s.reqs) == 1 {
		return &s.reqs[0]
	}
	u := rng.Float64() * s.cum[len(s.cum)-1]
	i, _ := slices.BinarySearch(s.cum, u)
	return &s.reqs[min(i, len(s.reqs)-1)]
}

// Len is the number of requests.
func (s *RequestSet) Len() int { return len(s.reqs) }

// appendRequest writes the request line, headers and body of r for
// vars to dst. host is the Host header; body is scratch for the body.
func (r *compiledRequest) appendRequest(dst, scratch []byte, v *reqtmpl.Vars, host string, keepalive bool) (req, body []byte) {
	body = r.body.Render(scratch[:0], v)
	dst = append(dst, r.method...)
	dst = append(dst, ' ')
	dst = r.path.Render(dst, v)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, host...)
	dst = append(dst, "\r\nUser-Agent: faultbench\r\n"...)
	for _, h := range r.headers {
		dst = append(dst, h.name...)
		dst = append(dst, ": "...)
		dst = h.value.Render(dst, v)
		dst = append(dst, "\r\n"...)
	}
	if len(body) > 0 || r.method == "POST" || r.method == "PUT" || r.method == "PATCH" {
		dst = append(dst, "Content-Length: "...)
		dst = appendInt(dst, len(body))
		dst = append(dst, "\r\n"...)
	}
	if !keepalive {
		dst = append(dst, "Connection: close\r\n"...)
	}
	dst = append(dst, "\r\n"...)
	return append(dst, body...), body
}

func appendInt(dst []byte, n int) []byte {
	if n >= 10 {
		dst = appendInt(dst, n/10)
	}
	return append(dst, byte('0'+n%10))
}

// compileRegex compiles a body_regex.
func compileRegex(src string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("body_regex %q: %w", src, err)
	}
	return re, nil
}

// validateRequests checks what Validate can of workload.requests, tls and
// max_body without opening files.
func validateRequests(cfg Config) []error {
	var errs []error
	spec, _ := ParseTraceSpec(cfg.Trace)
	templated := len(cfg.Requests) > 0 || spec.Kind == "har"
	if templated && cfg.Driver != "http" {
		errs = append(errs, fmt.Errorf("%w: requests and har: traces are for driver http, not %s", ErrConfig, cfg.Driver))
	}
	if len(cfg.Requests) > 0 && cfg.Trace != "" {
		errs = append(errs, fmt.Errorf("%w: give requests or a trace (%s), not both: the requests choose the paths", ErrConfig, cfg.Trace))
	}
	if len(cfg.Requests) > 0 {
		if _, err := CompileRequests(cfg.Requests); err != nil {
			errs = append(errs, fmt.Errorf("%w: %w", ErrConfig, err))
		}
	}
	if cfg.TLS != nil && cfg.Driver != "http" {
		errs = append(errs, fmt.Errorf("%w: tls is for driver http, not %s", ErrConfig, cfg.Driver))
	}
	if cfg.MaxBody < 0 || cfg.MaxBody > 1<<30 {
		errs = append(errs, fmt.Errorf("%w: max_body %d must be between 1 and %d bytes (0: %d)", ErrConfig, cfg.MaxBody, 1<<30, DefaultMaxBody))
	}
	return errs
}

// loadRequests builds what the http driver sends in place of GETs: the
// compiled requests (or the HAR trace's) and the TLS configuration.
func loadRequests(cfg Config, trace Trace) (*RequestSet, *tls.Config, error) {
	var set *RequestSet
	if rt, ok := trace.(*requestTrace); ok && rt.set != nil {
		set = rt.set // a har: trace
	} else if len(cfg.Requests) > 0 {
		var err error
		if set, err = CompileRequests(cfg.Requests); err != nil {
			return nil, nil, err
		}
	}
	if cfg.TLS == nil {
		return set, nil, nil
	}
	tc, err := LoadTLS(*cfg.TLS, cfg.BaseDir)
	return set, tc, err
}

// trialRender renders c once with sample values, so that a template
// whose literal text cannot stand in a request line or header (a space
// in the path, a line break in a header) is found before the run.
// Values the run draws ({{payload}}, numbers, base64, url) cannot add
// such bytes; {{value}} is the driver's and is not tried.
func trialRender(c compiledRequest) []*RequestError {
	var errs []*RequestError
	v := reqtmpl.Vars{User: 1, Client: 1, Seq: 1, Rand: rand.New(rand.NewSource(1))}
	if err := checkTarget(string(c.path.Render(nil, &v))); err != nil {
		errs = append(errs, &RequestError{Key: []any{"path"}, Err: fmt.Errorf("%w: %v (escape with {{url}}...{{end}})", ErrRequests, err)})
	}
	for _, h := range c.headers {
		if strings.ContainsAny(string(h.value.Render(nil, &v)), "\r\n") {
			errs = append(errs, &RequestError{Key: []any{"headers", h.name}, Err: fmt.Errorf("%w: header %s renders a line break", ErrRequests, h.name)})
		}
	}
	return errs
}
