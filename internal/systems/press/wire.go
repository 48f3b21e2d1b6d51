package press

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// MsgType names an intra-cluster message.
type MsgType uint8

const (
	MsgHello       MsgType = iota + 1 // first message on a connection: who is calling
	MsgHeartbeat                      // ha: to the ring successor; robust: to every peer
	MsgJoin                           // a (re)started node asks to be let in
	MsgView                           // the coordinator's membership after a join
	MsgFailed                         // ha: Node was declared failed
	MsgCached                         // sender now caches File
	MsgEvicted                        // sender no longer caches File
	MsgSync                           // sender's whole cache (on join/merge)
	MsgForward                        // please send me File (request ReqID)
	MsgFile                           // the answer to a forward: Data, or OK=false
	MsgRemoteFault                    // via3, via5: the remote memory write the sender posted to this node failed
	msgTypeEnd
)

var msgNames = [...]string{"", "hello", "heartbeat", "join", "view", "failed", "cached", "evicted", "sync", "forward", "file", "remote-fault"}

func (t MsgType) String() string {
	if t > 0 && t < msgTypeEnd {
		return msgNames[t]
	}
	return fmt.Sprintf("msg(%d)", uint8(t))
}

// Message is one intra-cluster message. Which fields matter depends on Type;
// the rest are zero. Load is piggy-backed on every message.
type Message struct {
	Type    MsgType
	From    uint16   // sender's node id
	Inc     uint32   // sender's incarnation
	Seq     uint32   // per (sender, receiver) sequence number, from 1
	Round   uint32   // sender's heartbeat round (ha checks it)
	Load    uint32   // sender's open client requests
	View    uint32   // Hello, Heartbeat, Join, View, Failed: sender's view number
	Node    uint16   // Failed: the failed node; RemoteFault: the node whose write failed (the sender)
	File    uint32   // Cached, Evicted, Forward, File
	ReqID   uint64   // Forward, File
	OK      bool     // File: Data is the page
	Members []uint16 // View
	Files   []uint32 // Sync
	Data    []byte   // File
}

// Frame layout (big endian):
//
//	magic u16 | type u8 | hsum u8 | from u16 | inc u32 | seq u32 | round u32 | load u32 | bodyLen u32 | body | crc32 u32
//
// The CRC (IEEE) covers header and body; hsum, a checksum of the other
// header bytes, lets a receiver reject a bogus length before waiting for
// the body it promises. Every mode sends both; only robust checks them and
// resynchronises on the magic after a bad frame. perf and ha trust the
// length field like a byte stream does, so a wrong size corrupts every frame
// after it, or leaves the reader waiting for bytes that never come.
const (
	magic     = 0xFB5E
	headerLen = 26
	lenOffset = 22 // where bodyLen sits in the header
	crcLen    = 4
	// MaxBody bounds a frame body; longer length fields are corrupt.
	MaxBody  = 256 << 10
	maxFrame = headerLen + MaxBody + crcLen
)

// ErrCorrupt is returned by Decoder.Next (perf, ha) for a frame that cannot
// be parsed: bad magic, impossible length, unknown type or malformed body.
var ErrCorrupt = errors.New("press: corrupt intra-cluster message")

func bodyLen(m *Message) int {
	switch m.Type {
	case MsgHello, MsgHeartbeat, MsgJoin:
		return 4
	case MsgView:
		return 4 + 2 + 2*len(m.Members)
	case MsgFailed, MsgRemoteFault:
		return 4 + 2
	case MsgCached, MsgEvicted:
		return 4
	case MsgSync:
		return 4 + 4*len(m.Files)
	case MsgForward:
		return 8 + 4
	case MsgFile:
		return 8 + 4 + 1 + len(m.Data)
	}
	return 0
}

// AppendFrame appends m's frame to dst and returns the extended slice. It
// fails only for an unknown type or a body longer than MaxBody.
func AppendFrame(dst []byte, m *Message) ([]byte, error) {
	if m.Type == 0 || m.Type >= msgTypeEnd {
		return dst, fmt.Errorf("press: cannot encode message type %d", m.Type)
	}
	n := bodyLen(m)
	if n > MaxBody || len(m.Members) > 0xFFFF {
		return dst, fmt.Errorf("press: %v message body of %d bytes exceeds %d", m.Type, n, MaxBody)
	}
	start := len(dst)
	be := binary.BigEndian
	dst = be.AppendUint16(dst, magic)
	dst = append(dst, byte(m.Type), 0)
	dst = be.AppendUint16(dst, m.From)
	dst = be.AppendUint32(dst, m.Inc)
	dst = be.AppendUint32(dst, m.Seq)
	dst = be.AppendUint32(dst, m.Round)
	dst = be.AppendUint32(dst, m.Load)
	dst = be.AppendUint32(dst, uint32(n))
	switch m.Type {
	case MsgHello, MsgHeartbeat, MsgJoin:
		dst = be.AppendUint32(dst, m.View)
	case MsgView:
		dst = be.AppendUint32(dst, m.View)
		dst = be.AppendUint16(dst, uint16(len(m.Members)))
		for _, id := range m.Members {
			dst = be.AppendUint16(dst, id)
		}
	case MsgFailed, MsgRemoteFault:
		dst = be.AppendUint32(dst, m.View)
		dst = be.AppendUint16(dst, m.Node)
	case MsgCached, MsgEvicted:
		dst = be.AppendUint32(dst, m.File)
	case MsgSync:
		dst = be.AppendUint32(dst, uint32(len(m.Files)))
		for _, f := range m.Files {
			dst = be.AppendUint32(dst, f)
		}
	case MsgForward:
		dst = be.AppendUint64(dst, m.ReqID)
		dst = be.AppendUint32(dst, m.File)
	case MsgFile:
		dst = be.AppendUint64(dst, m.ReqID)
		dst = be.AppendUint32(dst, m.File)
		ok := byte(0)
		if m.OK {
			ok = 1
		}
		dst = append(dst, ok)
		dst = append(dst, m.Data...)
	}
	dst[start+3] = headerSum(dst[start : start+headerLen])
	return be.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:])), nil
}

// headerSum is a position-weighted 8-bit sum of a header, skipping the byte
// that holds it.
func headerSum(h []byte) byte {
	var s byte
	for i, b := range h[:headerLen] {
		if i != 3 {
			s += b * byte(i+1)
		}
	}
	return s
}

// decodeFrame parses one complete frame (header, body, crc) without
// checking the CRC. Data is copied, so frame may be reused.
func decodeFrame(frame []byte) (Message, error) {
	be := binary.BigEndian
	if len(frame) < headerLen+crcLen || be.Uint16(frame) != magic {
		return Message{}, ErrCorrupt
	}
	m := Message{
		Type:  MsgType(frame[2]),
		From:  be.Uint16(frame[4:]),
		Inc:   be.Uint32(frame[6:]),
		Seq:   be.Uint32(frame[10:]),
		Round: be.Uint32(frame[14:]),
		Load:  be.Uint32(frame[18:]),
	}
	n := int(be.Uint32(frame[lenOffset:]))
	if n != len(frame)-headerLen-crcLen {
		return Message{}, ErrCorrupt
	}
	b := frame[headerLen : headerLen+n]
	bad := func() (Message, error) {
		return Message{}, fmt.Errorf("%w: malformed %v body of %d bytes", ErrCorrupt, m.Type, n)
	}
	switch m.Type {
	case MsgHello, MsgHeartbeat, MsgJoin:
		if n != 4 {
			return bad()
		}
		m.View = be.Uint32(b)
	case MsgView:
		if n < 6 || n != 6+2*int(be.Uint16(b[4:])) {
			return bad()
		}
		m.View = be.Uint32(b)
		k := int(be.Uint16(b[4:]))
		m.Members = make([]uint16, k)
		for i := range k {
			m.Members[i] = be.Uint16(b[6+2*i:])
		}
	case MsgFailed, MsgRemoteFault:
		if n != 6 {
			return bad()
		}
		m.View = be.Uint32(b)
		m.Node = be.Uint16(b[4:])
	case MsgCached, MsgEvicted:
		if n != 4 {
			return bad()
		}
		m.File = be.Uint32(b)
	case MsgSync:
		if n < 4 || uint64(n) != 4+4*uint64(be.Uint32(b)) {
			return bad()
		}
		k := int(be.Uint32(b))
		m.Files = make([]uint32, k)
		for i := range k {
			m.Files[i] = be.Uint32(b[4+4*i:])
		}
	case MsgForward:
		if n != 12 {
			return bad()
		}
		m.ReqID = be.Uint64(b)
		m.File = be.Uint32(b[8:])
	case MsgFile:
		if n < 13 || b[12] > 1 {
			return bad()
		}
		m.ReqID = be.Uint64(b)
		m.File = be.Uint32(b[8:])
		m.OK = b[12] == 1
		m.Data = append([]byte(nil), b[13:]...)
	default:
		return Message{}, fmt.Errorf("%w: unknown message type %d", ErrCorrupt, frame[2])
	}
	return m, nil
}

// Decoder reads frames from a connection.
//
// Without checksums (perf, ha) it trusts the stream: the first frame that
// does not parse ends the connection with ErrCorrupt. With checksums
// (robust) it drops any frame whose CRC fails and scans forward to the next
// magic, counting the frames it lost in Dropped.
type Decoder struct {
	r        *bufio.Reader
	checksum bool
	Dropped  int // robust: corrupt frames skipped so far
}

// NewDecoder reads from r; checksummed selects robust framing.
func NewDecoder(r io.Reader, checksummed bool) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, maxFrame), checksum: checksummed}
}

// Next returns the next message. Errors: the reader's (io.EOF, timeouts),
// or ErrCorrupt without checksums. Each call reads at most what it consumes,
// so a corrupt stream can never make it loop without progress.
func (d *Decoder) Next() (Message, error) {
	be := binary.BigEndian
	inBadRun := false
	skip := func() error {
		if !inBadRun {
			d.Dropped++
			inBadRun = true
		}
		_, err := d.r.Discard(1)
		return err
	}
	for {
		h, err := d.r.Peek(headerLen)
		if err != nil {
			return Message{}, err
		}
		n := int(be.Uint32(h[lenOffset:]))
		if be.Uint16(h) != magic || n > MaxBody || (d.checksum && h[3] != headerSum(h)) {
			if !d.checksum {
				return Message{}, fmt.Errorf("%w: bad frame header", ErrCorrupt)
			}
			if err := skip(); err != nil {
				return Message{}, err
			}
			continue
		}
		frame, err := d.r.Peek(headerLen + n + crcLen)
		if err != nil {
			return Message{}, err
		}
		if d.checksum {
			want := be.Uint32(frame[headerLen+n:])
			if crc32.ChecksumIEEE(frame[:headerLen+n]) != want {
				if err := skip(); err != nil {
					return Message{}, err
				}
				continue
			}
		}
		m, derr := decodeFrame(frame)
		if _, err := d.r.Discard(len(frame)); err != nil {
			return Message{}, err
		}
		if derr != nil {
			if !d.checksum {
				return Message{}, derr
			}
			d.Dropped++
			continue
		}
		return m, nil
	}
}
