package record

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRecorderMeta(t *testing.T) {
	dir := t.TempDir()
	rec, err := NewRecorder(dir, 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	rec.Record(Request{StartS: 0.5, LatencyS: 0.01, Outcome: OK, Node: 1, Target: "/p/1"})
	rec.SetMeta(map[string]string{"faultbench.run_id": "r1", "faultbench.schema_version": "1"})
	rec.SetMeta(map[string]string{"faultbench.schema_version": "2"})
	if _, _, err := rec.Close(1); err != nil {
		t.Fatal(err)
	}
	rec.SetMeta(map[string]string{"late": "x"}) // after Close: dropped, no panic
	m, err := ReadMeta(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m["faultbench.run_id"] != "r1" || m["faultbench.schema_version"] != "2" || m["late"] != "" {
		t.Fatalf("metadata %v", m)
	}
	n := 0
	if err := ReadRequests(dir, func(Request) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("requests after metadata: %d, %v", n, err)
	}
}

// The first segment is open before the first request, and SetMeta still
// reaches it while it holds no row: the sealed segment (what a killed run
// keeps) carries every key. A record closed without any request leaves no
// segment behind.
func TestSetMetaOpensTheFirstSegment(t *testing.T) {
	dir := t.TempDir()
	rec, err := NewRecorderWith(dir, Options{WindowS: 1, HorizonS: 10, SegmentEvery: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	rec.SetMeta(map[string]string{"faultbench.run_id": "r1"})
	rec.SetMeta(map[string]string{"faultbench.schema_version": "2"})
	if rec.seg.cur == nil {
		t.Fatal("no segment open before the first request")
	}
	rec.Record(Request{StartS: 0.5, LatencyS: 0.01, Outcome: OK, Node: 1, Target: "/p/1"})
	if err := rec.checkpoint(); err != nil { // seals it, as the run does every 2 s
		t.Fatal(err)
	}
	m, err := ReadMeta(dir) // from the sealed segment: nothing is merged yet
	if err != nil || m["faultbench.run_id"] != "r1" || m["faultbench.schema_version"] != "2" {
		t.Fatalf("sealed segment's metadata %v, %v", m, err)
	}
	if _, _, err := rec.Close(1); err != nil {
		t.Fatal(err)
	}

	empty := t.TempDir()
	rec, err = NewRecorder(empty, 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	rec.SetMeta(map[string]string{"faultbench.run_id": "r2"})
	if _, _, err := rec.Close(1); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(filepath.Join(empty, SegmentDir)); len(entries) > 0 {
		t.Fatalf("an empty record left %v in %s", entries, SegmentDir)
	}
}
