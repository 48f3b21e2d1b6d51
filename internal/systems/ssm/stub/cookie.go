package stub

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/faultbench/faultbench/internal/systems/ssm/wire"
)

// MaxBricks bounds W and the bricks a cookie can name.
const MaxBricks = 255

// Cookie is what a write returns and a read needs (Ling, Kiciman and Fox 2004, §3.2): the key,
// the expiry, the value's checksum and the bricks that acknowledged the
// write. The client (browser) keeps it; the stub keeps nothing.
type Cookie struct {
	Key      wire.Key
	Expiry   time.Time // millisecond precision
	Checksum uint32    // CRC-32C of the value
	Bricks   []uint16  // bricks holding the value, in acknowledgement order
}

const cookieVersion = 1

// MarshalBinary encodes c as
//
//	version u8 | key [16] | expiry i64 (Unix ms) | checksum u32 | n u8 | brick u16 × n | check u32
//
// where check is the CRC-32C of everything before it.
func (c Cookie) MarshalBinary() ([]byte, error) {
	if len(c.Bricks) == 0 || len(c.Bricks) > MaxBricks {
		return nil, fmt.Errorf("ssm stub: a cookie names 1..%d bricks, not %d", MaxBricks, len(c.Bricks))
	}
	b := make([]byte, 0, 1+wire.KeyLen+8+4+1+2*len(c.Bricks)+4)
	b = append(b, cookieVersion)
	b = append(b, c.Key[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(c.Expiry.UnixMilli()))
	b = binary.BigEndian.AppendUint32(b, c.Checksum)
	b = append(b, byte(len(c.Bricks)))
	for _, id := range c.Bricks {
		b = binary.BigEndian.AppendUint16(b, id)
	}
	return binary.BigEndian.AppendUint32(b, wire.Checksum(b)), nil
}

// String is the cookie as unpadded base64url, for an HTTP header.
func (c Cookie) String() string {
	b, err := c.MarshalBinary()
	if err != nil {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCookie parses what MarshalBinary produced. Any damage — wrong
// length, unknown version, no bricks, a check mismatch — is ErrCookieCorrupt.
func DecodeCookie(b []byte) (Cookie, error) {
	var c Cookie
	const fixed = 1 + wire.KeyLen + 8 + 4 + 1
	if len(b) < fixed+2+4 {
		return c, fmt.Errorf("%w: %d bytes", ErrCookieCorrupt, len(b))
	}
	body, check := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if wire.Checksum(body) != check {
		return c, fmt.Errorf("%w: checksum mismatch", ErrCookieCorrupt)
	}
	if body[0] != cookieVersion {
		return c, fmt.Errorf("%w: version %d", ErrCookieCorrupt, body[0])
	}
	copy(c.Key[:], body[1:])
	c.Expiry = time.UnixMilli(int64(binary.BigEndian.Uint64(body[1+wire.KeyLen:])))
	c.Checksum = binary.BigEndian.Uint32(body[1+wire.KeyLen+8:])
	n := int(body[fixed-1])
	if n == 0 || len(body) != fixed+2*n {
		return c, fmt.Errorf("%w: %d bricks in %d bytes", ErrCookieCorrupt, n, len(body))
	}
	for i := range n {
		c.Bricks = append(c.Bricks, binary.BigEndian.Uint16(body[fixed+2*i:]))
	}
	return c, nil
}

// ParseCookie decodes the String form.
func ParseCookie(s string) (Cookie, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cookie{}, fmt.Errorf("%w: %v", ErrCookieCorrupt, err)
	}
	return DecodeCookie(b)
}

// Errors a stub operation returns; match with errors.Is.
var (
	// ErrCookieCorrupt: Read's cookie fails its checksum (or does not parse).
	ErrCookieCorrupt = errors.New("ssm: cookie corrupt")
	// ErrStateExpired: Read's cookie names an expiry that has passed.
	ErrStateExpired = errors.New("ssm: session state expired")
	// ErrStateCorrupt: every brick that answered a Read returned a value
	// that fails the cookie's checksum (or failed its own check), none
	// returned a valid one.
	ErrStateCorrupt = errors.New("ssm: session state corrupt")
	// ErrStateLost: every brick a Read asked answered that it does not hold
	// the state (restarted bricks, or a later write with another expiry).
	ErrStateLost = errors.New("ssm: session state lost")
	// ErrOverloaded: rejected at once, without sending, because too few
	// live bricks have an open sending window (Ling, Kiciman and Fox 2004, §3.4).
	ErrOverloaded = errors.New("ssm: overloaded")
	// ErrUnavailable: too few live bricks (W Q for a write, one of the
	// cookie's bricks for a read), or the bricks went away mid-operation.
	ErrUnavailable = errors.New("ssm: too few live bricks")
	// ErrTimeout: the bricks did not answer enough within Timeout.
	ErrTimeout = errors.New("ssm: timeout")
	// ErrBadRequest: the stub or a brick refused the request itself (value
	// too large, expiry in the past).
	ErrBadRequest = errors.New("ssm: bad request")
	// ErrClosed: the stub was closed.
	ErrClosed = errors.New("ssm: stub closed")
)
