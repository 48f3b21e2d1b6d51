package record

import (
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
