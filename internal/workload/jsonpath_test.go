package workload

import (
	"encoding/json"
	"strings"
	"testing"
)

const doc = `{"header": {"revision": "42", "raft_term": 3},
  "kvs": [{"key": "a2V5", "value": "dmFs", "version": 1}, {"key": "b", "value": null, "weird]key": true}],
  "count": 2, "more": false, "esc\"aped": "x\u0041y", "nested": [[1, 2], [3, {"deep": "yes"}]], "empty": {}}`

func TestJSONPathLookup(t *testing.T) {
	cases := []struct{ path, raw, want string }{
		{"$.header.revision", `"42"`, "42"},
		{"$.header.raft_term", `3`, "3"},
		{"$.kvs[0].value", `"dmFs"`, "dmFs"},
		{"$.kvs[1].value", `null`, "null"},
		{`$.kvs[1]["weird]key"]`, `true`, "true"},
		{"$.count", `2`, "2"},
		{"$.more", `false`, "false"},
		{`$["esc\"aped"]`, `"x\u0041y"`, "xAy"},
		{"$.nested[1][1].deep", `"yes"`, "yes"},
		{"$.nested[0]", `[1, 2]`, "[1, 2]"},
		{"$.empty", `{}`, "{}"},
	}
	for _, c := range cases {
		p, err := ParseJSONPath(c.path)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		raw, ok := p.Lookup([]byte(doc))
		if !ok || string(raw) != c.raw || !MatchJSON(raw, []byte(c.want)) {
			t.Errorf("%s = %q, %v; want %q matching %q", c.path, raw, ok, c.raw, c.want)
		}
	}
	for _, miss := range []string{"$.nope", "$.kvs[2]", "$.count.x", "$.kvs.key", "$.header[0]"} {
		if raw, ok := MustJSONPath(t, miss).Lookup([]byte(doc)); ok {
			t.Errorf("%s found %q in a document without it", miss, raw)
		}
	}
	for _, broken := range []string{`{"a": `, `{"a" 1}`, `{"a": [1, }`, `nope`, ``} {
		if raw, ok := MustJSONPath(t, "$.a").Lookup([]byte(broken)); ok {
			t.Errorf("found %q in broken JSON %q", raw, broken)
		}
	}
}

func MustJSONPath(t *testing.T, s string) *JSONPath {
	p, err := ParseJSONPath(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestJSONPathErrors(t *testing.T) {
	cases := []struct{ path, want string }{
		{"kvs[0]", "column 1: a path starts with $"},
		{"$.", "column 2: empty name"},
		{"$.a[x]", `column 5: index "x"`},
		{"$.a[-1]", "column 5"},
		{"$.a[0", "column 4: [ has no ]"},
		{`$["a]`, "bad quoted name"},
		{"$a", `column 2: unexpected 'a'`},
	}
	for _, c := range cases {
		_, err := ParseJSONPath(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseJSONPath(%q) = %v, want %q", c.path, err, c.want)
		}
	}
}

// FuzzJSONPath checks the walker against encoding/json as the reference:
// whenever Lookup finds a value in a valid document, decoding the document
// and following the path by hand must give the same value.
func FuzzJSONPath(f *testing.F) {
	f.Add("$.kvs[0].value", doc)
	f.Add(`$["a"][1]`, `{"a": [0, {"b": 1}]}`)
	f.Add("$", `"s"`)
	f.Add("$.a.b", `{"a": {"b": [1, 2, 3]}}`)
	f.Fuzz(func(t *testing.T, path, document string) {
		p, err := ParseJSONPath(path)
		if err != nil {
			return
		}
		raw, ok := p.Lookup([]byte(document))
		var whole any
		if json.Unmarshal([]byte(document), &whole) != nil {
			return // the walker may find values in invalid JSON; no reference
		}
		v, found := follow(whole, p)
		if ok != found {
			t.Fatalf("path %s in %s: walker found=%v (%q), reference found=%v", path, document, ok, raw, found)
		}
		if !ok {
			return
		}
		var got any
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatalf("walker returned %q, not JSON: %v", raw, err)
		}
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(v)
		if string(a) != string(b) {
			t.Fatalf("path %s: walker %s, reference %s", path, a, b)
		}
	})
}

// follow is the reference lookup on a decoded document. For duplicate
// keys encoding/json keeps the last, the walker the first: documents with
// duplicates are skipped by reporting "not found" only when both agree.
func follow(v any, p *JSONPath) (any, bool) {
	for _, s := range p.steps {
		if s.index >= 0 {
			a, ok := v.([]any)
			if !ok || s.index >= len(a) {
				return nil, false
			}
			v = a[s.index]
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[string(s.name)]; !ok {
			return nil, false
		}
	}
	return v, true
}
