package workload

import (
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"time"

	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/reqtmpl"
)

// A check is one compiled expectation. Checks run in the order
// compileExpect builds them (status first), and the first that fails
// names the attempt's failure.
type check struct {
	name string // "status", "header:X", "json:$.a", ...
	// label and labelTrunc are what the record's check column says when
	// it fails: "REQUEST: NAME", and that with " (body over max_body)"
	// when the body was cut at the bound. Built once, so a failure does
	// not allocate.
	label, labelTrunc string
	kind              checkKind
	// The check's parameters; which are used depends on kind.
	statuses []int
	header   string
	want     []byte
	re       *regexp.Regexp
	path     *JSONPath
	tmpl     *reqtmpl.Template
	max      time.Duration
}

type checkKind uint8

const (
	checkStatus checkKind = iota
	checkHeaderEqual
	checkHeaderPresent
	checkBodyContains
	checkBodyRegex
	checkJSON
	checkMaxLatency
)

// needsBody reports whether any check reads the body.
func needsBody(checks []check) bool {
	for _, c := range checks {
		if c.kind == checkBodyContains || c.kind == checkBodyRegex || c.kind == checkJSON {
			return true
		}
	}
	return false
}

func compileExpect(e ExpectSpec) ([]check, []*RequestError) {
	var checks []check
	var errs []*RequestError
	bad := func(err error, key ...any) {
		errs = append(errs, &RequestError{Key: append([]any{"expect"}, key...), Err: fmt.Errorf("%w: %w", ErrRequests, err)})
	}
	for _, s := range e.Status {
		if s < 100 || s > 999 {
			bad(fmt.Errorf("status %d is not an HTTP status (100-999)", s), "status")
		}
	}
	checks = append(checks, check{name: "status", kind: checkStatus, statuses: slices.Clone(e.Status)})
	for _, name := range slices.Sorted(mapKeys(e.Headers)) {
		checks = append(checks, check{name: "header:" + name, kind: checkHeaderEqual, header: http.CanonicalHeaderKey(name), want: []byte(e.Headers[name])})
	}
	for _, name := range e.HeaderPresent {
		if !isToken(name) {
			bad(fmt.Errorf("header name %q is not a token", name), "header_present")
		}
		checks = append(checks, check{name: "header:" + name, kind: checkHeaderPresent, header: http.CanonicalHeaderKey(name)})
	}
	if e.BodyContains != "" {
		checks = append(checks, check{name: "body_contains", kind: checkBodyContains, want: []byte(e.BodyContains)})
	}
	if e.BodyRegex != "" {
		re, err := compileRegex(e.BodyRegex)
		if err != nil {
			bad(err, "body_regex")
		}
		checks = append(checks, check{name: "body_regex", kind: checkBodyRegex, re: re})
	}
	for _, p := range slices.Sorted(mapKeys(e.JSON)) {
		path, err := ParseJSONPath(p)
		if err != nil {
			bad(err, "json", p)
		}
		t, err := reqtmpl.Parse(e.JSON[p])
		if err != nil {
			bad(err, "json", p)
		}
		checks = append(checks, check{name: "json:" + p, kind: checkJSON, path: path, tmpl: t})
	}
	if e.MaxLatency < 0 {
		bad(fmt.Errorf("max_latency %v is negative", e.MaxLatency), "max_latency")
	}
	if e.MaxLatency > 0 {
		checks = append(checks, check{name: "max_latency", kind: checkMaxLatency, max: e.MaxLatency})
	}
	return checks, errs
}

// response is what the checks see of one answer.
type response struct {
	status    int
	header    http.Header
	body      []byte // up to the body bound
	truncated bool   // the body was longer than the bound
	latency   time.Duration
	vars      *reqtmpl.Vars // the request's, for JSON templates
	scratch   []byte        // for rendering expected values
}

// run applies c to resp; it reports whether the check passed.
func (c *check) run(resp *response) bool {
	switch c.kind {
	case checkStatus:
		if len(c.statuses) == 0 {
			return resp.status >= 200 && resp.status < 300
		}
		return slices.Contains(c.statuses, resp.status)
	case checkHeaderEqual:
		vs := resp.header[c.header]
		return len(vs) > 0 && vs[0] == string(c.want)
	case checkHeaderPresent:
		return len(resp.header[c.header]) > 0
	case checkBodyContains:
		return bytes.Contains(resp.body, c.want)
	case checkBodyRegex:
		return c.re.Match(resp.body)
	case checkJSON:
		raw, ok := c.path.Lookup(resp.body)
		if !ok {
			return false
		}
		resp.scratch = c.tmpl.Render(resp.scratch[:0], resp.vars)
		return MatchJSON(raw, resp.scratch)
	case checkMaxLatency:
		return resp.latency <= c.max
	}
	return false
}

// evaluate runs the checks in order and returns the outcome and the name
// of the first failed check ("" when all passed): a failed status check
// is an http_error, any other a data_error, as docs/results.md defines
// the classes.
func evaluate(checks []check, resp *response) (record.Outcome, string) {
	for i := range checks {
		c := &checks[i]
		if c.run(resp) {
			continue
		}
		if c.kind == checkStatus {
			return record.HTTPError, c.label
		}
		if resp.truncated && (c.kind == checkBodyContains || c.kind == checkBodyRegex || c.kind == checkJSON) {
			return record.DataError, c.labelTrunc
		}
		return record.DataError, c.label
	}
	return record.OK, ""
}

// labelChecks names each check's failure after its request.
func labelChecks(request string, checks []check) {
	for i := range checks {
		checks[i].label = request + ": " + checks[i].name
		checks[i].labelTrunc = checks[i].label + " (body over max_body)"
	}
}
