package workload

import (
	"errors"
	"strings"
	"testing"
)

const sampleHAR = `{
  "log": {
    "version": "1.2",
    "creator": {"name": "Firefox", "version": "120"},
    "entries": [
      {
        "startedDateTime": "2026-11-23T10:00:00.000Z",
        "request": {
          "method": "GET", "url": "https://shop.example/items?page=2",
          "headers": [{"name": ":authority", "value": "shop.example"}, {"name": "Accept", "value": "application/json"},
                      {"name": "Host", "value": "shop.example"}, {"name": "X-Token", "value": "{{not a template}}"}]
        },
        "response": {"status": 200}
      },
      {
        "startedDateTime": "2026-11-23T10:00:01.000Z",
        "request": {
          "method": "POST", "url": "http://shop.example/cart",
          "headers": [],
          "postData": {"mimeType": "application/json", "text": "{\"item\": 7}"}
        },
        "response": {"status": 201}
      }
    ]
  }
}`

func TestReadHAR(t *testing.T) {
	specs, err := ReadHAR(strings.NewReader(sampleHAR), "s.har")
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 {
		t.Fatalf("%d requests, want 2", len(specs))
	}
	set, err := CompileRequests(specs)
	if err != nil {
		t.Fatal(err)
	}
	set.sequence = true
	var out []string
	for i := range 3 {
		r := set.pick(nil, uint64(i))
		st := &reqState{}
		req, _ := r.appendRequest(nil, nil, &st.vars, "127.0.0.1:80", false)
		out = append(out, string(req))
	}
	if !strings.HasPrefix(out[0], "GET /items?page=2 HTTP/1.1\r\n") || !strings.Contains(out[0], "X-Token: {{not a template}}\r\n") ||
		strings.Contains(out[0], ":authority") || strings.Count(out[0], "Host:") != 1 {
		t.Errorf("first request:\n%s", out[0])
	}
	if !strings.HasPrefix(out[1], "POST /cart HTTP/1.1\r\n") || !strings.HasSuffix(out[1], "\r\n\r\n{\"item\": 7}") ||
		!strings.Contains(out[1], "Content-Type: application/json\r\n") || !strings.Contains(out[1], "Content-Length: 11\r\n") {
		t.Errorf("second request:\n%s", out[1])
	}
	if out[2] != out[0] {
		t.Error("the replay does not wrap around to the first entry")
	}
	if specs[1].Expect.Status[0] != 201 {
		t.Errorf("the recorded status is not expected: %+v", specs[1].Expect)
	}
}

func TestReadHARErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "x.har:1: not a usable HAR file"},
		{"[1, 2]", "x.har:1: not a usable HAR file"},
		{`{"log": {"version": "1.2"}}`, `x.har:1: not a usable HAR file: log: no "entries" key`},
		{"{\n\"log\": {\"entries\": []}}", "x.har:2: not a usable HAR file: log.entries is empty"},
		{"{\"log\": {\"entries\": [\n{\"request\": {\"method\": \"GET\", \"url\": \"http://a/\"}},\n{\"request\": {\"method\": \"GET\", \"url\": \"/relative\"}}]}}",
			`x.har:3: not a usable HAR file: entry 2: request.url "/relative" is not an absolute URL`},
		{"{\"log\": {\"entries\": [\n\n{\"request\": 5}]}}", "x.har:3: not a usable HAR file: entry 1"},
		{"{\"log\": {\"entries\": [\n{}]}}", "x.har:2: not a usable HAR file: entry 1: no request"},
		{"{\"log\": {\"entries\": [{\"request\": {\"method\": \"G T\", \"url\": \"http://a/\"}}]}}", "entry 1: request.method"},
		{"# access log\n127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.0\" 200 2326", "x.har:1: not a usable HAR file"},
	}
	for _, c := range cases {
		_, err := ReadHAR(strings.NewReader(c.in), "x.har")
		if err == nil || !errors.Is(err, ErrHAR) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadHAR(%q) = %v, want %q", c.in, err, c.want)
		}
	}
}

func FuzzReadHAR(f *testing.F) {
	f.Add(sampleHAR)
	f.Add(`{"log":{"entries":[{"request":{"method":"PUT","url":"http://h/p?q","postData":{"text":"{{x"}}}]}}`)
	f.Add(`{"log":{"entries":[{}]}}`)
	f.Add(`[`)
	f.Fuzz(func(t *testing.T, in string) {
		specs, err := ReadHAR(strings.NewReader(in), "f.har")
		if err != nil {
			if !errors.Is(err, ErrHAR) && !strings.HasPrefix(err.Error(), "f.har") {
				t.Fatalf("error without file name: %v", err)
			}
			return
		}
		// Whatever a HAR holds, its requests compile as literal text.
		set, err := CompileRequests(specs)
		if err != nil {
			t.Fatalf("ReadHAR accepted requests that do not compile: %v", err)
		}
		st := &reqState{}
		for i := range min(set.Len(), 20) {
			req, _ := set.reqs[i].appendRequest(nil, nil, &st.vars, "h:1", true)
			if strings.Count(string(req), "\r\n\r\n") < 1 {
				t.Fatalf("request without header end: %q", req)
			}
		}
	})
}
