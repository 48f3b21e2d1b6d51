package analysis

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/faultbench/faultbench/internal/record"
)

// writeGeneratorRun writes a 60 s record at 10/s, every attempt ok in 10 ms
// and sent 1 ms late, except: the generator refused the 10 arrivals of
// [30 s, 35 s); it sent every attempt of [45 s, 50 s) half a second late;
// and the last 3 attempts were cut short. With parquet it also writes the
// recorder's files (requests.parquet, windows.csv), else requests.csv.
func writeGeneratorRun(t *testing.T, parquet bool) string {
	t.Helper()
	dir := t.TempDir()
	var reqs []record.Request
	for i := range 600 {
		start := float64(i) / 10
		r := record.Request{StartS: start, LatencyS: 0.01, SendLagS: 0.001, Outcome: record.OK, Node: 1 + i%2, Status: 200, Target: "/"}
		switch {
		case start >= 30 && start < 35 && i%5 == 0:
			r.Refused, r.Outcome, r.LatencyS, r.SendLagS, r.Status = record.RefusedMaxInFlight, record.ConnError, 0, 0, 0
		case start >= 45 && start < 50:
			r.SendLagS, r.LatencyS = 0.5, 0.51
		case i >= 597:
			r.CutShort, r.Outcome, r.LatencyS, r.Status = true, record.ConnError, 3, 0
		}
		reqs = append(reqs, r)
	}
	if parquet {
		rec, err := record.NewRecorder(dir, 5, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reqs {
			rec.Record(r)
		}
		wins, series, err := rec.Close(60)
		if err != nil {
			t.Fatal(err)
		}
		if err := record.WriteWindows(filepath.Join(dir, record.WindowsFile), wins, series); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	f, err := os.Create(filepath.Join(dir, record.RequestsCSV))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := record.NewCSVWriter(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		w.Write(r)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The generator's refusals, cut-short attempts and lag are counted apart
// and never charged to the service: its outcomes, latency and goodput are
// those of the attempts it was sent, and the windows where the generator
// misbehaved are flagged and kept out of the baseline.
func TestGeneratorAccountedApart(t *testing.T) {
	for _, form := range []string{"csv", "parquet"} {
		t.Run(form, func(t *testing.T) {
			res, err := AnalyzeDetail(writeGeneratorRun(t, form == "parquet"), Options{Complete: false})
			if err != nil {
				t.Fatal(err)
			}
			m := res.Summary.Overall
			if m.Arrivals != 600 || m.GenRefused != 2*5 || m.GenRefusedBy["max_in_flight"] != 10 || m.CutShort != 3 || m.Attempts != 587 {
				t.Errorf("arrivals %d, refused %d (%v), cut short %d, attempts %d; want 600, 10, 3, 587",
					m.Arrivals, m.GenRefused, m.GenRefusedBy, m.CutShort, m.Attempts)
			}
			if m.Outcomes["conn_error"] != 0 || m.Outcomes["ok"] != 587 {
				t.Errorf("outcomes %v: the generator's rows were charged to the service", m.Outcomes)
			}
			if float64(m.Goodput) != 1 || float64(m.Yield) != 1 {
				t.Errorf("goodput %v, yield %v; want 1: every attempt sent was answered", m.Goodput, m.Yield)
			}
			if math.Abs(float64(m.SendLagMaxS)-0.5) > 1e-9 || float64(m.SendLagP99S) < 0.49 {
				t.Errorf("send lag p99 %v max %v; want the late window's 0.5 s", m.SendLagP99S, m.SendLagMaxS)
			}
			if m.LatencyMaxS > 0.52 {
				t.Errorf("latency max %v: a cut-short attempt's waiting time entered the service's latency", m.LatencyMaxS)
			}
			if m.InvalidWindows != 3 {
				t.Errorf("%d invalid windows, want 3 (refusals, lag, cut short)", m.InvalidWindows)
			}
			for i, w := range res.Windows {
				wantInvalid := i == 6 || i == 9 || i == 11
				if w.Valid == wantInvalid {
					t.Errorf("window %d valid=%v, want %v: %+v", i, w.Valid, !wantInvalid, w)
				}
				var sum int64
				for _, n := range w.Outcomes {
					sum += n
				}
				if w.Offered != 50 || sum+w.GenRefused+w.CutShort != w.Offered {
					t.Errorf("window %d: offered %d (want 50) != %d outcomes + %d refused + %d cut short", i, w.Offered, sum, w.GenRefused, w.CutShort)
				}
			}
			if b := res.Summary.Baseline; b == nil || b.Windows > 12-3 {
				t.Errorf("baseline %+v: invalid windows must not enter the band", b)
			}
		})
	}
}
