// Package wire is the stub↔brick protocol of SSM: length-prefixed binary
// frames over one TCP stream per stub and brick.
//
// A stub opens a connection and writes the 4-byte Preface; from then on both
// sides exchange frames
//
//	length u32 | type u8 | id u64 | body (length-9 bytes)
//
// all integers big-endian. The id names the stub's operation; a brick echoes
// it in its reply. Bodies by type:
//
//	Write      klen u8 | key | expiry i64 (Unix ms) | checksum u32 | budget u32 (µs) | sent i64 (Unix µs) | value
//	Read       klen u8 | key | expiry i64 | checksum u32 | budget u32 | sent i64
//	WriteAck   status u8
//	ReadReply  status u8 | value (present when status is OK)
//	Beacon     brick u16 | incarnation u64
//	Error      status u8 | text (UTF-8, why the request was refused)
//	Backup     as Write: a write a primary brick ships to a backup (the
//	           passive style); it is stored and never answered
//
// The budget is the time the stub is still willing to wait when it sends; a
// brick that dequeues the request after that time may discard it (Ling, Kiciman and Fox 2004,
// §3.4). A relative budget keeps the protocol independent of the two
// clocks. The stub's send time (its wall clock) lets a brick also charge
// the time a request spent in transit against its budget without trusting
// the clocks to agree: the brick compares each request's one-way delay
// (its receipt time minus sent) with the smallest it has seen on the
// stream, so the clocks' offset cancels and only the excess — queueing on a
// slow or lossy path — counts (as LEDBAT measures one-way delay). Sent 0
// means unknown: the budget then starts at receipt.
//
// Decode never panics on any input and never reads beyond the frame; a frame
// longer than the reader's limit is ErrTooLarge and the stream cannot be
// resynchronised, so its reader must answer with an Error and close it.
package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Preface opens every stub→brick stream. It also lets a brick serve HTTP
// (health, stats, control) on the same port: an HTTP request never starts
// with these bytes.
const Preface = "SSM2"

// KeyLen is the length of every key. A session key is derived from the user
// (e.g. a hash), so a fixed length costs nothing and bounds every frame.
const KeyLen = 16

// Key is a session key.
type Key [KeyLen]byte

// Type is a frame type.
type Type uint8

// Frame types.
const (
	TWrite Type = iota + 1
	TRead
	TWriteAck
	TReadReply
	TBeacon
	TError
	// TBackup is a write a primary brick acknowledged, shipped to a backup
	// after the fact (the passive replication style): the backup stores
	// it and answers nothing. Its body is a Write's.
	TBackup
)

func (t Type) String() string {
	switch t {
	case TWrite:
		return "write"
	case TRead:
		return "read"
	case TWriteAck:
		return "write-ack"
	case TReadReply:
		return "read-reply"
	case TBeacon:
		return "beacon"
	case TError:
		return "error"
	case TBackup:
		return "backup"
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// Status is a brick's answer code.
type Status uint8

// Statuses.
const (
	OK         Status = iota
	NotFound          // no state under this key and expiry (never written, lost in a restart, or overwritten by a later write with another expiry)
	Corrupt           // the brick holds the state but its own checksum check failed
	Expired           // the expiry has passed
	BadRequest        // malformed frame
	TooLarge          // value above the brick's limit
	BadKey            // key of the wrong length
)

func (s Status) String() string {
	switch s {
	case OK:
		return "ok"
	case NotFound:
		return "not-found"
	case Corrupt:
		return "corrupt"
	case Expired:
		return "expired"
	case BadRequest:
		return "bad-request"
	case TooLarge:
		return "too-large"
	case BadKey:
		return "bad-key"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// Errors of Decode and ReadFrame.
var (
	// ErrMalformed is wrapped by every Decode error: the frame is too
	// short for its type, has trailing bytes where none are allowed, or has
	// an unknown type.
	ErrMalformed = errors.New("ssm/wire: malformed frame")
	// ErrTooLarge is returned by ReadFrame for a frame above the limit.
	ErrTooLarge = errors.New("ssm/wire: frame too large")
)

// HeaderLen is the length of a frame's fixed part (length, type, id).
const HeaderLen = 4 + 1 + 8

// Msg is one decoded frame. Key and Value alias the buffer given to Decode.
type Msg struct {
	Type        Type
	ID          uint64
	Key         []byte // Write, Read, Backup; len is KeyLen in every valid request, checked by the brick
	Expiry      int64  // Unix milliseconds
	Checksum    uint32 // CRC-32C of the value
	Budget      uint32 // microseconds
	Sent        int64  // Write, Read: the stub's wall clock when sent, Unix µs; 0 = unknown
	Status      Status
	Value       []byte // Write, Backup, ReadReply
	Brick       uint16 // Beacon
	Incarnation uint64 // Beacon
	Text        string // Error
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the CRC-32C every layer of SSM uses for values.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// Append encodes m as one frame (length prefix included) onto dst.
func Append(dst []byte, m *Msg) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, byte(m.Type))
	dst = binary.BigEndian.AppendUint64(dst, m.ID)
	switch m.Type {
	case TWrite, TRead, TBackup:
		dst = append(dst, byte(len(m.Key)))
		dst = append(dst, m.Key...)
		dst = binary.BigEndian.AppendUint64(dst, uint64(m.Expiry))
		dst = binary.BigEndian.AppendUint32(dst, m.Checksum)
		dst = binary.BigEndian.AppendUint32(dst, m.Budget)
		dst = binary.BigEndian.AppendUint64(dst, uint64(m.Sent))
		if m.Type != TRead {
			dst = append(dst, m.Value...)
		}
	case TWriteAck:
		dst = append(dst, byte(m.Status))
	case TReadReply:
		dst = append(dst, byte(m.Status))
		dst = append(dst, m.Value...)
	case TBeacon:
		dst = binary.BigEndian.AppendUint16(dst, m.Brick)
		dst = binary.BigEndian.AppendUint64(dst, m.Incarnation)
	case TError:
		dst = append(dst, byte(m.Status))
		dst = append(dst, m.Text...)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// Decode parses one frame without its 4-byte length prefix (what ReadFrame
// returns). On error the returned Msg still carries Type and ID when the
// frame was long enough to hold them, so a brick can address its Error reply.
func Decode(b []byte) (Msg, error) {
	var m Msg
	if len(b) < HeaderLen-4 {
		return m, fmt.Errorf("%w: %d bytes, need at least %d", ErrMalformed, len(b), HeaderLen-4)
	}
	m.Type = Type(b[0])
	m.ID = binary.BigEndian.Uint64(b[1:9])
	body := b[9:]
	short := func() (Msg, error) {
		return m, fmt.Errorf("%w: %v body of %d bytes is too short", ErrMalformed, m.Type, len(body))
	}
	switch m.Type {
	case TWrite, TRead, TBackup:
		if len(body) < 1 {
			return short()
		}
		klen := int(body[0])
		if len(body) < 1+klen+24 {
			return short()
		}
		m.Key = body[1 : 1+klen]
		rest := body[1+klen:]
		m.Expiry = int64(binary.BigEndian.Uint64(rest))
		m.Checksum = binary.BigEndian.Uint32(rest[8:])
		m.Budget = binary.BigEndian.Uint32(rest[12:])
		m.Sent = int64(binary.BigEndian.Uint64(rest[16:]))
		rest = rest[24:]
		if m.Type != TRead {
			m.Value = rest
		} else if len(rest) != 0 {
			return m, fmt.Errorf("%w: read has %d trailing bytes", ErrMalformed, len(rest))
		}
	case TWriteAck:
		if len(body) != 1 {
			return m, fmt.Errorf("%w: write-ack body of %d bytes, want 1", ErrMalformed, len(body))
		}
		m.Status = Status(body[0])
	case TReadReply:
		if len(body) < 1 {
			return short()
		}
		m.Status = Status(body[0])
		m.Value = body[1:]
	case TBeacon:
		if len(body) != 10 {
			return m, fmt.Errorf("%w: beacon body of %d bytes, want 10", ErrMalformed, len(body))
		}
		m.Brick = binary.BigEndian.Uint16(body)
		m.Incarnation = binary.BigEndian.Uint64(body[2:])
	case TError:
		if len(body) < 1 {
			return short()
		}
		m.Status = Status(body[0])
		m.Text = string(body[1:])
	default:
		return m, fmt.Errorf("%w: unknown type %d", ErrMalformed, uint8(m.Type))
	}
	return m, nil
}

// ReadFrame reads one frame from r and returns it without its length prefix
// in a newly allocated slice (the caller owns it). A frame whose length is
// above max is ErrTooLarge and leaves the stream unusable (skipping it
// would mean reading that much). A frame shorter than the fixed header is
// read past and answered with ErrMalformed: the stream is still in step,
// so the caller may go on reading.
func ReadFrame(r *bufio.Reader, max int) ([]byte, error) {
	return ReadFrameInto(r, max, nil)
}

// ReadFrameInto is ReadFrame reading into buf's memory when the frame fits
// in its capacity (and into a new slice when it does not), so a reader
// that is done with each frame before it reads the next allocates nothing.
// The frame aliases buf: the caller owns both and must not reuse buf while
// it still needs the frame.
func ReadFrameInto(r *bufio.Reader, max int, buf []byte) ([]byte, error) {
	var lb [4]byte
	if _, err := io.ReadFull(r, lb[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(lb[:])
	if int64(n) > int64(max) {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, n, max)
	}
	if n < HeaderLen-4 {
		if _, err := r.Discard(int(n)); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		return nil, fmt.Errorf("%w: frame length %d below header", ErrMalformed, n)
	}
	b := buf[:0]
	if cap(b) < int(n) {
		b = make([]byte, n)
	}
	b = b[:n]
	if _, err := io.ReadFull(r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}
