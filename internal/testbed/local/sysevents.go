package local

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/record"
)

// Reference systems report what they see (membership changes, disk
// failures, reconstruction) as JSON lines on stdout:
//
//	{"kind":"system.member_down","node":2,"detail":"...","unix_s":1763790000.5}
//
// forwardOutput copies a node's stdout into its log and turns every such
// line into a system.* event on the run's timeline, stamped with the run
// clock (unix_s is converted by the clock's offset from the wall clock, so a
// line read late keeps the time it was written). Other lines are only logged.
// It returns when r reaches EOF: when the node and everything holding its
// stdout have exited.
func (c *Processes) forwardOutput(node int, r io.ReadCloser, log *os.File) {
	defer r.Close()
	defer log.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		_, _ = log.Write(append(line, '\n'))
		if e, ok := systemEvent(line, c.spec.Clock.Now(), time.Now()); ok {
			if e.Node == 0 {
				e.Node = node
			}
			c.emit(e)
		}
	}
	// A line over 1 MiB ends the scan: keep draining so the node never blocks.
	_, _ = io.Copy(log, r)
}

// systemEvent decodes one stdout line as a system event; now is the run
// clock and wall the wall clock at reading time.
func systemEvent(line []byte, now time.Duration, wall time.Time) (record.Event, bool) {
	if !bytes.HasPrefix(bytes.TrimSpace(line), []byte(`{`)) || !bytes.Contains(line, []byte(`"system.`)) {
		return record.Event{}, false
	}
	var m struct {
		Kind   string   `json:"kind"`
		Node   int      `json:"node"`
		Detail string   `json:"detail"`
		UnixS  *float64 `json:"unix_s"`
	}
	if json.Unmarshal(line, &m) != nil || !strings.HasPrefix(m.Kind, "system.") || len(m.Kind) > 100 {
		return record.Event{}, false
	}
	ts := now.Seconds()
	if m.UnixS != nil {
		if lag := float64(wall.UnixNano())/1e9 - *m.UnixS; lag > 0 && lag < ts {
			ts -= lag
		}
	}
	return record.Event{TS: ts, Kind: m.Kind, Node: m.Node, Detail: m.Detail}, true
}
