package record

import (
	"bytes"
	"math"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
)

func randomRequests(n int, seed int64) []Request {
	rng := rand.New(rand.NewSource(seed))
	out := make([]Request, n)
	for i := range out {
		out[i] = Request{
			StartS:   float64(i) * 0.01,
			LatencyS: rng.ExpFloat64() * 0.005,
			Outcome:  Outcome(rng.Intn(NumOutcomes)),
			Node:     1 + rng.Intn(4),
			Client:   rng.Intn(3),
			Bytes:    int64(rng.Intn(30000)),
			Status:   []int{0, 200, 503}[rng.Intn(3)],
			Target:   []string{"/p/1", "/p/2,x", `/q"uote`}[rng.Intn(3)],
			Check:    []string{"", "", "create: json:$.a,b", `read: header:"X"`}[rng.Intn(4)],
		}
	}
	return out
}

// readsBack fails t unless dir's record is want, row for row.
func readsBack(t *testing.T, dir string, want []Request) {
	t.Helper()
	var got []Request
	if err := ReadRequests(dir, func(r Request) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d rows, wrote %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("row %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestParquetRoundTrip(t *testing.T) {
	dir := t.TempDir()
	want := randomRequests(20000, 1)
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
}

// Rows keep their order through the encoder goroutine, a drain (which
// ends it, as copySegment does before copying) and a second encoder, with
// a segment's small pages.
func TestParquetWriterDrainThenWrite(t *testing.T) {
	dir := t.TempDir()
	want := randomRequests(3*batchRows+17, 5)
	w, err := createSegment(filepath.Join(dir, RequestsFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	half := len(want) / 2
	for i, r := range want {
		if i == half {
			if err := w.drain(); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if w.Rows() != int64(len(want)) {
		t.Fatalf("Rows() = %d, want %d", w.Rows(), len(want))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	readsBack(t, dir, want)
}

func TestCSVRoundTrip(t *testing.T) {
	want := randomRequests(500, 2)
	var buf bytes.Buffer
	w, err := NewCSVWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range want {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	var got []Request
	if err := ReadCSV(&buf, "x.csv", func(r Request) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		// CSV keeps microseconds.
		if math.Abs(got[i].StartS-want[i].StartS) > 1e-6 || math.Abs(got[i].LatencyS-want[i].LatencyS) > 1e-6 {
			t.Fatalf("row %d times: got %+v want %+v", i, got[i], want[i])
		}
		got[i].StartS, got[i].LatencyS = want[i].StartS, want[i].LatencyS
		if got[i] != want[i] {
			t.Fatalf("row %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestReadCSVErrorsNameLineAndColumn(t *testing.T) {
	cases := map[string]string{
		"t_start_s,latency_s\n": `header has no column "outcome"`,
		strings.Join(Columns, ",") + "\n1,0.1,ok,1,0,10,200,/\n2,x,ok,1,0,1,200,/\n": `x.csv:3: column "latency_s"`,
		strings.Join(Columns, ",") + "\n1,0.1,fine,1,0,10,200,/\n":                   `x.csv:2: column "outcome"`,
		"": "empty file",
	}
	for in, want := range cases {
		err := ReadCSV(strings.NewReader(in), "x.csv", func(Request) error { return nil })
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadCSV(%q) = %v, want error containing %q", in, err, want)
		}
	}
}

func FuzzReadCSV(f *testing.F) {
	f.Add(strings.Join(Columns, ",") + "\n1,0.1,ok,1,0,10,200,/p/1\n")
	f.Add("outcome,t_start_s,latency_s,node,client,bytes,status,target,extra\nok,1,2,3,4,5,6,/,z\n")
	f.Fuzz(func(t *testing.T, in string) {
		_ = ReadCSV(strings.NewReader(in), "fuzz.csv", func(r Request) error {
			if r.Outcome >= numOutcomes || r.StartS < 0 || r.LatencyS < 0 || math.IsNaN(r.LatencyS) {
				t.Fatalf("invalid request accepted: %+v", r)
			}
			return nil
		})
	})
}

func FuzzDecodeWindows(f *testing.F) {
	f.Add(strings.Join(WindowColumns, ",") + ",redundancy\n0,10,9,1,0,0,0,0,1.8,0.01,0.01,0.02,0.03,0.04,1\n")
	f.Fuzz(func(t *testing.T, in string) {
		_, _, _ = DecodeWindows(strings.NewReader(in), "fuzz.csv")
	})
}

func TestWindowAggregatorMatchesDirectCount(t *testing.T) {
	reqs := randomRequests(5000, 3) // 50 s of requests at 100/s
	a := NewWindowAggregator(5, 1)
	for _, r := range reqs {
		a.Add(r)
	}
	a.AddSeries("redundancy", 12, 1)
	ws := a.Close(60)
	if len(ws) != 12 {
		t.Fatalf("got %d windows, want 12 (60 s / 5 s)", len(ws))
	}
	for i, w := range ws {
		var want [NumOutcomes]int64
		var lat []float64
		for _, r := range reqs {
			if int(r.StartS/5) == i {
				want[r.Outcome]++
				lat = append(lat, r.LatencyS)
			}
		}
		if w.Outcomes != want {
			t.Fatalf("window %d outcomes %v, want %v", i, w.Outcomes, want)
		}
		if len(lat) == 0 {
			if !math.IsNaN(w.LatencyMean) || w.Offered != 0 {
				t.Fatalf("empty window %d: %+v", i, w)
			}
			continue
		}
		var max float64
		for _, l := range lat {
			max = math.Max(max, l)
		}
		if math.Abs(w.LatencyMax-max) > max*0.002+2e-6 {
			t.Fatalf("window %d max %v, want %v", i, w.LatencyMax, max)
		}
		if got := w.Series["redundancy"]; (i == 2) != (got == 1) {
			t.Fatalf("window %d redundancy %v", i, got)
		}
	}
	dir := t.TempDir()
	p := filepath.Join(dir, WindowsFile)
	if err := WriteWindows(p, ws, []string{"redundancy"}); err != nil {
		t.Fatal(err)
	}
	back, series, err := ReadWindows(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(ws) || len(series) != 1 || back[3].Outcomes != ws[3].Outcomes {
		t.Fatalf("windows.csv round trip lost data: %d windows, series %v", len(back), series)
	}
}
