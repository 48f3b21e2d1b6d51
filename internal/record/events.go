package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
)

// EventLog appends events to events.jsonl, one JSON object a line. Each
// event is written through at once, so an interrupted or killed run keeps
// its timeline. It is safe for concurrent use.
type EventLog struct {
	mu  sync.Mutex
	f   *os.File
	err error
	all []Event
}

// CreateEventLog creates path.
func CreateEventLog(path string) (*EventLog, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &EventLog{f: f}, nil
}

// Add writes e. The first write error is kept and returned by Close.
func (l *EventLog) Add(e Event) {
	b, err := json.Marshal(e)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, e)
	if l.err != nil {
		return
	}
	if err == nil {
		_, err = l.f.Write(append(b, '\n'))
	}
	l.err = err
}

// Events returns a copy of every event added so far.
func (l *EventLog) Events() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.all...)
}

// Close closes the file and returns the first write error.
func (l *EventLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return l.err
	}
	err := l.f.Close()
	l.f = nil
	if l.err != nil {
		return l.err
	}
	return err
}

// ReadEvents reads events.jsonl. A missing file is no events; a bad line is
// an error naming it, except a last line without its newline, which a
// killed writer can leave torn and which is skipped.
func ReadEvents(path string) ([]Event, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Event
	br := bufio.NewReaderSize(f, 64*1024)
	for line := 1; ; line++ {
		b, rerr := br.ReadBytes('\n')
		if rerr != nil && rerr != io.EOF {
			return nil, fmt.Errorf("%s:%d: %w", path, line, rerr)
		}
		torn := rerr == io.EOF && len(b) > 0
		if len(bytes.TrimSpace(b)) > 0 {
			if len(b) > 1<<20 {
				return nil, fmt.Errorf("%s:%d: line longer than 1 MiB", path, line)
			}
			var e Event
			if err := json.Unmarshal(b, &e); err != nil {
				if torn {
					return out, nil
				}
				return nil, fmt.Errorf("%s:%d: %v", path, line, err)
			}
			out = append(out, e)
		}
		if rerr == io.EOF {
			return out, nil
		}
	}
}
