package app

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/faultbench/faultbench/internal/systems/ssm/wire"
)

// The session value is self-describing so that a client can verify, without
// any state but the sequence number it last saw, that it got back exactly
// the session it last wrote:
//
//	FBSS1 user=<user> seq=<n> size=<n> crc=<8 hex digits>\n<payload: size bytes>
//
// The payload is a deterministic function of (user, seq) (letters a–z from a
// xorshift generator seeded by FNV-1a(user) and seq), and crc is the CRC-32C
// of the header line up to (not including) " crc=", then "\n", then the
// payload. VerifySession checks all of it.
const sessionMagic = "FBSS1"

// MaxUserLen bounds a user name; users match [A-Za-z0-9._-]{1,64}.
const MaxUserLen = 64

// Session is a parsed session header.
type Session struct {
	User string
	Seq  uint64
	Size int
	CRC  uint32
}

// Verification errors; a driver counts every one of them as data_error.
var (
	// ErrSessionCorrupt: the value does not parse, or fails its checksum or
	// its deterministic payload.
	ErrSessionCorrupt = errors.New("session corrupt")
	// ErrSessionWrongUser: a valid session of another user.
	ErrSessionWrongUser = errors.New("session of another user")
	// ErrSessionStale: a valid session older than the last one written.
	ErrSessionStale = errors.New("session stale")
	// ErrSessionAhead: a valid session newer than expected (a write the
	// client was never told succeeded).
	ErrSessionAhead = errors.New("session ahead of the client")
)

// ValidUser reports whether u is an acceptable user name.
func ValidUser(u string) bool {
	if len(u) == 0 || len(u) > MaxUserLen {
		return false
	}
	for i := 0; i < len(u); i++ {
		c := u[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func payloadSeed(user string, seq uint64) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(user))
	x := h.Sum64() ^ (seq * 0x9E3779B97F4A7C15)
	if x == 0 {
		x = 1
	}
	return x
}

func appendPayload(dst []byte, user string, seq uint64, size int) []byte {
	x := payloadSeed(user, seq)
	for range size {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		dst = append(dst, 'a'+byte(x%26))
	}
	return dst
}

// NewSession builds the value of user's session number seq with a payload
// of size bytes.
func NewSession(user string, seq uint64, size int) []byte {
	head := fmt.Sprintf("%s user=%s seq=%d size=%d", sessionMagic, user, seq, size)
	b := make([]byte, 0, len(head)+15+size)
	b = append(b, head...)
	b = append(b, " crc=00000000\n"...)
	payloadAt := len(b)
	b = appendPayload(b, user, seq, size)
	crc := crcOf(head, b[payloadAt:])
	copy(b[len(head)+5:], fmt.Sprintf("%08x", crc))
	return b
}

func crcOf(head string, payload []byte) uint32 {
	buf := make([]byte, 0, len(head)+1)
	buf = append(buf, head...)
	buf = append(buf, '\n')
	c := wire.Checksum(buf)
	return crc32Update(c, payload)
}

// ParseSession parses and checks a session value: header, checksum and the
// deterministic payload. Any failure is ErrSessionCorrupt.
func ParseSession(b []byte) (Session, error) {
	var s Session
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 || nl > 256 {
		return s, fmt.Errorf("%w: no header line", ErrSessionCorrupt)
	}
	line, payload := string(b[:nl]), b[nl+1:]
	head, crcField, ok := strings.Cut(line, " crc=")
	if !ok || len(crcField) != 8 {
		return s, fmt.Errorf("%w: no crc field", ErrSessionCorrupt)
	}
	f := strings.Fields(head)
	if len(f) != 4 || f[0] != sessionMagic || !strings.HasPrefix(f[1], "user=") || !strings.HasPrefix(f[2], "seq=") || !strings.HasPrefix(f[3], "size=") {
		return s, fmt.Errorf("%w: bad header %q", ErrSessionCorrupt, head)
	}
	s.User = f[1][5:]
	var err1, err2, err3 error
	s.Seq, err1 = strconv.ParseUint(f[2][4:], 10, 64)
	size, err2 := strconv.Atoi(f[3][5:])
	crc, err3 := strconv.ParseUint(crcField, 16, 32)
	if err1 != nil || err2 != nil || err3 != nil || !ValidUser(s.User) || size != len(payload) {
		return s, fmt.Errorf("%w: bad header %q (payload %d bytes)", ErrSessionCorrupt, line, len(payload))
	}
	s.Size, s.CRC = size, uint32(crc)
	if crcOf(head, payload) != s.CRC {
		return s, fmt.Errorf("%w: checksum mismatch", ErrSessionCorrupt)
	}
	x := payloadSeed(s.User, s.Seq)
	for i := range payload {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		if payload[i] != 'a'+byte(x%26) {
			return s, fmt.Errorf("%w: payload differs at byte %d", ErrSessionCorrupt, i)
		}
	}
	return s, nil
}

// VerifySession is what a client checks on every 200 response: the body is
// an intact session of user with sequence number wantSeq (the last one it
// wrote, or the one a POST must have produced).
func VerifySession(b []byte, user string, wantSeq uint64) error {
	s, err := ParseSession(b)
	if err != nil {
		return err
	}
	switch {
	case s.User != user:
		return fmt.Errorf("%w: %q, want %q", ErrSessionWrongUser, s.User, user)
	case s.Seq < wantSeq:
		return fmt.Errorf("%w: seq %d, want %d", ErrSessionStale, s.Seq, wantSeq)
	case s.Seq > wantSeq:
		return fmt.Errorf("%w: seq %d, want %d", ErrSessionAhead, s.Seq, wantSeq)
	}
	return nil
}
