package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/record"
)

// A run whose generator refused arrivals in one window: the report shows
// that window hatched as not a valid measurement, the refused arrivals as
// the generator's (not as the service's conn_error), and counts them in
// the metrics tables.
func TestReportShowsTheGeneratorApart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "refusing")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, record.RequestsCSV))
	if err != nil {
		t.Fatal(err)
	}
	w, err := record.NewCSVWriter(f)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 400 { // 40 s at 10/s
		r := record.Request{StartS: float64(i) / 10, LatencyS: 0.01, SendLagS: 0.001, Outcome: record.OK, Node: 1, Status: 200, Target: "/"}
		if r.StartS >= 20 && r.StartS < 25 && i%2 == 0 {
			r.Refused, r.Outcome, r.LatencyS, r.SendLagS, r.Status = record.RefusedMaxInFlight, record.ConnError, 0, 0, 0
		}
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := Write([]string{dir}, ""); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, record.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	for _, want := range []string{
		"window not a valid measurement (hatched)",
		"refused or cut short by the generator",
		"Grey hatched windows are not a valid measurement of the service",
		"<tr><td>generator: refused (not sent)</td><td>25</td>",
		"<tr><td>conn_error</td><td>0</td>",
		"<tr><td>windows not a valid measurement</td><td>1</td>",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
