// Package pageset is the synthetic page set that static (and press) nodes
// serve and that the workload generator verifies: page i of a set with page
// size S is a deterministic function of (i, S), so a client can tell a
// complete, correct page (ok) from a wrong or corrupt one (data_error)
// without any shared state.
//
// A page starts with a header line naming its number and size, followed by
// printable filler drawn from a generator seeded by the page number:
//
//	<!-- faultbench page 17 size 26624 -->\n
//	kqzv...
//
// Because the header states the size, Verify needs only the path and the body.
package pageset

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Prefix is the URL path prefix of pages: page i is Prefix + strconv.Itoa(i).
const Prefix = "/p/"

// Path returns the URL path of page i.
func Path(i int) string { return Prefix + strconv.Itoa(i) }

// ParsePath returns the page number of a URL path like "/p/17" (a query
// string is ignored); ok is false for any other path.
func ParsePath(path string) (i int, ok bool) {
	if q := strings.IndexByte(path, '?'); q >= 0 {
		path = path[:q]
	}
	rest, found := strings.CutPrefix(path, Prefix)
	if !found || rest == "" || len(rest) > 9 {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
}

func header(i, size int) string {
	return fmt.Sprintf("<!-- faultbench page %d size %d -->\n", i, size)
}

// Size is the length of page i when size bytes are asked for: size, or the
// header's length when size is smaller than the header.
func Size(i, size int) int {
	if h := len(header(i, size)); size < h {
		return h
	}
	return size
}

// Body returns page i of a page set whose pages are size bytes long.
// The caller owns the returned slice.
func Body(i, size int) []byte {
	return Append(nil, i, size)
}

// Append appends page i to dst and returns the extended slice; servers use it
// to reuse buffers.
func Append(dst []byte, i, size int) []byte {
	h := header(i, size)
	n := Size(i, size)
	dst = append(dst, h...)
	return appendFiller(dst, uint64(i), n-len(h))
}

const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \n" // 64: one byte per 6 bits

// filler is an xorshift generator seeded by the page number; a page is
// cheap to regenerate, so nothing is cached.
type filler struct{ x uint64 }

func newFiller(seed uint64) filler { return filler{seed*0x9E3779B97F4A7C15 + 0x2545F4914F6CDD1D} }

// word fills b (8 bytes) with the next printable bytes.
func (f *filler) word(b *[8]byte) {
	f.x ^= f.x << 13
	f.x ^= f.x >> 7
	f.x ^= f.x << 17
	v := f.x
	for k := range b {
		b[k] = alphabet[v&63]
		v >>= 8
	}
}

func appendFiller(dst []byte, seed uint64, n int) []byte {
	f := newFiller(seed)
	var w [8]byte
	for ; n >= 8; n -= 8 {
		f.word(&w)
		dst = append(dst, w[:]...)
	}
	if n > 0 {
		f.word(&w)
		dst = append(dst, w[:n]...)
	}
	return dst
}

// Verify reports whether body is the complete, correct page for path. It is
// false for a path that is not a page, a truncated or padded body, and any
// flipped byte. Safe for concurrent use; it does not allocate a page.
func Verify(path string, body []byte) bool {
	i, ok := ParsePath(path)
	if !ok {
		return false
	}
	nl := bytes.IndexByte(body, '\n')
	if nl < 0 || nl > 80 {
		return false
	}
	var gotI, size int
	if _, err := fmt.Sscanf(string(body[:nl+1]), "<!-- faultbench page %d size %d -->\n", &gotI, &size); err != nil {
		return false
	}
	if gotI != i || size < 0 || Size(i, size) != len(body) || string(body[:nl+1]) != header(i, size) {
		return false
	}
	// Regenerate the filler word by word and compare, without a page buffer.
	rest := body[nl+1:]
	f := newFiller(uint64(i))
	var w [8]byte
	for len(rest) > 0 {
		f.word(&w)
		k := min(8, len(rest))
		if string(rest[:k]) != string(w[:k]) {
			return false
		}
		rest = rest[k:]
	}
	return true
}
