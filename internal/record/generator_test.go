package record

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// generatorRequests are requests with every generator field in use: sent
// attempts with their lag, refusals of each kind, attempts cut short.
func generatorRequests() []Request {
	reqs := randomRequests(3000, 7)
	for i := range reqs {
		r := &reqs[i]
		r.SendLagS = float64(i%50) * 1e-4
		switch i % 10 {
		case 3:
			r.Refused, r.Outcome, r.LatencyS, r.SendLagS = Refusal(1+i%3), ConnError, 0, 0
		case 7:
			r.CutShort, r.Outcome = true, ConnError
		}
	}
	return reqs
}

func TestGeneratorColumnsRoundTripParquetAndCSV(t *testing.T) {
	want := generatorRequests()
	dir := t.TempDir()
	w, err := CreateParquet(filepath.Join(dir, RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range want {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	readsBack(t, dir, want)

	var buf bytes.Buffer
	cw, err := NewCSVWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range want {
		if err := cw.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := cw.Flush(); err != nil {
		t.Fatal(err)
	}
	header, _, _ := strings.Cut(buf.String(), "\n")
	if wantHeader := strings.Join(append(append([]string{}, Columns...), GeneratorColumns...), ","); header != wantHeader {
		t.Fatalf("CSV header %q, want %q", header, wantHeader)
	}
	var got []Request
	if err := ReadCSV(&buf, "x.csv", func(r Request) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Abs(got[i].SendLagS-want[i].SendLagS) > 1e-6 {
			t.Fatalf("CSV row %d send lag %v, want %v", i, got[i].SendLagS, want[i].SendLagS)
		}
		if got[i].Refused != want[i].Refused || got[i].CutShort != want[i].CutShort {
			t.Fatalf("CSV row %d flags: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

// A requests.parquet written before the generator columns existed reads
// as attempts sent on time, neither refused nor cut short.
func TestParquetWithoutGeneratorColumnsReads(t *testing.T) {
	type oldRow struct {
		TStartS  float64 `parquet:"t_start_s"`
		LatencyS float64 `parquet:"latency_s"`
		Outcome  string  `parquet:"outcome,dict"`
		Node     int32   `parquet:"node"`
		Client   int32   `parquet:"client"`
		Bytes    int64   `parquet:"bytes"`
		Status   int32   `parquet:"status"`
		Target   string  `parquet:"target,dict"`
	}
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[oldRow](f)
	if _, err := w.Write([]oldRow{{1.5, 0.01, "ok", 1, 0, 10, 200, "/p/1"}, {2.5, 2, "conn_abort", 2, 1, 0, 0, "/p/2"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var got []Request
	if err := ReadRequests(dir, func(r Request) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	want := []Request{
		{StartS: 1.5, LatencyS: 0.01, Outcome: OK, Node: 1, Bytes: 10, Status: 200, Target: "/p/1"},
		{StartS: 2.5, LatencyS: 2, Outcome: ConnAbort, Node: 2, Client: 1, Target: "/p/2"},
	}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("old file read as %+v, want %+v", got, want)
	}
}

func TestWindowsCountGeneratorApartAndJudgeValidity(t *testing.T) {
	const length = 1.0 // lag bound 0.1 s
	a := NewWindowAggregator(length, 10)
	add := func(start, lat, lag float64, o Outcome, refused Refusal, cut bool) {
		a.Add(Request{StartS: start, LatencyS: lat, SendLagS: lag, Outcome: o, Refused: refused, CutShort: cut})
	}
	// Window 0: clean, sent on time.
	for i := range 100 {
		add(float64(i)*0.01, 0.01, 0.001, OK, NotRefused, false)
	}
	// Window 1: two refusals with zero latency must not pull the mean down.
	for i := range 98 {
		add(1+float64(i)*0.01, 0.02, 0.001, OK, NotRefused, false)
	}
	add(1.5, 0, 0, ConnError, RefusedMaxInFlight, false)
	add(1.6, 0, 0, ConnError, RefusedNoUser, false)
	// Window 2: the generator sent 5% of its attempts 0.3 s late.
	for i := range 100 {
		lag := 0.001
		if i%20 == 0 {
			lag = 0.3
		}
		add(2+float64(i)*0.01, lag+0.01, lag, OK, NotRefused, false)
	}
	// Window 3: one slow attempt only (a pause): still valid.
	for i := range 100 {
		lag := 0.001
		if i == 50 {
			lag = 0.4
		}
		add(3+float64(i)*0.01, lag+0.01, lag, OK, NotRefused, false)
	}
	// Window 4: an attempt cut short by the end of the run.
	add(4.1, 0.01, 0.001, OK, NotRefused, false)
	add(4.2, 0.7, 0.001, ConnError, NotRefused, true)
	ws := a.Close(5)
	if len(ws) != 5 {
		t.Fatalf("%d windows, want 5", len(ws))
	}
	for i, w := range ws {
		var sum int64
		for _, n := range w.Outcomes {
			sum += n
		}
		if w.Offered != sum+w.GenRefused+w.CutShort {
			t.Errorf("window %d: offered %d != outcomes %d + refused %d + cut short %d", i, w.Offered, sum, w.GenRefused, w.CutShort)
		}
	}
	if w := ws[1]; w.GenRefused != 2 || w.Outcomes[ConnError] != 0 || w.Offered != 100 || math.Abs(w.LatencyMean-0.02) > 1e-9 || w.Valid {
		t.Errorf("window 1 (refusals): %+v", w)
	}
	if w := ws[2]; w.Valid || math.Abs(w.SendLagP99-0.3) > 0.001 {
		t.Errorf("window 2 (late 5%%) should be invalid with p99 lag 0.3: %+v", w)
	}
	if w := ws[3]; !w.Valid || math.Abs(w.SendLagMax-0.4) > 0.001 {
		t.Errorf("window 3 (one pause) should be valid with max lag 0.4: %+v", w)
	}
	if w := ws[4]; w.CutShort != 1 || w.Outcomes[ConnError] != 0 || w.LatencyMax > 0.02 || w.Valid {
		t.Errorf("window 4 (cut short): %+v", w)
	}
	if !ws[0].Valid {
		t.Errorf("window 0 should be valid: %+v", ws[0])
	}

	p := filepath.Join(t.TempDir(), WindowsFile)
	if err := WriteWindows(p, ws, []string{}); err != nil {
		t.Fatal(err)
	}
	back, series, err := ReadWindows(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 0 {
		t.Fatalf("generator columns read back as series %v", series)
	}
	for i := range ws {
		g, w := back[i], ws[i]
		if g.GenRefused != w.GenRefused || g.CutShort != w.CutShort || g.Valid != w.Valid || math.Abs(g.SendLagP99-w.SendLagP99) > 1e-9 {
			t.Errorf("windows.csv row %d read back as %+v, want %+v", i, g, w)
		}
	}
}

// windows.csv written before the generator columns: every window valid,
// series still found after the fixed columns.
func TestDecodeWindowsWithoutGeneratorColumns(t *testing.T) {
	in := strings.Join(WindowColumns, ",") + ",redundancy\n0,10,9,1,0,0,0,0,1.8,0.01,0.01,0.02,0.03,0.04,1\n"
	ws, series, err := DecodeWindows(strings.NewReader(in), "old.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 1 || !ws[0].Valid || ws[0].GenRefused != 0 || len(series) != 1 || ws[0].Series["redundancy"] != 1 || !math.IsNaN(ws[0].SendLagP99) {
		t.Fatalf("old windows.csv read as %+v, series %v", ws, series)
	}
}
