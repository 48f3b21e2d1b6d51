package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// JSONPath is a parsed path into a JSON document: $ then any number of
// .name, ["name"] and [index] steps, e.g. $.kvs[0].value or
// $["header"]["revision"]. It has no wildcards, filters or slices: an
// expectation names one value. We wrote it rather than take a library
// because lookup must not allocate on the hot path (Lookup walks the raw
// bytes and returns a subslice) and this subset is forty lines.
type JSONPath struct {
	src   string
	steps []pathStep
}

type pathStep struct {
	name  []byte
	index int // >= 0 for [N]; -1 for a name
}

// ErrJSONPath is wrapped by every error ParseJSONPath returns.
var ErrJSONPath = errors.New("bad JSON path")

// maxJSONDepth bounds nesting the walker follows.
const maxJSONDepth = 512

// ParseJSONPath parses src; errors give the offending column (1-based).
func ParseJSONPath(src string) (*JSONPath, error) {
	bad := func(i int, format string, args ...any) error {
		return fmt.Errorf("%w %q at column %d: %s (want $, .name, [\"name\"] or [index] steps, e.g. $.kvs[0].value)",
			ErrJSONPath, src, i+1, fmt.Sprintf(format, args...))
	}
	if !strings.HasPrefix(src, "$") {
		return nil, bad(0, "a path starts with $")
	}
	p := &JSONPath{src: src}
	for i := 1; i < len(src); {
		switch src[i] {
		case '.':
			j := i + 1
			for j < len(src) && src[j] != '.' && src[j] != '[' {
				j++
			}
			if j == i+1 {
				return nil, bad(i, "empty name after .")
			}
			p.steps = append(p.steps, pathStep{name: []byte(src[i+1 : j]), index: -1})
			i = j
		case '[':
			end := strings.IndexByte(src[i:], ']')
			if end < 0 {
				return nil, bad(i, "[ has no ]")
			}
			inner := src[i+1 : i+end]
			if strings.HasPrefix(inner, `"`) {
				// A quoted name may hold ] itself: find the closing quote.
				q, rest, err := quotedPrefix(src[i+1:])
				if err != nil || !strings.HasPrefix(rest, "]") {
					return nil, bad(i, "bad quoted name")
				}
				p.steps = append(p.steps, pathStep{name: []byte(q), index: -1})
				i = len(src) - len(rest) + 1
				continue
			}
			n, err := strconv.Atoi(inner)
			if err != nil || n < 0 || n > 1<<30 {
				return nil, bad(i+1, "index %q is not a non-negative integer", inner)
			}
			p.steps = append(p.steps, pathStep{index: n})
			i += end + 1
		default:
			return nil, bad(i, "unexpected %q", src[i])
		}
	}
	if len(p.steps) > maxJSONDepth {
		return nil, bad(0, "more than %d steps", maxJSONDepth)
	}
	return p, nil
}

// quotedPrefix reads a JSON string at the start of s and returns its value and what follows.
func quotedPrefix(s string) (string, string, error) {
	for j := 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			var v string
			if err := json.Unmarshal([]byte(s[:j+1]), &v); err != nil {
				return "", "", err
			}
			return v, s[j+1:], nil
		}
	}
	return "", "", errors.New("unterminated string")
}

// String returns the path as written.
func (p *JSONPath) String() string { return p.src }

// Lookup returns the raw JSON text of the value at p in doc, or ok=false if
// the document has no such value or is not JSON as far as the walk went.
// The returned slice aliases doc.
func (p *JSONPath) Lookup(doc []byte) (val []byte, ok bool) {
	w := jsonWalker{b: doc}
	w.space()
	for _, s := range p.steps {
		if !w.enter(s) {
			return nil, false
		}
	}
	start := w.i
	if !w.skipValue(0) {
		return nil, false
	}
	return doc[start:w.i], true
}

// MatchJSON reports whether raw (a JSON value from Lookup) equals want: a
// JSON string compares by its decoded text, anything else by its text
// (so want "42" matches 42 and "true" matches true).
func MatchJSON(raw, want []byte) bool {
	if len(raw) > 0 && raw[0] == '"' {
		inner := raw[1 : len(raw)-1]
		if bytes.IndexByte(inner, '\\') < 0 {
			return bytes.Equal(inner, want)
		}
		var s string
		return json.Unmarshal(raw, &s) == nil && s == string(want)
	}
	return bytes.Equal(raw, want)
}

// jsonWalker moves through JSON text without building values.
type jsonWalker struct {
	b []byte
	i int
}

func (w *jsonWalker) space() {
	for w.i < len(w.b) && (w.b[w.i] == ' ' || w.b[w.i] == '\t' || w.b[w.i] == '\n' || w.b[w.i] == '\r') {
		w.i++
	}
}

func (w *jsonWalker) peek() byte {
	if w.i < len(w.b) {
		return w.b[w.i]
	}
	return 0
}

// enter moves to the value step names within the current value.
func (w *jsonWalker) enter(s pathStep) bool {
	if s.index >= 0 {
		if w.peek() != '[' {
			return false
		}
		w.i++
		for k := 0; ; k++ {
			w.space()
			if w.peek() == ']' {
				return false
			}
			if k == s.index {
				return true
			}
			if !w.skipValue(0) || !w.comma() {
				return false
			}
		}
	}
	if w.peek() != '{' {
		return false
	}
	w.i++
	for {
		w.space()
		if w.peek() != '"' {
			return false
		}
		ks := w.i
		if !w.skipString() {
			return false
		}
		key := w.b[ks:w.i]
		w.space()
		if w.peek() != ':' {
			return false
		}
		w.i++
		w.space()
		if MatchJSON(key, s.name) {
			return true
		}
		if !w.skipValue(0) || !w.comma() {
			return false
		}
	}
}

// comma consumes the "," before another member; false at the close or on junk.
func (w *jsonWalker) comma() bool {
	w.space()
	if w.peek() == ',' {
		w.i++
		return true
	}
	return false
}

func (w *jsonWalker) skipString() bool {
	for w.i++; w.i < len(w.b); w.i++ {
		switch w.b[w.i] {
		case '\\':
			w.i++
		case '"':
			w.i++
			return true
		}
	}
	return false
}

// skipValue moves past one value.
func (w *jsonWalker) skipValue(depth int) bool {
	if depth > maxJSONDepth {
		return false
	}
	w.space()
	switch c := w.peek(); c {
	case '"':
		return w.skipString()
	case '{', '[':
		close := byte('}')
		if c == '[' {
			close = ']'
		}
		w.i++
		w.space()
		if w.peek() == close {
			w.i++
			return true
		}
		for {
			if c == '{' {
				w.space()
				if w.peek() != '"' || !w.skipString() {
					return false
				}
				w.space()
				if w.peek() != ':' {
					return false
				}
				w.i++
			}
			if !w.skipValue(depth + 1) {
				return false
			}
			w.space()
			switch w.peek() {
			case ',':
				w.i++
			case close:
				w.i++
				return true
			default:
				return false
			}
		}
	case 0:
		return false
	default:
		start := w.i
		for w.i < len(w.b) && strings.IndexByte(",}] \t\n\r", w.b[w.i]) < 0 {
			w.i++
		}
		return w.i > start && json.Valid(w.b[start:w.i])
	}
}
