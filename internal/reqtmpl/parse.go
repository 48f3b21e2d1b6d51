package reqtmpl

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrTemplate is wrapped by every error Parse returns.
var ErrTemplate = errors.New("bad template")

// Error is a parse error at a place in the template text.
type Error struct {
	Line, Col int // 1-based; Col counts characters
	Msg       string
}

func (e *Error) Error() string {
	return fmt.Sprintf("template line %d col %d: %s", e.Line, e.Col, e.Msg)
}

// Unwrap makes errors.Is(err, ErrTemplate) hold.
func (e *Error) Unwrap() error { return ErrTemplate }

// MaxPayload bounds {{payload N}}.
const MaxPayload = 16 << 20

// maxRand bounds {{rand N}}.
const maxRand = 1 << 62

// Variables and functions, as the error messages list them.
const (
	knownVars  = "user, client, seq, key, key uniform:N, key zipf:N:S, rand N, payload N, value, \"literal\""
	knownFuncs = "base64, json, url"
)

type op uint8

const (
	opText op = iota
	opUser
	opClient
	opSeq
	opKey     // Vars' key
	opKeyDraw // draw into Vars' key unless already set
	opRand
	opPayload
	opValue
	opBlock
)

type filter uint8

const (
	fBase64 filter = iota + 1
	fJSON
	fURL
)

var noArgs = map[string]op{"user": opUser, "client": opClient, "seq": opSeq, "value": opValue}

var filters = map[string]filter{"base64": fBase64, "json": fJSON, "url": fURL}

// node is one piece of a template: literal text, a value, or a block.
type node struct {
	op       op
	text     string // opText: the literal (also "literal" actions)
	n        int64  // opRand, opPayload
	keys     *KeySpace
	filters  []filter // applied in order to what the node rendered
	children []node   // opBlock
}

// Template is a parsed template; see the package doc.
type Template struct {
	src    string
	nodes  []node
	random bool // renders need Vars.Rand
}

// String returns the template's source.
func (t *Template) String() string { return t.src }

// Random reports whether rendering draws random numbers (Vars.Rand must be set).
func (t *Template) Random() bool { return t.random }

// Literal reports whether the template has no actions: it renders its
// source unchanged, so a caller may keep the bytes.
func (t *Template) Literal() bool {
	return len(t.nodes) == 0 || len(t.nodes) == 1 && t.nodes[0].op == opText && t.nodes[0].filters == nil && t.nodes[0].text == t.src
}

// MustParse is Parse that panics; for tests and constants.
func MustParse(src string) *Template {
	t, err := Parse(src)
	if err != nil {
		panic(err)
	}
	return t
}

// Parse parses src. Errors are *Error; see the package doc.
func Parse(src string) (*Template, error) {
	p := &parser{src: src}
	nodes, err := p.parseNodes(false, 0)
	if err != nil {
		return nil, err
	}
	return &Template{src: src, nodes: nodes, random: p.random}, nil
}

type parser struct {
	src    string
	pos    int
	random bool
}

func (p *parser) errAt(off int, format string, args ...any) *Error {
	if off > len(p.src) {
		off = len(p.src)
	}
	before := p.src[:off]
	line := strings.Count(before, "\n") + 1
	col := utf8.RuneCountInString(before[strings.LastIndexByte(before, '\n')+1:]) + 1
	return &Error{Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

// parseNodes reads nodes up to the end of src, or, inBlock, up to the
// {{end}} that closes the block opened at openAt.
func (p *parser) parseNodes(inBlock bool, openAt int) ([]node, error) {
	var nodes []node
	for p.pos < len(p.src) {
		i := strings.Index(p.src[p.pos:], "{{")
		if i < 0 {
			nodes = append(nodes, node{op: opText, text: p.src[p.pos:]})
			p.pos = len(p.src)
			break
		}
		if i > 0 {
			nodes = append(nodes, node{op: opText, text: p.src[p.pos : p.pos+i]})
		}
		start := p.pos + i
		body, end, err := p.actionBody(start)
		if err != nil {
			return nil, err
		}
		p.pos = end
		toks, err := p.tokens(body, start+2)
		if err != nil {
			return nil, err
		}
		if len(toks) == 0 {
			return nil, p.errAt(start, "empty action {{}}: want a variable (%s)", knownVars)
		}
		if len(toks) == 1 && toks[0].text == "end" && !toks[0].quoted {
			if !inBlock {
				return nil, p.errAt(start, "{{end}} closes no block (blocks open with {{base64}}, {{json}} or {{url}})")
			}
			return nodes, nil
		}
		if f, ok := filters[toks[0].text]; ok && len(toks) == 1 && !toks[0].quoted {
			children, err := p.parseNodes(true, start)
			if err != nil {
				return nil, err
			}
			nodes = append(nodes, node{op: opBlock, children: children, filters: []filter{f}})
			continue
		}
		n, err := p.action(toks)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	if inBlock {
		return nil, p.errAt(openAt, "block opened here has no {{end}}")
	}
	return mergeText(nodes), nil
}

// actionBody returns the text between the {{ at start and its }}, and the
// offset just past the }}. A "}}" inside a quoted literal does not close.
func (p *parser) actionBody(start int) (body string, end int, err error) {
	inQuote := false
	for j := start + 2; j < len(p.src); j++ {
		c := p.src[j]
		switch {
		case inQuote && c == '\\':
			j++
		case c == '"':
			inQuote = !inQuote
		case !inQuote && c == '}' && j+1 < len(p.src) && p.src[j+1] == '}':
			return p.src[start+2 : j], j + 2, nil
		}
	}
	return "", 0, p.errAt(start, "{{ has no closing }}")
}

type token struct {
	text   string
	off    int // offset in src
	quoted bool
	pipe   bool
}

// tokens splits an action body into words, quoted literals and pipes.
func (p *parser) tokens(body string, base int) ([]token, error) {
	var toks []token
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '|':
			toks = append(toks, token{text: "|", off: base + i, pipe: true})
			i++
		case c == '"':
			j := i + 1
			for j < len(body) && body[j] != '"' {
				if body[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(body) {
				return nil, p.errAt(base+i, "unterminated string literal")
			}
			s, err := strconv.Unquote(body[i : j+1])
			if err != nil {
				return nil, p.errAt(base+i, "bad string literal %s: %v", body[i:j+1], err)
			}
			toks = append(toks, token{text: s, off: base + i, quoted: true})
			i = j + 1
		default:
			j := i
			for j < len(body) && !strings.ContainsRune(" \t\n\r|\"", rune(body[j])) {
				j++
			}
			toks = append(toks, token{text: body[i:j], off: base + i})
			i = j
		}
	}
	return toks, nil
}

// action turns "value args... | fn | fn" into a node.
func (p *parser) action(toks []token) (node, error) {
	end := len(toks)
	for i, t := range toks {
		if t.pipe {
			end = i
			break
		}
	}
	if end == 0 {
		return node{}, p.errAt(toks[0].off, "| needs a value before it (%s)", knownVars)
	}
	n, err := p.value(toks[:end])
	if err != nil {
		return node{}, err
	}
	for i := end; i < len(toks); i += 2 {
		if i+1 >= len(toks) || toks[i+1].pipe {
			return node{}, p.errAt(toks[i].off, "| must be followed by a function (%s)", knownFuncs)
		}
		t := toks[i+1]
		f, ok := filters[t.text]
		if !ok || t.quoted {
			return node{}, p.errAt(t.off, "unknown function %q (want %s)", t.text, knownFuncs)
		}
		if i+2 < len(toks) && !toks[i+2].pipe {
			return node{}, p.errAt(toks[i+2].off, "function %s takes no argument, got %q", t.text, toks[i+2].text)
		}
		n.filters = append(n.filters, f)
	}
	return n, nil
}

// value parses the variable part of an action.
func (p *parser) value(toks []token) (node, error) {
	head, args := toks[0], toks[1:]
	if head.quoted {
		if len(args) > 0 {
			return node{}, p.errAt(args[0].off, "a string literal takes no argument, got %q", args[0].text)
		}
		return node{op: opText, text: head.text}, nil
	}
	if o, ok := noArgs[head.text]; ok {
		if len(args) > 0 {
			return node{}, p.errAt(args[0].off, "%s takes no argument, got %q", head.text, args[0].text)
		}
		return node{op: o}, nil
	}
	switch head.text {
	case "key":
		return p.keyValue(head, args)
	case "rand", "payload":
		return p.sizedValue(head, args)
	}
	if _, ok := filters[head.text]; ok {
		return node{}, p.errAt(head.off, "function %s needs a value before it ({{user | %s}}) or stands alone to open a block ({{%s}}...{{end}})", head.text, head.text, head.text)
	}
	return node{}, p.errAt(head.off, "unknown variable %q (want %s)", head.text, knownVars)
}

func (p *parser) keyValue(head token, args []token) (node, error) {
	switch len(args) {
	case 0:
		return node{op: opKey}, nil
	case 1:
		ks, err := ParseKeySpace(args[0].text)
		if err != nil {
			return node{}, p.errAt(args[0].off, "%v", err)
		}
		p.random = true
		return node{op: opKeyDraw, keys: ks}, nil
	default:
		return node{}, p.errAt(args[1].off, "key takes one key space (uniform:N or zipf:N:S), got also %q", args[1].text)
	}
}

func (p *parser) sizedValue(head token, args []token) (node, error) {
	limit, o := int64(maxRand), opRand
	if head.text == "payload" {
		limit, o = MaxPayload, opPayload
	}
	if len(args) != 1 {
		return node{}, p.errAt(head.off, "%s takes one number, e.g. {{%s 100}}", head.text, head.text)
	}
	n, err := strconv.ParseInt(args[0].text, 10, 64)
	if err != nil || n < 1 || n > limit || args[0].quoted {
		return node{}, p.errAt(args[0].off, "%s: %q must be an integer in 1..%d", head.text, args[0].text, limit)
	}
	p.random = true
	return node{op: o, n: n}, nil
}

// mergeText joins adjacent unfiltered literals, so "a{{"b"}}c" renders as one copy.
func mergeText(nodes []node) []node {
	out := nodes[:0]
	for _, n := range nodes {
		if k := len(out) - 1; k >= 0 && n.op == opText && n.filters == nil && out[k].op == opText && out[k].filters == nil {
			out[k].text += n.text
			continue
		}
		out = append(out, n)
	}
	return out
}
