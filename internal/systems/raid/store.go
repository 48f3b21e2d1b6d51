package raid

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
	"sync/atomic"

	"github.com/faultbench/faultbench/internal/pageset"
	"github.com/faultbench/faultbench/internal/systems/raid/array"
)

// Volume is the block device the store lives on (an *array.Array).
type Volume interface {
	ReadAt(p []byte, off int64) error
	WriteAt(p []byte, off int64) error
	Size() int64
}

// Errors of the store.
var (
	ErrNoPage   = errors.New("no such page")
	ErrTooLarge = errors.New("body larger than the page slot")
	// ErrCorrupt: a stored page failed the store's own checksum. The array
	// already checks every block, so this is a second, end-to-end guard.
	ErrCorrupt = errors.New("stored page failed its checksum")
)

// Page records: page i lives in slot i, a whole number of blocks:
// "FBP1", page number, body length and CRC-32C of the body (4 bytes each,
// little endian), then the body, then zeros.
const (
	recordHeader = 16
	recordMagic  = "FBP1"
)

// slotSize is the bytes a page of pageSize bytes occupies.
func slotSize(pageSize int) int64 {
	n := int64(recordHeader + max(pageSize, 64)) // a tiny page is still its header line
	return (n + array.BlockSize - 1) / array.BlockSize * array.BlockSize
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Store is a static file store on the volume: the page set in fixed slots,
// then a circular access-log region. Get and Put are safe for concurrent
// use; the log is appended by many goroutines and flushed by one.
type Store struct {
	vol      Volume
	pages    int
	pageSize int
	slot     int64
	logBase  int64
	logSize  int64
	bufs     sync.Pool

	// logMu guards logPending only, so appending a line never waits for
	// the disks; flushMu is held across a flush's volume write and guards
	// where the log stands on the volume.
	logMu      sync.Mutex
	logPending []byte
	flushMu    sync.Mutex
	logPos     int64 // region offset where the next flushed line goes
	logCarry   []byte
	logWrapped bool
	logBytes   atomic.Int64
	logErrors  atomic.Int64
}

// NewStore lays out pages of pageSize bytes and a log of logSize bytes on
// vol; it fails when they do not fit.
func NewStore(vol Volume, pages, pageSize int, logSize int64) (*Store, error) {
	s := &Store{vol: vol, pages: pages, pageSize: pageSize, slot: slotSize(pageSize), logSize: logSize}
	s.logBase = int64(pages) * s.slot
	if s.logBase+logSize > vol.Size() {
		return nil, fmt.Errorf("volume of %d bytes cannot hold %d pages of %d bytes and a %d-byte log", vol.Size(), pages, pageSize, logSize)
	}
	s.bufs.New = func() any { b := make([]byte, s.slot); return &b }
	return s, nil
}

// Format writes every page of the page set, in large sequential writes.
func (s *Store) Format() error {
	const batch = 64
	buf := make([]byte, 0, batch*s.slot)
	for first := 0; first < s.pages; first += batch {
		buf = buf[:0]
		for i := first; i < min(first+batch, s.pages); i++ {
			rec := buf[len(buf) : len(buf)+int(s.slot)]
			clear(rec)
			body := pageset.Append(rec[recordHeader:recordHeader], i, s.pageSize)
			encodeHeader(rec, i, body)
			buf = buf[:len(buf)+int(s.slot)]
		}
		if err := s.vol.WriteAt(buf, int64(first)*s.slot); err != nil {
			return fmt.Errorf("formatting pages %d..: %w", first, err)
		}
	}
	return nil
}

func encodeHeader(rec []byte, i int, body []byte) {
	copy(rec, recordMagic)
	binary.LittleEndian.PutUint32(rec[4:], uint32(i))
	binary.LittleEndian.PutUint32(rec[8:], uint32(len(body)))
	binary.LittleEndian.PutUint32(rec[12:], crc32.Checksum(body, crcTable))
}

// Get appends page i's stored body to dst. Errors: ErrNoPage, ErrCorrupt,
// or the volume's (array.ErrFailed, array.ErrUnrecoverable, ...).
func (s *Store) Get(dst []byte, i int) ([]byte, error) {
	if i < 0 || i >= s.pages {
		return dst, fmt.Errorf("%w %d (pages 0 to %d)", ErrNoPage, i, s.pages-1)
	}
	bp := s.bufs.Get().(*[]byte)
	defer s.bufs.Put(bp)
	rec := *bp
	if err := s.vol.ReadAt(rec, int64(i)*s.slot); err != nil {
		return dst, err
	}
	n := binary.LittleEndian.Uint32(rec[8:])
	if string(rec[:4]) != recordMagic || binary.LittleEndian.Uint32(rec[4:]) != uint32(i) || int64(n) > s.slot-recordHeader {
		if s.fabricating() {
			// Solaris's UFS and Apache served what the volume held:
			// so does this store once the volume serves unchecked data.
			return append(dst, rec[recordHeader:recordHeader+s.pageSize]...), nil
		}
		return dst, fmt.Errorf("%w: page %d: bad record header", ErrCorrupt, i)
	}
	body := rec[recordHeader : recordHeader+n]
	if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(rec[12:]) && !s.fabricating() {
		return dst, fmt.Errorf("%w: page %d", ErrCorrupt, i)
	}
	return append(dst, body...), nil
}

// fabricator is implemented by a volume that may serve unchecked data
// (*array.Array after a double failure with double_failure=keep-serving).
type fabricator interface{ Fabricating() bool }

// fabricating reports whether the volume has stopped checking what it
// serves; the store then stops checking too, so that the garbage reaches
// the clients, whose verification records it as data_error, instead of
// turning into 500s that would hide what the emulated system did.
func (s *Store) fabricating() bool {
	f, ok := s.vol.(fabricator)
	return ok && f.Fabricating()
}

// Put replaces page i's body.
func (s *Store) Put(i int, body []byte) error {
	if i < 0 || i >= s.pages {
		return fmt.Errorf("%w %d (pages 0 to %d)", ErrNoPage, i, s.pages-1)
	}
	if int64(len(body)) > s.slot-recordHeader {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(body), s.slot-recordHeader)
	}
	bp := s.bufs.Get().(*[]byte)
	defer s.bufs.Put(bp)
	rec := *bp
	clear(rec)
	copy(rec[recordHeader:], body)
	encodeHeader(rec, i, body)
	return s.vol.WriteAt(rec, int64(i)*s.slot)
}

// maxLogPending bounds the access log held in memory between flushes; lines
// beyond it are dropped (and counted) while the volume refuses writes.
const maxLogPending = 1 << 20

// AppendLog queues one access-log line for the next flush.
func (s *Store) AppendLog(line []byte) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if len(s.logPending)+len(line) > maxLogPending {
		s.logErrors.Add(1)
		return
	}
	s.logPending = append(s.logPending, line...)
}

// FlushLog writes the queued lines to the log region, rewriting the last
// partial block with them. A failed flush drops the lines and is counted.
// Lines appended meanwhile wait for the next flush: a page request never
// waits for a log write stuck on a hung disk (it used to, so a hang on
// write stopped every page of the front end).
func (s *Store) FlushLog() error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.logMu.Lock()
	pending := s.logPending
	s.logPending = nil
	s.logMu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	for len(pending) > 0 {
		room := s.logSize - s.logPos
		part := pending[:min(int64(len(pending)), room)]
		if err := s.writeLog(part); err != nil {
			s.logErrors.Add(1)
			return err
		}
		pending = pending[len(part):]
	}
	return nil
}

// writeLog writes part at logPos (it fits before the region's end). Caller
// holds flushMu.
func (s *Store) writeLog(part []byte) error {
	start := s.logPos - int64(len(s.logCarry))
	data := append(append([]byte(nil), s.logCarry...), part...)
	padded := (int64(len(data)) + array.BlockSize - 1) / array.BlockSize * array.BlockSize
	buf := make([]byte, padded)
	copy(buf, data)
	if err := s.vol.WriteAt(buf, s.logBase+start); err != nil {
		return err
	}
	s.logBytes.Add(int64(len(part)))
	s.logPos += int64(len(part))
	full := s.logPos / array.BlockSize * array.BlockSize
	s.logCarry = append(s.logCarry[:0], data[full-start:]...)
	if s.logPos == s.logSize {
		s.logPos, s.logCarry, s.logWrapped = 0, s.logCarry[:0], true
	}
	return nil
}

// ReadLog returns up to the last n flushed bytes of the access log, read
// back from the volume.
func (s *Store) ReadLog(n int64) ([]byte, error) {
	s.flushMu.Lock()
	pos, wrapped := s.logPos, s.logWrapped
	s.flushMu.Unlock()
	var out []byte
	if wrapped && n > pos {
		tail, err := s.readRegion(max(pos, s.logSize-(n-pos)), s.logSize)
		if err != nil {
			return nil, err
		}
		out = tail
	}
	head, err := s.readRegion(max(0, pos-n), pos)
	if err != nil {
		return nil, err
	}
	return append(out, head...), nil
}

// readRegion reads [from, to) of the log region.
func (s *Store) readRegion(from, to int64) ([]byte, error) {
	if to <= from {
		return nil, nil
	}
	a := from / array.BlockSize * array.BlockSize
	b := (to + array.BlockSize - 1) / array.BlockSize * array.BlockSize
	buf := make([]byte, b-a)
	if err := s.vol.ReadAt(buf, s.logBase+a); err != nil {
		return nil, err
	}
	return buf[from-a : to-a], nil
}
