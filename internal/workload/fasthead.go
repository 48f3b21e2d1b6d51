package workload

import (
	"bufio"
	"bytes"
)

// The response head of a plain GET, read without allocating.
//
// net/http.ReadResponse allocates a Response, a Header map and a string per
// header line: about a dozen allocations an attempt, most of what the http
// driver allocates. peekHead reads the common head — HTTP/1.0 or 1.1, a
// three-digit status, well-formed header lines, the body framed by
// Content-Length, by the server's close, or not at all — straight from the
// connection's buffer. Anything else (chunked or other transfer codings,
// folded or malformed lines, duplicate or odd Content-Length, a head longer
// than the buffer) it leaves alone, consuming nothing, and the caller reads
// the response with net/http as before. It gives up on the first such line
// it sees, as soon as that line is complete, so a malformed answer fails as
// fast as net/http would fail it. FuzzPeekHeadAgreesWithNetHTTP holds the
// two paths to the same status, body bytes, outcome and connection reuse.

// plainHead is what the driver needs from a response head.
type plainHead struct {
	status int
	// length is the body's Content-Length, or -1 when the body runs until
	// the server closes the connection.
	length int64
	// close says the server closes the connection after this response.
	close bool
}

// peekHead looks for a plain response head at the start of br. It returns
// the head and its length in bytes, still unread in br; or n == 0 and no
// error when the head is not plain and net/http must read it (nothing is
// consumed); or an error from reading the connection (a timeout, EOF,
// reset), which net/http would have met too.
func peekHead(br *bufio.Reader) (h plainHead, n int, err error) {
	var (
		scanned   int // bytes of complete lines already checked
		lines     int
		proto10   bool
		hasLength bool
		conn      connTokens
	)
	h.length = -1
	want := 1
	for {
		// Wait for want bytes (one more than last time), then look at
		// whatever has arrived.
		_, err := br.Peek(want)
		buf, _ := br.Peek(br.Buffered())
		// Check every complete line not yet checked.
		for {
			i := bytes.IndexByte(buf[scanned:], '\n')
			if i < 0 {
				break
			}
			line := buf[scanned : scanned+i]
			scanned += i + 1
			if k := len(line); k > 0 && line[k-1] == '\r' {
				line = line[:k-1]
			}
			lines++
			switch {
			case lines == 1:
				var ok bool
				if h.status, proto10, ok = parseStatusLine(line); !ok {
					return plainHead{}, 0, nil
				}
			case len(line) == 0:
				return finishHead(h, proto10, hasLength, conn), scanned, nil
			default:
				if !headerLine(line, &h, &hasLength, &conn) {
					return plainHead{}, 0, nil
				}
			}
		}
		if err != nil {
			if err == bufio.ErrBufferFull {
				return plainHead{}, 0, nil // a long head: net/http reads it
			}
			return plainHead{}, 0, err
		}
		if want = br.Buffered() + 1; want > br.Size() {
			return plainHead{}, 0, nil
		}
	}
}

// finishHead applies net/http's framing rules (transfer.go: fixLength,
// shouldClose) to a head without Transfer-Encoding.
func finishHead(h plainHead, proto10, hasLength bool, conn connTokens) plainHead {
	if proto10 {
		h.close = conn.close || !conn.keepAlive
	} else {
		h.close = conn.close
	}
	switch {
	case h.status/100 == 1 || h.status == 204 || h.status == 304:
		h.length = 0 // no body, whatever Content-Length says
	case !hasLength:
		h.length, h.close = -1, true // the body runs until the server closes
	}
	return h
}

// parseStatusLine accepts "HTTP/1.x DDD" optionally followed by a space
// and a reason: the lines net/http parses to the same status and version.
func parseStatusLine(line []byte) (status int, proto10, ok bool) {
	const prefix = "HTTP/1."
	if len(line) < len(prefix)+5 || string(line[:len(prefix)]) != prefix {
		return 0, false, false
	}
	switch line[len(prefix)] {
	case '0':
		proto10 = true
	case '1':
	default:
		return 0, false, false
	}
	rest := line[len(prefix)+1:]
	if rest[0] != ' ' {
		return 0, false, false
	}
	code := rest[1:]
	if len(code) > 3 && code[3] != ' ' {
		return 0, false, false
	}
	if len(code) < 3 {
		return 0, false, false
	}
	for _, c := range code[:3] {
		if c < '0' || c > '9' {
			return 0, false, false
		}
		status = status*10 + int(c-'0')
	}
	return status, proto10, true
}

// connTokens are the Connection header's tokens that matter.
type connTokens struct{ close, keepAlive bool }

// headerLine checks one header line and notes the framing headers. It
// returns false for anything net/http might read differently: a
// continuation line, a key that is not a token, a value with a control
// character, Transfer-Encoding, or a second or non-numeric Content-Length.
func headerLine(line []byte, h *plainHead, hasLength *bool, conn *connTokens) bool {
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 {
		return false
	}
	key, value := line[:colon], trimSpace(line[colon+1:])
	for _, c := range key {
		if !tokenByte(c) {
			return false
		}
	}
	for _, c := range value {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	switch {
	case bytes.EqualFold(key, []byte("content-length")):
		if *hasLength || len(value) == 0 || len(value) > 18 {
			return false
		}
		var n int64
		for _, c := range value {
			if c < '0' || c > '9' {
				return false
			}
			n = n*10 + int64(c-'0')
		}
		h.length, *hasLength = n, true
	case bytes.EqualFold(key, []byte("transfer-encoding")):
		return false
	case bytes.EqualFold(key, []byte("connection")):
		for tok := range bytes.SplitSeq(value, []byte(",")) {
			tok = trimSpace(tok)
			conn.close = conn.close || bytes.EqualFold(tok, []byte("close"))
			conn.keepAlive = conn.keepAlive || bytes.EqualFold(tok, []byte("keep-alive"))
		}
	}
	return true
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// tokenByte reports whether c may appear in a header field name (RFC 7230
// token characters, as net/textproto accepts them).
func tokenByte(c byte) bool {
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}
