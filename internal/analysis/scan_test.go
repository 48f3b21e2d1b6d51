package analysis

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/faultbench/faultbench/internal/benchcpu"
	"github.com/faultbench/faultbench/internal/record"
)

// writeScanRun writes a 100 s run at 2000/s in four phases with a crash of
// node 2 in the second (timeouts and aborts, so a failure interval), and
// with everything whose count depends on the order of the requests:
// refused and cut-short attempts, send lags, late records, and 1500
// distinct failed checks (more than a period keeps by name). The requests
// go to segments of 4000 rows when segments is set, else to one
// requests.parquet of several units (a unit per page: unitRows is
// lowered until the test ends).
func writeScanRun(t testing.TB, segments bool) string {
	t.Helper()
	old := unitRows
	unitRows = 1
	t.Cleanup(func() { unitRows = old })
	return writeScanRecord(t, segments)
}

// writeScanRecord is writeScanRun without lowering unitRows.
func writeScanRecord(t testing.TB, segments bool) string {
	return writeScanRecordLags(t, segments, true)
}

// writeScanRecordLags is writeScanRecord, unless lags is set with send
// lags all zero (as a generator that kept its schedule records them) and
// every timeout and abort taking exactly its limit, 2 or 3 s (as clients
// record them): then the histograms usually decide the 3σ outliers.
func writeScanRecordLags(t testing.TB, segments, lags bool) string {
	dir := t.TempDir()
	scen := `name: scan
seed: 1
cluster: {system: static, nodes: 4}
workload: {rate: 2000, arrivals: poisson, clients: 4, window: 1s, connect_timeout: 2s, response_timeout: 3s}
phases: [{name: warmup, duration: 25s}, {name: fault, duration: 30s}, {name: recovery, duration: 20.5s}, {name: post, duration: 24.5s}]
faults: [{type: app-crash, node: 2, at: 25s, duration: 30s}]
`
	events := `{"t_s":25,"kind":"fault.inject","node":2,"fault":"app-crash","id":1}` + "\n" + `{"t_s":55,"kind":"fault.clear","node":2,"fault":"app-crash","id":1}` + "\n"
	for name, body := range map[string]string{record.ScenarioFile: scen, record.EventsFile: events} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(21, 22))
	var reqs []record.Request
	tm := 0.0
	for tm < 100 {
		tm += rng.ExpFloat64() / 2000
		r := record.Request{StartS: tm, Outcome: record.OK, Node: 1 + rng.IntN(4), LatencyS: math.Exp(rng.NormFloat64()*0.8 - 5.5), SendLagS: rng.ExpFloat64() / 1e4}
		if !lags {
			r.SendLagS = 0
		}
		if tm >= 25 && tm < 60 && r.Node == 2 {
			r.Outcome, r.LatencyS = []record.Outcome{record.Timeout, record.ConnAbort}[rng.IntN(2)], 2+rng.Float64()
			if !lags {
				r.LatencyS = map[record.Outcome]float64{record.Timeout: 3, record.ConnAbort: 2}[r.Outcome]
			}
		}
		switch u := rng.IntN(400); {
		case u < 20 && tm >= 70 && tm < 72:
			r.Refused, r.Outcome, r.LatencyS = record.RefusedMaxInFlight, record.ConnError, 0
		case u == 1 && tm > 95:
			r.CutShort, r.Outcome = true, record.ConnError
		case u < 40:
			r.Outcome, r.Check = record.DataError, fmt.Sprintf("GET /p/%d: body", rng.IntN(1500))
		case u == 41:
			r.StartS = math.Max(0, tm-10*rng.Float64()) // recorded late, past its window's horizon
		}
		reqs = append(reqs, r)
	}
	if segments {
		for seq := 0; len(reqs) > 0; seq++ {
			n := min(4000, len(reqs))
			writeSegment(t, dir, seq, reqs[:n])
			reqs = reqs[n:]
		}
		return dir
	}
	pw, err := record.CreateParquet(filepath.Join(dir, record.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if err := pw.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestScanWorkersSameResult: the analysis of a record is the same, to the
// bit, whether one goroutine reads it in order or several decode its units
// at once (summary.json byte for byte, and the window series and latency
// distributions).
func TestScanWorkersSameResult(t *testing.T) {
	defer func(f func() int) { scanWorkers = f }(scanWorkers)
	for _, segments := range []bool{false, true} {
		dir := writeScanRun(t, segments)
		units, err := recordUnits(dir)
		if err != nil || len(units) < 5 {
			t.Fatalf("segments=%v: %d units (%v): the test needs several", segments, len(units), err)
		}
		var want *Result
		var wantJSON []byte
		for _, workers := range []int{1, 2, 3, 8} {
			scanWorkers = func() int { return workers }
			res, err := AnalyzeDetail(dir, Options{Complete: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.Summary.Failure == nil || len(res.Summary.Overall.CheckFailures) < maxCheckNames {
				t.Fatalf("segments=%v: the run should have a failure interval and more check names than kept", segments)
			}
			b, err := Marshal(res.Summary)
			if err != nil {
				t.Fatal(err)
			}
			if want == nil {
				want, wantJSON = res, b
				continue
			}
			if !bytes.Equal(b, wantJSON) {
				t.Errorf("segments=%v: summary.json with %d goroutines differs from one goroutine's", segments, workers)
			}
			if !reflect.DeepEqual(nanless(res.Windows), nanless(want.Windows)) || !reflect.DeepEqual(res.Overall.CDF(), want.Overall.CDF()) ||
				!reflect.DeepEqual(res.Failure.Box(), want.Failure.Box()) {
				t.Errorf("segments=%v: windows or distributions with %d goroutines differ from one goroutine's", segments, workers)
			}
		}
	}
}

// TestReadShortcutsSameResult: what spares the scans work (readShortcuts:
// zero lags counted a batch at once or not read at all, pass 2 reading of
// most units only the latencies) changes nothing, to the bit: summary.json
// byte for byte, the window series and the latency distributions, with
// one goroutine or several, for records with and without send lags, in
// one file or in segments.
func TestReadShortcutsSameResult(t *testing.T) {
	defer func(f func() int) { scanWorkers = f }(scanWorkers)
	defer func() { planned = nil }()
	for _, segments := range []bool{false, true} {
		for _, lags := range []bool{true, false} {
			old := unitRows
			unitRows = 1 // a unit per page: a plan per page
			dir := writeScanRecordLags(t, segments, lags)
			uniform, general, decided := 0, 0, 0
			planned = func(plans []unitPlan) {
				for _, p := range plans {
					if p.uniform {
						uniform++
						if !p.outliers {
							decided++
						}
					} else {
						general++
					}
				}
			}
			for _, workers := range []int{1, 2} {
				scanWorkers = func() int { return workers }
				readShortcuts = false
				want, err := AnalyzeDetail(dir, Options{Complete: true})
				readShortcuts = true
				if err != nil {
					t.Fatal(err)
				}
				uniform, general, decided = 0, 0, 0
				got, err := AnalyzeDetail(dir, Options{Complete: true})
				if err != nil {
					t.Fatal(err)
				}
				if uniform == 0 || general == 0 {
					t.Fatalf("segments=%v lags=%v: %d uniform and %d other units: the test needs both", segments, lags, uniform, general)
				}
				if !lags && decided == 0 {
					t.Fatalf("segments=%v: no unit left to pass 1's histograms: the test needs some", segments)
				}
				if got.Summary.Failure == nil || len(got.Summary.Faults) == 0 {
					t.Fatalf("segments=%v lags=%v: the run should have a failure interval and a fault", segments, lags)
				}
				wantJSON, err := Marshal(want.Summary)
				if err != nil {
					t.Fatal(err)
				}
				gotJSON, err := Marshal(got.Summary)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(gotJSON, wantJSON) {
					t.Errorf("segments=%v lags=%v workers=%d: summary.json differs with the shortcuts:\n%s\nwant\n%s", segments, lags, workers, gotJSON, wantJSON)
				}
				if !reflect.DeepEqual(nanless(got.Windows), nanless(want.Windows)) || !reflect.DeepEqual(got.Overall.CDF(), want.Overall.CDF()) ||
					!reflect.DeepEqual(got.Failure.Box(), want.Failure.Box()) {
					t.Errorf("segments=%v lags=%v workers=%d: windows or distributions differ with the shortcuts", segments, lags, workers)
				}
			}
			unitRows = old
		}
	}
}

// nanless replaces NaN by a marker so that DeepEqual compares windows.
func nanless(ws []record.Window) []record.Window {
	out := make([]record.Window, len(ws))
	for i, w := range ws {
		for _, f := range []*float64{&w.LatencyMean, &w.LatencyP50, &w.LatencyP90, &w.LatencyP99, &w.LatencyMax, &w.SendLagP99, &w.SendLagMax} {
			if math.IsNaN(*f) {
				*f = -1
			}
		}
		out[i] = w
	}
	return out
}

// TestScanFirstErrorInOrder: with several goroutines, the error reported
// is the one earliest in the record, as one goroutine reading in order
// would report it.
func TestScanFirstErrorInOrder(t *testing.T) {
	defer func(f func() int) { scanWorkers = f }(scanWorkers)
	dir := t.TempDir()
	for seq := 0; seq < 6; seq++ {
		var reqs []record.Request
		for i := 0; i < 500; i++ {
			r := record.Request{StartS: float64(seq*500+i) * 0.01, LatencyS: 0.002, Outcome: record.OK}
			if (seq == 2 && i == 100) || (seq == 4 && i == 0) {
				r.LatencyS = -1
			}
			reqs = append(reqs, r)
		}
		writeSegment(t, dir, seq, reqs)
	}
	for _, workers := range []int{1, 4} {
		scanWorkers = func() int { return workers }
		_, err := Analyze(dir, Options{})
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte("request 1101: latency_s -1")) {
			t.Errorf("%d goroutines: %v, want the error of request 1101", workers, err)
		}
	}
}

// BenchmarkAnalyze analyses writeScanRecord's 200 000 requests (one
// requests.parquet): the whole of Analyze, both passes; it reports the
// wall and CPU time per request.
func BenchmarkAnalyze(b *testing.B) {
	dir := writeScanRecord(b, false)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchcpu.Process()
	var requests int64
	for i := 0; i < b.N; i++ {
		sum, err := Analyze(dir, Options{Complete: true})
		if err != nil {
			b.Fatal(err)
		}
		requests += sum.Run.Attempts
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(requests), "ns/request")
	b.ReportMetric(float64((benchcpu.Process()-cpu).Nanoseconds())/float64(requests), "cpu-ns/request")
}

// TestScanOpensFewFiles: a killed run may leave thousands of segments;
// listing and scanning them holds a file open per decoding goroutine, not
// one per segment.
func TestScanOpensFewFiles(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd")
	}
	defer func(f func() int) { scanWorkers = f }(scanWorkers)
	scanWorkers = func() int { return 2 }
	dir := t.TempDir()
	for seq := 0; seq < 60; seq++ {
		writeSegment(t, dir, seq, []record.Request{{StartS: float64(seq), LatencyS: 0.01, Outcome: record.OK}})
	}
	openFiles := func() int {
		fds, _ := os.ReadDir("/proc/self/fd")
		return len(fds)
	}
	before, most := openFiles(), 0
	var mu sync.Mutex
	var d runData
	s := windowsScan(&d, 5, 2)
	local := s.local
	s.local = func(w int, b *requestBatch) error {
		n := openFiles()
		mu.Lock()
		most = max(most, n)
		mu.Unlock()
		return local(w, b)
	}
	if err := s.run(dir); err != nil {
		t.Fatal(err)
	}
	if most > before+2+4 || openFiles() != before || d.attempts != 60 {
		t.Fatalf("%d files open before the scan, at most %d during, %d after, %d requests", before, most, openFiles(), d.attempts)
	}
}
