package reqtmpl

import (
	"encoding/base64"
	"math/rand"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Vars are the per-user and per-request values a template reads. One
// goroutine owns a Vars; see the package doc.
type Vars struct {
	User   int        // the emulated user's number
	Client int        // the client emulator's number
	Seq    uint64     // per-request counter; Next advances it
	Value  []byte     // {{value}}: set by the driver (kv: the versioned value to write)
	Rand   *rand.Rand // required when Template.Random(); from the scenario seed

	key    int64
	keySet bool
}

// Next starts a new request: Seq advances and the key is forgotten, so
// the next {{key SPACE}} draws a fresh one.
func (v *Vars) Next() {
	v.Seq++
	v.key, v.keySet = 0, false
}

// SetKey fixes the request's key: {{key}} and every {{key SPACE}} render it
// until Next.
func (v *Vars) SetKey(k int64) { v.key, v.keySet = k, true }

// Key returns the request's key and whether one was set or drawn.
func (v *Vars) Key() (int64, bool) { return v.key, v.keySet }

// Render appends the template rendered with v to dst and returns the
// extended slice. It allocates only when dst lacks capacity.
func (t *Template) Render(dst []byte, v *Vars) []byte {
	return renderNodes(dst, t.nodes, v)
}

// RenderString is Render into a new string, for tests and one-off uses.
func (t *Template) RenderString(v *Vars) string { return string(t.Render(nil, v)) }

func renderNodes(dst []byte, nodes []node, v *Vars) []byte {
	for i := range nodes {
		n := &nodes[i]
		start := len(dst)
		dst = renderValue(dst, n, v)
		for _, f := range n.filters {
			dst = apply(f, dst, start)
		}
	}
	return dst
}

func renderValue(dst []byte, n *node, v *Vars) []byte {
	switch n.op {
	case opText:
		return append(dst, n.text...)
	case opUser:
		return strconv.AppendInt(dst, int64(v.User), 10)
	case opClient:
		return strconv.AppendInt(dst, int64(v.Client), 10)
	case opSeq:
		return strconv.AppendUint(dst, v.Seq, 10)
	case opKey:
		return strconv.AppendInt(dst, v.key, 10)
	case opKeyDraw:
		if !v.keySet {
			v.SetKey(n.keys.Draw(v.Rand))
		}
		return strconv.AppendInt(dst, v.key, 10)
	case opRand:
		return strconv.AppendInt(dst, v.Rand.Int63n(n.n), 10)
	case opPayload:
		return appendPayload(dst, int(n.n), v.Rand)
	case opValue:
		return append(dst, v.Value...)
	case opBlock:
		return renderNodes(dst, n.children, v)
	}
	panic("reqtmpl: unknown node op " + strconv.Itoa(int(n.op)))
}

const payloadChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// appendPayload appends n random characters, ten from each 64-bit draw.
func appendPayload(dst []byte, n int, rng *rand.Rand) []byte {
	dst = slices.Grow(dst, n)
	for n > 0 {
		r := rng.Uint64()
		for k := 0; k < 10 && n > 0; k++ {
			dst = append(dst, payloadChars[r&63])
			r >>= 6
			n--
		}
	}
	return dst
}

// apply rewrites dst[start:] through f. The encoded form is appended after
// the raw bytes, then moved down over them, so no scratch buffer is needed.
func apply(f filter, dst []byte, start int) []byte {
	raw := len(dst) - start
	switch f {
	case fBase64:
		enc := base64.StdEncoding.EncodedLen(raw)
		dst = slices.Grow(dst, enc)[:start+raw+enc]
		base64.StdEncoding.Encode(dst[start+raw:], dst[start:start+raw])
	case fJSON:
		if !needsJSONEscape(dst[start:]) {
			return dst
		}
		for i := start; i < start+raw; {
			r, size := utf8.DecodeRune(dst[i : start+raw])
			dst = appendJSONRune(dst, dst[i], r, size)
			i += size
		}
	case fURL:
		for i := start; i < start+raw; i++ {
			dst = appendURLByte(dst, dst[i])
		}
	}
	n := copy(dst[start:], dst[start+raw:])
	return dst[:start+n]
}

func needsJSONEscape(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

const hexDigits = "0123456789abcdef"

func appendJSONRune(dst []byte, c byte, r rune, size int) []byte {
	switch {
	case c == '"' || c == '\\':
		return append(dst, '\\', c)
	case c == '\n':
		return append(dst, '\\', 'n')
	case c == '\r':
		return append(dst, '\\', 'r')
	case c == '\t':
		return append(dst, '\\', 't')
	case c < 0x20:
		return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
	case r == utf8.RuneError && size == 1:
		return append(dst, `\ufffd`...)
	case r == '\u2028' || r == '\u2029':
		// Valid JSON, but not valid JavaScript: escape as encoding/json does.
		return append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&15])
	case c < utf8.RuneSelf:
		return append(dst, c)
	default:
		return utf8.AppendRune(dst, r)
	}
}

func appendURLByte(dst []byte, c byte) []byte {
	switch {
	case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9',
		c == '-', c == '.', c == '_', c == '~':
		return append(dst, c)
	}
	return append(dst, '%', "0123456789ABCDEF"[c>>4], "0123456789ABCDEF"[c&15])
}
