package record

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

func readAll(t *testing.T, dir string) []Request {
	t.Helper()
	var got []Request
	if err := ReadRequests(dir, func(r Request) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return got
}

// independentRows reads every Parquet file of the record with parquet-go's
// schema-less row reader, by column name: no use of the recorder's row
// struct, so a record only this package could decode would fail here.
func independentRows(t *testing.T, dir string) []map[string]parquet.Value {
	t.Helper()
	files, err := RequestFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]parquet.Value
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		info, _ := f.Stat()
		pf, err := parquet.OpenFile(f, info.Size())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		names := []string{}
		for _, leaf := range pf.Schema().Columns() {
			names = append(names, strings.Join(leaf, "."))
		}
		r := parquet.NewReader(pf)
		rows := make([]parquet.Row, 64)
		for {
			n, err := r.ReadRows(rows)
			for _, row := range rows[:n] {
				m := map[string]parquet.Value{}
				for _, v := range row {
					m[names[v.Column()]] = v
				}
				out = append(out, m)
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		r.Close()
		f.Close()
	}
	return out
}

// TestKilledRecorderKeepsSealedSegments stands for a controller killed with
// SIGKILL: the recorder is never closed. Everything recorded before the
// last checkpoint must be readable, by ReadRequests and by an independent
// reader, and nothing after it may be half-read.
func TestKilledRecorderKeepsSealedSegments(t *testing.T) {
	dir := t.TempDir()
	rec, err := NewRecorderWith(dir, Options{WindowS: 1, HorizonS: 2, SegmentEvery: 1 << 40, Meta: map[string]string{"faultbench.run_id": "r1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { close(rec.stop); <-rec.done }()
	reqs := randomRequests(3000, 7) // scheduled 0..30 s
	for _, r := range reqs[:1000] {
		rec.Record(r)
	}
	if err := rec.checkpoint(); err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs[1000:2500] {
		rec.Record(r)
	}
	if err := rec.checkpoint(); err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs[2500:] {
		rec.Record(r) // in the open segment when the "kill" comes
	}

	got := readAll(t, dir)
	if len(got) != 2500 {
		t.Fatalf("read %d requests from the killed record, want the 2500 sealed ones", len(got))
	}
	for i := range got {
		if got[i] != reqs[i] {
			t.Fatalf("request %d: got %+v, want %+v", i, got[i], reqs[i])
		}
	}
	rows := independentRows(t, dir)
	if len(rows) != 2500 {
		t.Fatalf("independent reader: %d rows, want 2500", len(rows))
	}
	for i, m := range rows {
		if m["t_start_s"].Double() != reqs[i].StartS || string(m["outcome"].ByteArray()) != reqs[i].Outcome.String() || string(m["target"].ByteArray()) != reqs[i].Target {
			t.Fatalf("independent reader, row %d: %v, want %+v", i, m, reqs[i])
		}
	}
	meta, err := ReadMeta(dir)
	if err != nil || meta["faultbench.run_id"] != "r1" {
		t.Fatalf("ReadMeta = %v, %v; want run id r1", meta, err)
	}
	// windows.csv already holds the final windows: starts reach 24.99 s,
	// so windows ending by 22.99 s (0..21) are settled.
	windows, _, err := ReadWindows(filepath.Join(dir, WindowsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(windows) != 22 {
		t.Fatalf("windows.csv holds %d windows, want 22 settled ones", len(windows))
	}
	var offered int64
	for _, w := range windows {
		offered += w.Offered
	}
	if offered != 2200 {
		t.Fatalf("windows.csv offers %d, want 2200 (100 a window)", offered)
	}
}

func TestRecorderCloseMergesSegments(t *testing.T) {
	dir := t.TempDir()
	meta := map[string]string{"faultbench.schema": "2"}
	rec, err := NewRecorderWith(dir, Options{WindowS: 1, HorizonS: 2, SegmentEvery: 1 << 40, SegmentRows: 700, Meta: meta})
	if err != nil {
		t.Fatal(err)
	}
	reqs := randomRequests(2000, 8)
	for i, r := range reqs {
		rec.Record(r)
		if i%500 == 499 {
			if err := rec.checkpoint(); err != nil {
				t.Fatal(err)
			}
		}
	}
	windows, _, err := rec.Close(20)
	if err != nil {
		t.Fatal(err)
	}
	if len(windows) != 20 {
		t.Fatalf("Close returned %d windows, want 20", len(windows))
	}
	if _, err := os.Stat(filepath.Join(dir, SegmentDir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("requests/ still there after a clean close (%v)", err)
	}
	files, err := RequestFiles(dir)
	if err != nil || len(files) != 1 || filepath.Base(files[0]) != RequestsFile {
		t.Fatalf("RequestFiles = %v, %v; want requests.parquet alone", files, err)
	}
	got := readAll(t, dir)
	if len(got) != len(reqs) {
		t.Fatalf("merged record has %d rows, want %d", len(got), len(reqs))
	}
	for i := range got {
		if got[i] != reqs[i] {
			t.Fatalf("row %d: got %+v, want %+v", i, got[i], reqs[i])
		}
	}
	if m, err := ReadMeta(dir); err != nil || m["faultbench.schema"] != "2" {
		t.Fatalf("ReadMeta of merged file = %v, %v", m, err)
	}
	if _, _, err := rec.Close(20); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// A merge stopped after its rename but before removing requests/ leaves
// both forms: readers take the merged file, and a second merge only
// cleans up.
func TestMergeInterruptedAfterRename(t *testing.T) {
	dir := t.TempDir()
	rec, err := NewRecorderWith(dir, Options{WindowS: 1, HorizonS: 2, SegmentEvery: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { close(rec.stop); <-rec.done }()
	reqs := randomRequests(300, 9)
	for _, r := range reqs {
		rec.Record(r)
	}
	if err := rec.checkpoint(); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dir, SegmentDir, segmentName(0))
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, RequestsFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if n := len(readAll(t, dir)); n != 300 {
		t.Fatalf("read %d rows with both forms present, want 300 (not doubled)", n)
	}
	if err := MergeSegments(dir, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, SegmentDir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("requests/ not removed")
	}
}

func TestRunState(t *testing.T) {
	write := func(dir, name, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name     string
		files    map[string]string
		complete bool
		reason   string
	}{
		{"csv from another tool", map[string]string{RequestsCSV: "x"}, true, ""},
		{"clean", map[string]string{EventsFile: `{"t_s":0,"kind":"phase.start"}` + "\n" + `{"t_s":9,"kind":"run.end"}` + "\n", RequestsFile: "x"}, true, ""},
		{"killed", map[string]string{EventsFile: `{"t_s":0,"kind":"phase.start"}` + "\n" + `{"t_s":3,"kind":"fault.inj`, SegmentDir + "/" + segmentName(0): "x"}, false, "killed before it ended"},
		{"interrupted", map[string]string{EventsFile: `{"t_s":4,"kind":"run.interrupted"}` + "\n" + `{"t_s":4,"kind":"run.end"}` + "\n", RequestsFile: "x"}, false, "interrupted"},
		{"killed while merging", map[string]string{EventsFile: `{"t_s":9,"kind":"run.end"}` + "\n", SegmentDir + "/" + segmentName(0): "x"}, false, "not merged"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for n, b := range c.files {
				write(dir, n, b)
			}
			st, err := RunState(dir)
			if err != nil {
				t.Fatal(err)
			}
			if st.Complete != c.complete || !strings.Contains(st.Reason, c.reason) {
				t.Fatalf("RunState = %+v, want complete=%v with a reason containing %q", st, c.complete, c.reason)
			}
		})
	}
}

func TestReadEventsTornLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), EventsFile)
	os.WriteFile(path, []byte(`{"t_s":1,"kind":"a"}`+"\n"+`{"t_s":2,"ki`), 0o644)
	ev, err := ReadEvents(path)
	if err != nil || len(ev) != 1 {
		t.Fatalf("torn last line: %v, %v; want the one whole event", ev, err)
	}
	os.WriteFile(path, []byte(`{"t_s":1,"kind":"a"}`+"\n"+`{"t_s":2,"ki`+"\n"), 0o644)
	if _, err := ReadEvents(path); err == nil || !strings.Contains(err.Error(), ":2:") {
		t.Fatalf("a bad whole line must be an error naming line 2, got %v", err)
	}
}

func TestNoRecordIsAnError(t *testing.T) {
	dir := t.TempDir()
	if _, err := RequestFiles(dir); err == nil || !strings.Contains(err.Error(), "not a results directory") {
		t.Fatalf("empty dir: %v", err)
	}
	if err := os.Mkdir(filepath.Join(dir, SegmentDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, dir); len(got) != 0 {
		t.Fatalf("a run killed before its first segment: %d requests", len(got))
	}
}

// A run whose controller lost its lease with the warden ran to its end, but
// its faults were reverted early: it is not a complete measurement.
func TestRunStateWardenLost(t *testing.T) {
	dir := t.TempDir()
	log, err := CreateEventLog(filepath.Join(dir, EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	log.Add(Event{TS: 3, Kind: EventWardenLost, Detail: "lease renewal failed"})
	log.Add(Event{TS: 10, Kind: EventRunEnd})
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, RequestsFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := RunState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Complete || !strings.Contains(st.Reason, "warden") || !strings.Contains(st.Reason, "3.0 s") {
		t.Fatalf("state %+v: want incomplete, naming the warden and when", st)
	}
}

// A run where a fault's revert failed ran to its end, but the fault may
// have outlived its planned end: incomplete, naming the fault and node. So
// is one where a fault could not be injected: the scenario did not happen.
func TestRunStateRevertFailed(t *testing.T) {
	for _, tc := range []struct {
		events   []Event
		complete bool
		want     []string
	}{
		// A fault that was never injected: the scenario did not happen either.
		{[]Event{{TS: 2, Kind: EventFaultError, Fault: "delay", Node: 2, Detail: "inject delay on node 2: the queue did not take effect"}},
			false, []string{"could not be injected", "delay on node 2", "2.0 s"}},
		{[]Event{{TS: 2, Kind: EventFaultError, Detail: "inject delay on node 2: a"}, {TS: 3, Kind: EventFaultError, Detail: "inject loss on node 1: b"}},
			false, []string{"2 injections failed"}},
		{[]Event{{TS: 7, Kind: EventFaultError, Fault: "bandwidth", Node: 2, Detail: "clear bandwidth on node 2: revert bandwidth on node 2: tc qdisc del\nCannot find device"}},
			false, []string{"bandwidth on node 2", "7.0 s", "Cannot find device"}},
		{[]Event{{TS: 7, Kind: EventFaultError, Detail: "revert link-down on link [1 2]: x"}, {TS: 8, Kind: EventFaultError, Detail: "revert loss on node 1: y"}},
			false, []string{"link-down on link [1 2]", "2 reverts failed"}},
	} {
		dir := t.TempDir()
		log, err := CreateEventLog(filepath.Join(dir, EventsFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range tc.events {
			log.Add(e)
		}
		log.Add(Event{TS: 10, Kind: EventRunEnd})
		if err := log.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, RequestsFile), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := RunState(dir)
		if err != nil {
			t.Fatal(err)
		}
		if st.Complete != tc.complete || strings.Contains(st.Reason, "\n") {
			t.Errorf("%v: state %+v, want complete %v on one line", tc.events, st, tc.complete)
		}
		for _, w := range tc.want {
			if !strings.Contains(st.Reason, w) {
				t.Errorf("reason %q does not name %q", st.Reason, w)
			}
		}
	}
}
