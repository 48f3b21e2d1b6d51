package disk

import (
	"io"
	"sync"
)

// Memory is a Backing held in memory, for tests and benchmarks that should
// not touch the file system.
type Memory struct {
	mu  sync.RWMutex
	buf []byte
}

// NewMemory returns a zeroed backing of size bytes.
func NewMemory(size int64) *Memory { return &Memory{buf: make([]byte, size)} }

// ReadAt implements io.ReaderAt.
func (m *Memory) ReadAt(p []byte, off int64) (int, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if off < 0 || off >= int64(len(m.buf)) {
		return 0, io.EOF
	}
	n := copy(p, m.buf[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// WriteAt implements io.WriterAt; writes past the end are cut short.
func (m *Memory) WriteAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if off < 0 || off >= int64(len(m.buf)) {
		return 0, io.ErrShortWrite
	}
	n := copy(m.buf[off:], p)
	if n < len(p) {
		return n, io.ErrShortWrite
	}
	return n, nil
}

// Close implements io.Closer; the content stays readable for inspection.
func (m *Memory) Close() error { return nil }

// Bytes returns the content; the caller must not use it while the disk runs.
func (m *Memory) Bytes() []byte { return m.buf }
