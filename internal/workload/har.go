package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// ErrHAR is wrapped by every error ReadHAR returns.
var ErrHAR = errors.New("not a usable HAR file")

// maxHARBytes bounds a HAR file read into memory.
const maxHARBytes = 1 << 30

// harEntry is the part of a HAR 1.2 entry (log.entries[]) a replay uses.
type harEntry struct {
	Request *struct {
		Method   string `json:"method"`
		URL      string `json:"url"`
		Headers  []struct{ Name, Value string }
		PostData *struct {
			MimeType string `json:"mimeType"`
			Text     string `json:"text"`
		} `json:"postData"`
	} `json:"request"`
	Response *struct {
		Status int `json:"status"`
	} `json:"response"`
}

// ReadHAR reads a browser's HAR export (HAR 1.2: log.entries[].request)
// into requests replayed in the file's order: method, URL path and query,
// headers (less those the driver sets and HTTP/2 pseudo-headers) and the
// body, each as literal text; each expects the status the HAR recorded
// (any 2xx when it recorded none). name is for errors, which give
// name:line.
func ReadHAR(r io.Reader, name string) ([]RequestSpec, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxHARBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > maxHARBytes {
		return nil, fmt.Errorf("%s: %w: larger than %d bytes", name, ErrHAR, maxHARBytes)
	}
	at := func(off int64) string {
		return fmt.Sprintf("%s:%d", name, 1+bytes.Count(data[:min(max(off, 0), int64(len(data)))], []byte("\n")))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := harSeek(dec); err != nil {
		return nil, fmt.Errorf("%s: %w: %v (a HAR file is JSON with log.entries[], as browsers export it)", at(dec.InputOffset()), ErrHAR, err)
	}
	var specs []RequestSpec
	for dec.More() {
		off := dec.InputOffset()
		// InputOffset sits before the separator: skip it for the line.
		line := at(off + int64(len(data[off:])-len(bytes.TrimLeft(data[off:], ", \t\r\n"))))
		var e harEntry
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("%s: %w: entry %d: %s", line, ErrHAR, len(specs)+1, jsonErrText(err))
		}
		s, err := harRequest(e)
		if err != nil {
			return nil, fmt.Errorf("%s: %w: entry %d: %v", line, ErrHAR, len(specs)+1, err)
		}
		if len(specs) == maxHAREntries {
			return nil, fmt.Errorf("%s: %w: more than %d entries", line, ErrHAR, maxHAREntries)
		}
		specs = append(specs, s)
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("%s: %w: log.entries is empty", at(dec.InputOffset()), ErrHAR)
	}
	return specs, nil
}

// harSeek moves dec into the log.entries array, past its '['.
func harSeek(dec *json.Decoder) error {
	if err := wantDelim(dec, '{'); err != nil {
		return err
	}
	if err := seekKey(dec, "log"); err != nil {
		return err
	}
	if err := wantDelim(dec, '{'); err != nil {
		return fmt.Errorf("log: %w", err)
	}
	if err := seekKey(dec, "entries"); err != nil {
		return fmt.Errorf("log: %w", err)
	}
	if err := wantDelim(dec, '['); err != nil {
		return fmt.Errorf("log.entries: %w", err)
	}
	return nil
}

func wantDelim(dec *json.Decoder, d json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != d {
		return fmt.Errorf("want %q, found %v", d, t)
	}
	return nil
}

// seekKey skips members of the current object up to key's value.
func seekKey(dec *json.Decoder, key string) error {
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		if t == key {
			return nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	return fmt.Errorf("no %q key", key)
}

// jsonErrText says what a decode error found, without Go type names.
func jsonErrText(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s is a JSON %s, want an object or text as HAR 1.2 has it", te.Field, te.Value)
	}
	return err.Error()
}

// harSkipHeaders are set by the driver, or are HTTP/2's.
var harSkipHeaders = map[string]bool{"Host": true, "Content-Length": true, "Connection": true, "Transfer-Encoding": true,
	"Keep-Alive": true, "Upgrade": true, "Te": true, "Accept-Encoding": true}

func harRequest(e harEntry) (RequestSpec, error) {
	if e.Request == nil {
		return RequestSpec{}, errors.New("no request")
	}
	rq := e.Request
	if !isToken(rq.Method) {
		return RequestSpec{}, fmt.Errorf("request.method %q is not an HTTP method", rq.Method)
	}
	u, err := url.Parse(rq.URL)
	if err != nil || !u.IsAbs() {
		return RequestSpec{}, fmt.Errorf("request.url %q is not an absolute URL", rq.URL)
	}
	target := u.RequestURI()
	if err := checkTarget(target); err != nil {
		return RequestSpec{}, fmt.Errorf("request.url: %v", err)
	}
	s := RequestSpec{Method: rq.Method, Path: literal(target)}
	for _, h := range rq.Headers {
		name := http.CanonicalHeaderKey(h.Name)
		if strings.HasPrefix(h.Name, ":") || harSkipHeaders[name] || !isToken(h.Name) {
			continue
		}
		if strings.ContainsAny(h.Value, "\r\n") {
			return RequestSpec{}, fmt.Errorf("header %s holds a line break", h.Name)
		}
		if s.Headers == nil {
			s.Headers = map[string]string{}
		}
		s.Headers[h.Name] = literal(h.Value)
	}
	if rq.PostData != nil {
		s.Body = literal(rq.PostData.Text)
		if rq.PostData.MimeType != "" && s.Headers["Content-Type"] == "" && s.Headers["content-type"] == "" {
			if s.Headers == nil {
				s.Headers = map[string]string{}
			}
			s.Headers["Content-Type"] = literal(rq.PostData.MimeType)
		}
	}
	if e.Response != nil && e.Response.Status >= 100 && e.Response.Status <= 599 {
		s.Expect.Status = []int{e.Response.Status}
	}
	return s, nil
}

// literal quotes text for reqtmpl so that it renders as is.
func literal(s string) string { return strings.ReplaceAll(s, "{{", `{{"{{"}}`) }

// LoadHAR reads the HAR file name (relative to baseDir) as a request set
// replayed in order.
func LoadHAR(name, baseDir string) (*RequestSet, error) {
	f, err := os.Open(resolvePath(baseDir, name))
	if err != nil {
		return nil, fmt.Errorf("har trace: %w", err)
	}
	defer f.Close()
	specs, err := ReadHAR(f, name)
	if err != nil {
		return nil, err
	}
	set, err := CompileRequests(specs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	set.sequence = true
	return set, nil
}
