package local

import (
	"testing"
	"time"
)

func TestSystemEventLines(t *testing.T) {
	wall := time.Unix(1000, 0)
	now := 30 * time.Second
	e, ok := systemEvent([]byte(`{"kind":"system.member_down","node":2,"detail":"3 beats missed","unix_s":999.5}`), now, wall)
	if !ok || e.Kind != "system.member_down" || e.Node != 2 || e.Detail != "3 beats missed" || e.TS != 29.5 {
		t.Fatalf("got %+v %v", e, ok)
	}
	for _, line := range []string{
		`listening on 127.0.0.11:8080`,
		`{"kind":"node.up"}`,
		`{"kind":"system.x","unix_s":"soon"}`,
		`{"kind": "system.`,
	} {
		if e, ok := systemEvent([]byte(line), now, wall); ok {
			t.Errorf("%q taken as an event: %+v", line, e)
		}
	}
	// A time from the future or before the run is clamped to the read time.
	if e, _ := systemEvent([]byte(`{"kind":"system.y","unix_s":2000}`), now, wall); e.TS != 30 {
		t.Errorf("future unix_s gave TS %v", e.TS)
	}
}

func FuzzSystemEvent(f *testing.F) {
	f.Add([]byte(`{"kind":"system.view","node":1,"detail":"[1 2]","unix_s":5}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, ok := systemEvent(line, time.Minute, time.Unix(100, 0))
		if ok && (e.TS < 0 || e.TS > 60) {
			t.Fatalf("event time %v outside the run so far", e.TS)
		}
	})
}
